"""Capture another interpreter's environment (the one that crashed, not the kit's own): the edge, one subprocess.

Shared by `pcgkit env --python` and `pcgkit triage --python`; it lives on this floor so both commands
can use it without importing each other. The capture module runs by name in that interpreter.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pcgkit import resources
from pcgkit.errors import UsageError
from pcgkit.util import proc


def capture_in(python: str, timeout: float = 300.0) -> dict:
    """The capture of another interpreter's environment (the one that crashed, not the kit's own).

    Runs pcgkit.bugreport.envcapture with that interpreter and a PYTHONPATH holding only a link to
    this pcgkit package: the capture's imports are all standard library, so ENV needs nothing of
    the kit, and none of the kit's own environment leaks into what is captured."""
    with tempfile.TemporaryDirectory(prefix="pcgkit-env-") as tmp:
        (Path(tmp) / "pcgkit").symlink_to(resources.package_dir(), target_is_directory=True)
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
        return json.loads(out.read_text())
