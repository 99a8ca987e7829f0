"""Probe: does dynamo trace torch.cuda.get_device_capability on this torch build?

Used to explain a simulated-vs-real difference seen on the H200 (torch 2.11.0+cu130): prints
whether a fullgraph trace of a function calling it succeeds, with CUDA visible or not.
"""

import torch


def uses_capability(x):
    major, _ = torch.cuda.get_device_capability(0)
    return x + major


print("torch", torch.__version__, "cuda available:", torch.cuda.is_available())
try:
    out = torch.compile(uses_capability, fullgraph=True, backend="eager")(torch.ones(2))
    print("traced: OK", out.tolist())
except Exception as exc:  # the answer we are after
    print("traced: FAILED", type(exc).__name__, str(exc).splitlines()[0], "|", str(exc).splitlines()[1][:200])
