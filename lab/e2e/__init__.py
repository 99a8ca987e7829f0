"""The workshop's side of the end-to-end launch: the offline GPU payload (payload) and what runs with it on the lent
GPU machine (devicerun, `python3 -m lab.e2e.devicerun`)."""
