"""Run one case: targets and hardware, simulation, tracing, signatures, the pytest plugin."""
