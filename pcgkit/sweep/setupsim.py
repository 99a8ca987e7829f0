"""A wrapper's eager set-up (constructor, `plan()`) on a CPU host, simulated where the host can answer: the edge.

Before `run()`, FlashInfer's wrappers (BatchDecode/BatchPrefill, MLA, POD, cascade, block-sparse, ...) do four things
that need a CUDA driver, none on the traced path; each is stood in for, and recorded (the certificate's
`setup_simulated`):
1. a page-locked host buffer (`pin_memory=True`, the planner's staging buffer; page-locking asks the driver): the
   same host allocation left pageable. Only `is_pinned()` differs, and nothing on the traced path asks it.
2. the JIT module (`JitSpec.build_and_load()`): as the unroller's pre-build (lab.sweep.unroll), an unbuilt module
   whose functions are `tvm_ffi` Functions that refuse to run.
3. `torch.cuda.synchronize()` after the planner's non-blocking copies (0.7.x BlockSparse / BatchAttention): returns
   at once; nothing was launched on a device.
4. the host planner (`module.plan(...)`, compiled C++ returning `plan_info`, an `Array<int64>`): in a module built
   here, an empty `tvm_ffi` Array, the real return type. The wrapper only stores it and hands it to the kernel call,
   which refuses to run.
What the simulation cannot answer (a CUDA stream, `torch.cuda.device(...)`, a device allocation) still fails the
set-up, and the row says so (a simulation gap, pcgkit.sweep.classify.SIMULATION_GAP_MARKERS). A loader's
`functools.cache` filled inside the block is cleared on the way out, so no later trace meets a simulated module.
"""

from __future__ import annotations

import contextlib
import re
import sys
from typing import Any, Iterator
from unittest import mock

# The same loader names the classifier reads (pcgkit.sweep.classify), for functions on the stack (lab.sweep.unroll_rules).
LOADER_NAME_RE = re.compile(r"^(?:get|gen)_\w*module\w*$|^build_and_load$|^load_cuda_ops$|^_get_compiled_kernel$"
                            r"|^_get_compiled_\w+$|^cute_dsl_compile\w*$")

PLANNER_NAMES = frozenset({"plan"})  # the module functions a wrapper's plan() calls for its schedule
NOT_BUILT = "was not built on this host"
# A simulated set-up that fails on one of these failed where the host cannot answer (compiled code other than the
# planner, a check that the page-locked buffer is pinned or a buffer is on CUDA): a simulation gap, named so.
# An IndexError on the empty plan_info ("Index out of range. size: 0", tvm_ffi's Array) is the release's Python reading
# the planner's values (0.7.x BatchPOD: `plan_info_d[0]`), which only the compiled planner computes.
SETUP_GAP_MARKERS = (NOT_BUILT, "pinned", "CUDA tensor", "cuda device", "Index out of range. size: 0")
PINNED = "pin_memory: page-locked host buffer allocated pageable (no driver to page-lock with)"
BUILT = "JIT build: {name} (unbuilt module, functions refuse to run)"
SYNCHRONIZED = "torch.cuda.synchronize: returned at once (nothing was launched on a device here)"
PLANNED = "host planner: {name}.plan returned an empty plan_info (compiled planner not run)"


class UnbuiltModule:
    """What a JIT build returns, on a host that builds nothing: every function refuses to run
    (`planner`: its `plan` returns an empty plan_info instead, see the module docstring)."""

    def __init__(self, name: str, planner: list[str] | None = None):
        import tvm_ffi

        def plan(*args):
            if planner is not None:
                planner.append(PLANNED.format(name=name))
            return tvm_ffi.convert([])

        def refuse(*args):
            raise RuntimeError(f"pcgkit: {name} {NOT_BUILT} (simulated pre-build)")

        # Built once here: dynamo inlines __getattr__ when the trace reads a function off the module, so it must
        # only hand back an object (a call in it, e.g. tvm_ffi.convert, would be a graph break of the kit's own).
        self._function = tvm_ffi.convert(refuse)
        self._planner = tvm_ffi.convert(plan) if planner is not None else None

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in PLANNER_NAMES and self._planner is not None:
            return self._planner
        return self._function


@contextlib.contextmanager
def simulated_build(planner: list[str] | None = None) -> Iterator[list[str]]:
    """Inside: a JIT build returns an unbuilt module; yields the names of the modules it stood in for.
    `planner`: modules built here answer `plan` (each call recorded in that list)."""
    from flashinfer.jit import core

    stood_in: list[str] = []

    def build_and_load(spec, *args, **kwargs):
        stood_in.append(getattr(spec, "name", "module"))
        return UnbuiltModule(stood_in[-1], planner)

    with mock.patch.object(core.JitSpec, "build_and_load", build_and_load):
        yield stood_in


def _pageable_mode(record: list[str]):
    import torch
    from torch.overrides import TorchFunctionMode

    class PinnedAsPageable(TorchFunctionMode):
        """`pin_memory=True` allocations and `Tensor.pin_memory()` as pageable host memory (recorded)."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if kwargs.get("pin_memory"):
                record.append(f"{PINNED}: {getattr(func, '__name__', func)}")
                kwargs = {**kwargs, "pin_memory": False}
            elif func is torch.Tensor.pin_memory:
                record.append(f"{PINNED}: Tensor.pin_memory")
                return args[0]
            return func(*args, **kwargs)

    return PinnedAsPageable()


def _loader_caches() -> dict[Any, int]:
    """Every functools-cached FlashInfer JIT loader imported now -> its cache size."""
    caches: dict[Any, int] = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("flashinfer") or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if LOADER_NAME_RE.match(attr) and hasattr(value, "cache_info") and hasattr(value, "cache_clear"):
                caches[value] = value.cache_info().currsize
    return caches


@contextlib.contextmanager
def simulated_setup() -> Iterator[list[str]]:
    """Run a wrapper's constructor / plan() inside: yields the list the stand-ins that answered are added to."""
    import torch

    record: list[str] = []
    before = _loader_caches()
    planner: list[str] = []
    built: list[str] = []
    try:
        synchronize = mock.patch.object(torch.cuda, "synchronize", lambda device=None: record.append(SYNCHRONIZED))
        with simulated_build(planner) as built, _pageable_mode(record), synchronize:
            yield record
    finally:
        record.extend(BUILT.format(name=name) for name in built)
        record.extend(planner)
        for loader, size in _loader_caches().items():
            if size > before.get(loader, 0):
                loader.cache_clear()
