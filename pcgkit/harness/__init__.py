"""Run one case: hardware, simulation, tracing (the one torch.compile call site), judging against the baseline."""
