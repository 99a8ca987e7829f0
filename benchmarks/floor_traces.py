"""The floor for `pcgkit run`: import torch + flashinfer and do the four bare traces, nothing else.

No pytest, no reports, no evidence: just the work that cannot be avoided. Run by
benchmarks/bench_run_vs_floor.py in the same environment as `pcgkit run`.
"""

import os
import warnings
from unittest import mock

import flashinfer
import torch
from flashinfer.jit import cpp_ext
from packaging.version import Version

from pcgkit.harness.simulate import simulated_sm120

os.environ.setdefault("CUDA_HOME", "/usr/local/cuda")
warnings.simplefilter("ignore")


def quantize(x, scale):
    return flashinfer.fp4_quantize(x.view(-1, x.shape[-1]), scale)


def bare_trace(fn, *args):
    torch._dynamo.reset()
    try:
        torch.compile(fn, fullgraph=True, backend="eager")(*args)
    except Exception:
        pass


x = torch.randn(128, 256).to(torch.bfloat16)
scale = torch.ones(1)
answer = Version(torch.version.cuda or "12.8")
with simulated_sm120():
    bare_trace(quantize, x, scale)  # mode 1
    with mock.patch.object(cpp_ext, "get_cuda_version", lambda: answer):
        bare_trace(quantize, x, scale)  # mode 2
    cpp_ext.get_cuda_version()
    bare_trace(quantize, x, scale)  # mode 3
    with mock.patch.object(flashinfer, "fp4_quantize", torch.compiler.disable(flashinfer.fp4_quantize)):
        bare_trace(quantize, x, scale)  # mode 4
