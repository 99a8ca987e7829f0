"""The one lock an environment is built under: `.NAME.lock` beside the environment's folder.

Two kit processes sharing a cache (a bisect beside a matrix, two test workers, two preflights, two certificate
re-makes) must not install into one environment at once: the second waits, then finds the first's completion
stamp and reuses it. `pcgkit cache remove` deletes the sidecar with the environment."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def build_lock(env_dir: Path) -> Iterator[None]:
    """Hold the exclusive build lock of `env_dir` (its parent is created)."""
    env_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(env_dir.parent / f".{env_dir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
