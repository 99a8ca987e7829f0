"""An import-only stand-in for sglang's CUDA-only kernel package (sgl_kernel), for CPU tracing, and the eager
set-up of an SGLang layer under it (stage, fill_weights).

sglang 0.5.8 imports `sgl_kernel` unconditionally on its quantization import chain (e.g.
sglang/srt/layers/moe/moe_runner/deep_gemm.py: `if not (_is_npu or _is_hip): from sgl_kernel import
silu_and_mul`), and sgl_kernel is a CUDA-only 535 MB wheel the kit never installs on CPU. So that the
import chain a CUDA machine executes can run here, `sgl_kernel_stubbed()` answers `import sgl_kernel`
(and its submodules) with modules whose every attribute is a `CudaOnlyPlaceholder`: importable, and
raising `CudaOnlyStubCalled` the moment anything *calls* it. A quantization method whose set-up or
apply() reaches one is therefore `needs-gpu` with the name it called -- never a made-up result.
Every result produced under the stub says so in its evidence (`sgl_kernel: "stubbed (import only)"`).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import re
import sys
import types
from typing import Any, Callable, Iterator

STUBBED_PACKAGES = ("sgl_kernel",)
STUB_MARKER = "pcgkit CUDA-only stub called"


class CudaOnlyStubCalled(RuntimeError):
    """Code reached a CUDA-only kernel that is stubbed for import on this host."""


class CudaOnlyPlaceholder:
    """Any attribute of a stubbed package: chains attribute access, raises when called."""

    def __init__(self, qualname: str):
        import torch

        self._qualname = qualname
        self.__name__ = self.__qualname__ = qualname.rsplit(".", 1)[-1]
        # Under dynamo a plain `raise` is only an "Observed exception" (gb0088) with no name in it;
        # a compiler-disabled callee is a graph break whose explanation carries the reason. Built
        # here, at import time: torch.compiler.disable itself is not traceable.
        self._message = f"{STUB_MARKER}: {qualname} (CUDA-only, not installed here)"
        self._call = torch.compiler.disable(_raise_stub_called, reason=self._message)

    def __getattr__(self, name: str) -> CudaOnlyPlaceholder:
        if name.startswith("__"):
            raise AttributeError(name)
        return CudaOnlyPlaceholder(f"{self._qualname}.{name}")

    def __call__(self, *args, **kwargs):
        return self._call(self._message)

    def __repr__(self) -> str:
        return f"<pcgkit stub {self._qualname}>"


def _raise_stub_called(message: str):
    raise CudaOnlyStubCalled(message)


class _StubModule(types.ModuleType):
    __getattr__ = CudaOnlyPlaceholder.__getattr__  # reads `_qualname`, which create_module sets


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in STUBBED_PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module._qualname = spec.name
        module.__path__ = []  # a package: submodule imports come back here
        return module

    def exec_module(self, module) -> None:
        return None


_MISSING_OP_RE = re.compile(r"'_OpNamespace' 'sgl_kernel' object has no attribute '(\w+)'|sgl_kernel::(\w+)")


def stub_reached(text: str) -> str | None:
    """The stubbed callable (or unregistered sgl_kernel op) an error text names, or None. Pure."""
    if STUB_MARKER in text:
        return text.split(f"{STUB_MARKER}: ", 1)[1].split(" ", 1)[0]
    if match := _MISSING_OP_RE.search(text):
        return f"torch.ops.sgl_kernel.{match.group(1) or match.group(2)}"
    return None


def _skipping_stubbed_fakes(original):
    """torch.library.register_fake that skips ops of a stubbed package (their C++ schema is not loaded)."""
    def register_fake(op, *args, **kwargs):
        if isinstance(op, str) and op.split("::", 1)[0] in STUBBED_PACKAGES:
            return (lambda fn: fn) if not args or not callable(args[0]) else args[0]
        return original(op, *args, **kwargs)

    return register_fake


@contextlib.contextmanager
def sgl_kernel_stubbed(always: bool = False) -> Iterator[bool]:
    """Answer `import sgl_kernel` with the stand-in, unless the real package is importable (yields which).

    `always`: the stand-in even where a real install exists, for a simulated architecture on a GPU host: the
    real package picks its kernel build from the architecture it is told (sgl_kernel/load_utils.py: sm90/ for
    9.0, sm100/ for anything else), so under a simulated SM120 on the H200 it loads a build for neither the
    simulation nor the GPU (or, trimmed, none: "No module named 'common_ops'", measured 2026-12-02)."""
    real = importlib.util.find_spec(STUBBED_PACKAGES[0]) is not None and STUBBED_PACKAGES[0] not in sys.modules
    if real and not always:
        yield False  # a real install (a GPU host): never shadow it
        return
    from unittest import mock

    import torch

    # sglang registers fake impls for sgl_kernel's ops at import (fp8_kernel.py:
    # `@torch.library.register_fake("sgl_kernel::...")`); without the C++ library the op does not exist
    finder = _StubFinder()
    sys.meta_path.insert(0, finder)
    try:
        with mock.patch.object(torch.library, "register_fake", _skipping_stubbed_fakes(torch.library.register_fake)):
            yield True
    finally:
        sys.meta_path.remove(finder)


# What sglang itself asks before binding a kernel (sglang/srt/utils/common.py: is_cuda() is
# `torch.cuda.is_available() and torch.version.cuda`; get_device_capability(), is_sm90_supported()
# ... read torch.cuda.get_device_capability). The kit's simulation answers FlashInfer's queries and
# torch.cuda.get_device_properties; these two are answered here, only for the sglang sweep, and
# every result lists them (with the simulation's own) in its evidence.
SGLANG_CUDA_QUERIES = ("torch.cuda.is_available", "torch.cuda.get_device_capability")


@contextlib.contextmanager
def sglang_sees_cuda(capability: tuple[int, int]) -> Iterator[tuple[str, ...]]:
    """Inside the block torch reports a CUDA device of `capability` to sglang's checks (yields what was replaced)."""
    from unittest import mock

    import torch

    with mock.patch.object(torch.cuda, "is_available", lambda: True), \
            mock.patch.object(torch.cuda, "get_device_capability", lambda device=None: capability):
        yield SGLANG_CUDA_QUERIES


# --- an SGLang quantized linear layer's eager set-up --------------------------------------------
# Shared by preflight's probe and the workshop's method sweep (lab.sweep.sglang_methods): each step through the
# sweep's one eager set-up guard (pcgkit.sweep.engine.eager_setup), with what counts as a CUDA need on SGLang's
# side: a stubbed sgl_kernel value (Marlin's scalar types), a sglang op with only a CUDA implementation.
CUDA_ONLY_SETUP_MARKERS = ("<pcgkit stub ", "with arguments from the 'CPU' backend")


def stage(name: str, step: Callable[[], Any]) -> Any:
    """Eager set-up of an SGLang layer: a CUDA need (stubbed kernel, refused load, driver) is needs-gpu; anything
    else the spec's (pcgkit.sweep.engine.SetupFailed)."""
    from pcgkit.sweep.engine import eager_setup

    return eager_setup(name, step, CUDA_ONLY_SETUP_MARKERS, (CudaOnlyStubCalled,))


def fill_weights(layer) -> None:
    """Checkpoint stand-in: zeros, scales one (values never matter: the graph never runs)."""
    import torch

    with torch.no_grad():
        for name, param in layer.named_parameters():
            if param.dtype.is_floating_point and "scale" in name:
                param.fill_(1)
            else:
                param.zero_()
