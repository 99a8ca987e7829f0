"""No real kernel may load or run while the sweep traces on CPU. How that is guaranteed, layer by layer:

1. **The graph never runs.** Traces go through pcgkit.harness.tracing with execute=False: the backend returns a
   function that raises instead of running the finished graph.
2. **Nothing can be built or loaded.** Inside `no_kernels()` an audit hook (armed only inside the block) raises
   KernelLoadRefused on every subprocess start (nvcc, ninja: a JIT build), on `ctypes.dlopen` asked for by
   FlashInfer/tvm_ffi code or of a flashinfer library (torch's own NVML probe stays allowed) and on `open()` of a
   .so/.cubin/.fatbin/.ptx file; the loaders that dlopen from C++ without an audit event (UNAUDITED_LOADERS) raise
   the same. Each refusal keeps the Python stack that attempted it: one through FakeTensor dispatch is the evidence
   for "FakeTensor reaches a kernel".
3. **Inputs live on the CPU** (pcgkit.sweep.inputs), and this machine has no CUDA driver: even an already-loaded
   CUDA kernel reached eagerly would fail its device check.

Dynamo traces symbolically: the only Python that really runs during a trace is what it folds to a constant and the
fake/meta kernels of registered ops; layer 2 stops those. Eager set-up (a wrapper's constructor, plan()) runs inside
the block too, its JIT build simulated (pcgkit.sweep.setupsim).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import traceback
from typing import Callable, Iterator
from unittest import mock

REFUSED_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork")
# ctypes.dlopen is refused when the library under test asks for it (torch's own NVML probe for
# dynamo's metrics is not a kernel and must keep working).
LIBRARY_MARKERS = ("/flashinfer/", "/tvm_ffi/", "flashinfer")
KERNEL_FILE_SUFFIXES = (".so", ".cubin", ".fatbin", ".ptx")
# (module, attribute): loaders that dlopen without an audit event.
UNAUDITED_LOADERS: tuple[tuple[str, str], ...] = (
    ("tvm_ffi", "load_module"),
    ("tvm_ffi.module", "load_module"),
    ("torch.utils.cpp_extension", "load"),
    # A cubin download is a kernel load by network (0.6.x+ gemm/attention paths; it retries for ~40 s
    # before failing on a host without the artifactory): refused at once.
    ("flashinfer.jit.cubin_loader", "download_file"),
)
FAKE_DISPATCH_MARKERS = ("torch/_subclasses/fake_tensor.py", "torch/_subclasses/fake_impls.py", "torch/_library/")


class KernelLoadRefused(RuntimeError):
    """A kernel build, load or launch was attempted while the sweep held the guard."""


@dataclasses.dataclass(frozen=True)
class Refusal:
    event: str  # audit event or "module.attr" of the loader
    detail: str  # the command, library or file
    stack: tuple[str, ...]  # "file:line:function", outermost first

    @property
    def in_fake_dispatch(self) -> bool:
        return any(marker in frame for frame in self.stack for marker in FAKE_DISPATCH_MARKERS)


@dataclasses.dataclass
class _GuardState:
    armed: int = 0
    allowed: list[Callable[[str, tuple], bool]] = dataclasses.field(default_factory=list)  # see `allowing`
    refusals: list[Refusal] = dataclasses.field(default_factory=list)
    installed: bool = False


_STATE = _GuardState()


def _refuse(event: str, detail: str) -> None:
    stack = tuple(f"{f.filename}:{f.lineno}:{f.name}" for f in traceback.extract_stack()[:-2])
    refusal = Refusal(event, detail[:200], stack)
    _STATE.refusals.append(refusal)
    raise KernelLoadRefused(f"pcgkit sweep guard refused {event}: {detail[:200]}")


def _audit(event: str, args: tuple) -> None:
    if not _STATE.armed or any(allows(event, args) for allows in _STATE.allowed):
        return
    if event in REFUSED_EVENTS:
        _refuse(event, " ".join(str(a) for a in args[:2]))
    elif event == "ctypes.dlopen":
        name = str(args[0]) if args else ""
        if "flashinfer" in name or any(m in f.filename for f in traceback.extract_stack() for m in LIBRARY_MARKERS[:2]):
            _refuse(event, name)
    elif event == "open" and args and isinstance(args[0], (str, bytes)):
        path = args[0].decode() if isinstance(args[0], bytes) else args[0]
        if path.endswith(KERNEL_FILE_SUFFIXES):
            _refuse("open", path)


@contextlib.contextmanager
def allowing(allows: Callable[[str, tuple], bool]) -> Iterator[None]:
    """Inside the block, an audit event that `allows(event, args)` accepts is let through: the caller's question to a
    tool, never a kernel load (lab.sweep.unroll: exactly `<tool> --version`)."""
    _STATE.allowed.append(allows)
    try:
        yield
    finally:
        _STATE.allowed.remove(allows)


def _refusing_loader(name: str):
    def refuse(*args, **kwargs):
        _refuse(name, str(args[0]) if args else "")

    return refuse


@contextlib.contextmanager
def no_kernels() -> Iterator[list[Refusal]]:
    """Refuse every kernel build/load inside the block; yields the list the refusals are added to."""
    import importlib

    from pcgkit.util.patching import patched_everywhere

    if not _STATE.installed:  # audit hooks cannot be removed: install once, arm per block
        sys.addaudithook(_audit)
        _STATE.installed = True
    refusals: list[Refusal] = []
    with contextlib.ExitStack() as stack:
        for module_name, attr in UNAUDITED_LOADERS:
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
            original = getattr(module, attr, None)
            if original is None:
                continue
            replacement = _refusing_loader(f"{module_name}.{attr}")
            stack.enter_context(mock.patch.object(module, attr, replacement))
            stack.enter_context(patched_everywhere(original, replacement, "flashinfer"))
        start = len(_STATE.refusals)
        _STATE.armed += 1
        try:
            yield refusals
        finally:
            _STATE.armed -= 1
            refusals.extend(_STATE.refusals[start:])
            del _STATE.refusals[start:]
