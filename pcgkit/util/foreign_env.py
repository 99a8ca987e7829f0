"""Capture another interpreter's environment (the one that crashed, not the kit's own): the edge, one subprocess.

Shared by `pcgkit env --python`, `pcgkit triage --python` and preflight's probe (kit_on_path); it lives on this
floor so the commands use it without importing each other. The capture module runs by name in that interpreter.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pcgkit import resources
from pcgkit.errors import UsageError
from pcgkit.util import atomic, proc, untrusted


@contextlib.contextmanager
def kit_on_path(prefix: str) -> Iterator[str]:
    """A temp folder holding only a link to this kit's package, for another interpreter's PYTHONPATH: it runs the
    kit's modules by name, and nothing else of the kit's own environment leaks in."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        (Path(tmp) / "pcgkit").symlink_to(resources.package_dir(), target_is_directory=True)
        yield tmp


def capture_in(python: str, timeout: float = 300.0) -> dict:
    """Runs pcgkit.bugreport.envcapture with `python` and only kit_on_path() on PYTHONPATH: the capture's imports
    are all standard library, so ENV needs nothing of the kit installed."""
    with kit_on_path("pcgkit-env-") as tmp:
        out = Path(tmp) / "capture.json"
        env = {**os.environ, "PYTHONPATH": tmp, "PYTHONNOUSERSITE": "1"}
        try:
            done = proc.run([python, "-m", "pcgkit.bugreport.envcapture", str(out)], env=env, timeout=timeout, echo=False,
                            progress=f"capturing {python}'s environment")
        except OSError as exc:
            raise UsageError(f"--python {python}: cannot run it ({exc.strerror or exc})") from exc
        if not done.ok or not out.exists():
            last = (done.output_tail.strip().splitlines() or ["no output"])[-1]
            raise UsageError(f"--python {python}: the capture failed ({done.describe_failure()}): {last[:200]}")
        try:
            data = atomic.parse_json(atomic.read_user_bytes(out, "the capture"), f"--python {python}: its capture")
            return checked_capture(data, f"--python {python}: its capture")
        except ValueError as exc:  # UntrustedValueError too
            raise UsageError(str(exc)) from None


# The sections of a pcgkit.env capture that are objects, and the two that map names to strings.
CAPTURE_SECTIONS = ("python", "packages", "torch", "flashinfer", "cuda_toolkit", "devices", "container", "env_vars",
                    "torch_collect_env")


def checked_capture(data: object, what: str) -> dict:
    """A capture another interpreter wrote, typed before any printer reads it (UntrustedValueError naming the
    field): a wrong-typed `packages` or `devices` is one line, never an AttributeError in render_text. Pure."""
    if not isinstance(data, dict):
        raise untrusted.UntrustedValueError(f"{what}: expected a JSON object, got {type(data).__name__}")
    for section in CAPTURE_SECTIONS:
        untrusted.mapping(data, section, what)
    untrusted.str_map(data.get("packages"), f"{what}.packages")
    untrusted.str_map(data.get("env_vars"), f"{what}.env_vars")
    gpus = (data.get("devices") or {}).get("gpus") or []
    if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus):
        raise untrusted.UntrustedValueError(f"{what}.devices.gpus: expected a list of objects")
    return data
