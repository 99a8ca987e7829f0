"""How much disk a folder takes, as `du` counts it: allocated blocks, each inode once (a venv hardlinked from
uv's cache shares those blocks with the cache, so removing it frees less; `shared` says how much of it is
linked from elsewhere). Reads the filesystem; never follows symlinks.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

# What one environment with torch's CUDA build takes, as du counted it on 2026-12-05: the fi-0.6.3 matrix cell 7.2 GB,
# sglang 0.5.12's preflight environment 6.8 GiB (torch and its NVIDIA libraries are most of it). Said before a build.
TYPICAL_STACK_ENV_GB = 7


@dataclasses.dataclass(frozen=True)
class Usage:
    bytes: int  # allocated, each inode counted once
    shared: int  # of those, bytes in files with more than one link (hardlinked from a cache or another env)
    files: int


def usage(folder: Path) -> Usage:
    """Disk usage of `folder` (Usage(0, 0, 0) when it is absent); unreadable entries are skipped, not fatal."""
    seen: set[tuple[int, int]] = set()
    total = shared = files = 0
    for top, dirs, names in os.walk(folder, onerror=lambda _exc: None):
        for name, is_file in [*((d, False) for d in dirs), *((n, True) for n in names)]:
            try:
                st = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            size = st.st_blocks * 512
            total += size
            if is_file:
                files += 1
                shared += size if st.st_nlink > 1 else 0
    return Usage(total, shared, files)


def human(n: int) -> str:
    """1536 -> '1.5 KiB'; binary units as du -h prints them. Pure."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")
