"""Simulated SM120: answer the *hardware queries* on the traced path as an SM120 GPU would.

Only queries are replaced (compute capability, PDL support, the JIT arch check, torch's
device-capability query); every line of FlashInfer and SGLang code under test is the real one.
Patches live exactly as long as the `with` block, so cases and xdist workers never leak into
each other. On a real GPU nothing here is used.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Iterator
from unittest import mock

from pcgkit.hardware import SIMULATED_SM120_CAPABILITY
from pcgkit.patching import patched_everywhere

# (defining module, attribute): the hardware queries FlashInfer consults on the fp4_quantize path.
FLASHINFER_QUERIES: tuple[tuple[str, str], ...] = (
    ("flashinfer.utils", "get_compute_capability"),
    ("flashinfer.utils", "device_support_pdl"),
    ("flashinfer.jit.core", "check_cuda_arch"),
)


@dataclasses.dataclass(frozen=True)
class Simulation:
    capability: tuple[int, int]
    replaced: tuple[str, ...]  # "module.attr" of every binding that was answered


def _answers(capability: tuple[int, int]) -> dict[str, object]:
    def get_compute_capability(device=None):
        return capability

    def device_support_pdl(device=None):
        return capability[0] >= 9  # FlashInfer's own rule, applied to the simulated part

    def check_cuda_arch():
        return None  # an SM120 part passes FlashInfer's "sm75 or higher" check

    return {
        "get_compute_capability": get_compute_capability,
        "device_support_pdl": device_support_pdl,
        "check_cuda_arch": check_cuda_arch,
    }


@contextlib.contextmanager
def simulated_sm120(capability: tuple[int, int] = SIMULATED_SM120_CAPABILITY) -> Iterator[Simulation]:
    """Answer FlashInfer's and torch's hardware queries as an SM120 part would, inside the block."""
    import importlib

    import torch

    answers = _answers(capability)
    replaced: list[str] = []
    with contextlib.ExitStack() as stack:
        for module_name, attr in FLASHINFER_QUERIES:
            try:
                original = getattr(importlib.import_module(module_name), attr, None)
            except ModuleNotFoundError:
                original = None
            if original is None:
                continue  # this FlashInfer version has no such query
            replaced += stack.enter_context(patched_everywhere(original, answers[attr], "flashinfer"))
        stack.enter_context(mock.patch.object(torch.cuda, "get_device_capability", answers["get_compute_capability"]))
        replaced.append("torch.cuda.get_device_capability")
        yield Simulation(capability, tuple(sorted(replaced)))
