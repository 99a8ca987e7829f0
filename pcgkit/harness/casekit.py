"""What a case module needs: its context and typed outcomes. A case's `reproduce(ctx)` returns a TraceOutcome or
raises NotApplicable / KitError; the plugin's CaseRunner turns that into a CaseResult. Tiny, so each case module
reads as a plain reproduction script."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
from pathlib import Path
from typing import Any, Iterator

from pcgkit.harness.hardware import Device
from pcgkit.values.targets import TARGETS, Target  # noqa: F401 (re-exported for case modules)


class NotApplicable(Exception):
    """The installed version lacks the code path this mode exercises."""


class KitError(Exception):
    """The kit or the install broke (not a statement about the bug)."""


class MissingDependency(Exception):
    """An optional package the case needs is not installed (a skip with the reason, never a verdict)."""


class CaseTimeout(BaseException):
    """A case ran past its deadline. BaseException so dynamo cannot swallow or wrap it."""


@dataclasses.dataclass
class CaseContext:
    """Handed to reproduce(): where to put tensors, whether to execute, and an evidence bag."""

    target: Target
    device: Device
    torch_device: str  # "cpu" for the simulation, "cuda:N" on real hardware
    evidence: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def simulated(self) -> bool:
        return self.target.simulated

    @property
    def execute(self) -> bool:
        """Run compiled graphs only where kernels can run: on a real GPU."""
        return not self.target.simulated


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise CaseTimeout in the main thread after `seconds` (a hung trace must not hang the run)."""
    if seconds <= 0 or not hasattr(signal, "SIGALRM"):
        yield
        return

    def on_alarm(signum, frame):
        raise CaseTimeout(f"case exceeded its {seconds:g} s deadline")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def cuda_toolkit_root() -> str | None:
    """The CUDA toolkit FlashInfer's JIT would use: $CUDA_HOME, else the root of `nvcc` on PATH."""
    if os.environ.get("CUDA_HOME"):
        return os.environ["CUDA_HOME"]
    nvcc = shutil.which("nvcc")
    return str(Path(nvcc).resolve().parent.parent) if nvcc else None
