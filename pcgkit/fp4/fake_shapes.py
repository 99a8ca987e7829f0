"""The custom-op fake against the installed FlashInfer's own fp4_quantize wrapper, on any machine.

`flashinfer.fp4_quantize`'s output shapes and dtypes are decided in Python: the wrapper and its inner
`fp4_quantize_sm100` allocate `out_val` / `out_sf` with torch.empty, then call the JIT-built module to fill them.
So the fake is checked against each release without a GPU by running that real Python with the hardware queries
answered as SM120 (pcgkit.harness.simulate) and the JIT-built module replaced by a recording one whose kernel calls
compute nothing and record their arguments (read by pcgkit.fp4.argaudit). Only shapes/dtypes mean anything here,
and the check is labelled simulated wherever it is reported; on a real GPU the fix case compares the real op.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import inspect
import sys
import textwrap
from collections.abc import Mapping
from types import FrameType
from typing import Any, Iterator
from unittest import mock

LABEL = "simulated kernel (shapes from FlashInfer's own Python wrapper; kernel calls record, compute nothing)"


@dataclasses.dataclass(frozen=True)
class KernelCall:
    """One call that reached the kernel boundary: what FlashInfer's Python passed to the JIT-built module."""

    kernel: str  # "<spec>.<function>", e.g. "fp4_quantization_120f.fp4_quantize"
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    arg_names: tuple[str, ...]  # each positional slot named by the caller's expression at the call site
    raised: str | None = None  # a real kernel's refusal ("TypeError: ..."); a recording kernel never raises


def call_site_argument_names(frame: FrameType | None, function: str, count: int) -> tuple[str, ...]:
    """Names of the `count` positional arguments of the call `....function(...)` that `frame` is making,
    read from the caller's own source with ast (a plain name is its name; anything else is unparsed).
    Slots it cannot name are '#<index>'."""
    fallback = tuple(f"#{i}" for i in range(count))
    if frame is None:
        return fallback
    try:
        source = textwrap.dedent(inspect.getsource(frame.f_code))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return fallback
    line = frame.f_lineno - frame.f_code.co_firstlineno + 1
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == function
                and node.lineno <= line <= (node.end_lineno or node.lineno) and len(node.args) == count):
            return tuple(a.id if isinstance(a, ast.Name) else ast.unparse(a) for a in node.args)
    return fallback


class RecordingKernelModule:
    """Stands in for a JIT-built FlashInfer module: any kernel attribute is a call that computes nothing
    and records what it was given (pcgkit.fp4.argaudit compares those records between calls)."""

    def __init__(self, spec_name: str, log: list[KernelCall] | None = None):
        self.spec_name = spec_name
        self.kernels_called: list[str] = []
        self.log: list[KernelCall] = log if log is not None else []

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)

        def recording_kernel(*args, **kwargs):
            self.kernels_called.append(name)
            names = call_site_argument_names(sys._getframe(1), name, len(args))
            self.log.append(KernelCall(f"{self.spec_name}.{name}", args, dict(kwargs), names))

        return recording_kernel


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


def flashinfer_python_fp4_quantize():
    """The installed FlashInfer's own Python fp4_quantize (the wrapper every op and fix ends in)."""
    return _fp4_quantization_module().fp4_quantize


@contextlib.contextmanager
def recording_jit_modules(log: list[KernelCall] | None = None) -> Iterator[list[RecordingKernelModule]]:
    """Inside the block, every JitSpec.build_and_load returns a RecordingKernelModule (none is built);
    every kernel call lands in `log` when one is given."""
    from flashinfer.jit import core

    built: list[RecordingKernelModule] = []

    def build_and_load(spec, *args, **kwargs):
        module = RecordingKernelModule(getattr(spec, "name", "?"), log)
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
    from pcgkit.fp4.custom_op import SHAPE_GRID, fp4_quantize_fake, shape_mismatches
    from pcgkit.harness.simulate import simulated_sm120

    with simulated_sm120(), recording_jit_modules() as built:
        mismatches = shape_mismatches(flashinfer_python_fp4_quantize(), fake or fp4_quantize_fake, "cpu", "FlashInfer")
    called = tuple(sorted({name for module in built for name in module.kernels_called}))
    return ShapeCheck(checked=2 * len(SHAPE_GRID), mismatches=tuple(mismatches), kernels_called=called)
