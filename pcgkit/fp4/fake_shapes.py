"""The custom-op fake against the installed FlashInfer's own fp4_quantize wrapper, on any machine.

Output shapes and dtypes of `flashinfer.fp4_quantize` are decided in Python, not in the kernel:
the wrapper and its inner `fp4_quantize_sm100` allocate `out_val` / `out_sf` with torch.empty and
then call the JIT-built module's `fp4_quantize` to fill them. So the fake can be checked against
each FlashInfer release without a GPU by running that real Python with the hardware queries answered
as SM120 (pcgkit.harness.simulate) and the JIT-built module replaced by an inert one whose kernel calls do
nothing (no nvcc, no CUDA). Only shapes/dtypes mean anything here: the values are never written.
This is a simulated-kernel check and is labelled so wherever it is reported; on a real GPU the fix
case compares the fake with the real op instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from typing import Iterator
from unittest import mock

LABEL = "simulated kernel (shapes from FlashInfer's own Python wrapper; kernel calls inert)"


class InertKernelModule:
    """Stands in for a JIT-built FlashInfer module: any kernel attribute is a call that does nothing."""

    def __init__(self, spec_name: str):
        self.spec_name = spec_name
        self.kernels_called: list[str] = []

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)

        def inert_kernel(*args, **kwargs):
            self.kernels_called.append(name)

        return inert_kernel


@dataclasses.dataclass(frozen=True)
class ShapeCheck:
    checked: int  # (shape, layout) pairs compared
    mismatches: tuple[str, ...]
    kernels_called: tuple[str, ...]  # proof the wrapper reached the (inert) kernel
    label: str = LABEL

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _fp4_quantization_module():
    """The module defining the installed fp4_quantize (moved to flashinfer.quantization in 0.7)."""
    import flashinfer

    return inspect.getmodule(inspect.unwrap(flashinfer.fp4_quantize))


@contextlib.contextmanager
def inert_jit_modules() -> Iterator[list[InertKernelModule]]:
    """Inside the block, every JitSpec.build_and_load returns an InertKernelModule (none is built)."""
    from flashinfer.jit import core

    built: list[InertKernelModule] = []

    def build_and_load(spec, *args, **kwargs):
        module = InertKernelModule(getattr(spec, "name", "?"))
        built.append(module)
        return module

    loader = _fp4_quantization_module().get_fp4_quantization_module
    loader.cache_clear()  # an inert module must never outlive the block in the loader's cache
    try:
        with mock.patch.object(core.JitSpec, "build_and_load", build_and_load):
            yield built
    finally:
        loader.cache_clear()


def check_fake_against_wrapper(fake=None) -> ShapeCheck:
    """A fake (default: pcgkit's fp4_quantize_fake; or a registered op, whose own fake then runs) vs
    the installed wrapper over SHAPE_GRID x both scale layouts, on CPU tensors."""
    import torch

    from pcgkit.fp4.custom_op import SHAPE_GRID, fake_metadata, fp4_quantize_fake, output_metadata
    from pcgkit.harness.simulate import simulated_sm120

    fake = fake or fp4_quantize_fake
    fp4_quantize = _fp4_quantization_module().fp4_quantize
    mismatches = []
    with simulated_sm120(), inert_jit_modules() as built:
        for rows, cols in SHAPE_GRID:
            x = torch.randn(rows, cols, dtype=torch.bfloat16)
            scale = torch.ones(1, dtype=torch.float32)
            for swizzled in (True, False):
                wrapper = output_metadata(fp4_quantize, x, scale, 16, False, swizzled)
                described = fake_metadata(x, scale, swizzled, fake)
                if wrapper != described:
                    mismatches.append(f"({rows},{cols}) swizzled={swizzled}: FlashInfer {wrapper}, fake {described}")
    called = tuple(sorted({name for module in built for name in module.kernels_called}))
    return ShapeCheck(checked=2 * len(SHAPE_GRID), mismatches=tuple(mismatches), kernels_called=called)
