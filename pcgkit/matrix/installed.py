"""What an environment really holds: its installed set and the files two distributions both claim, read
from each distribution's RECORD in this process (no interpreter of the environment is started).

A file listed by two RECORDs means one install overwrote the other's copy, so the environment holds
neither as shipped (cuda-python 12.6.2.post1 overwrites cuda-bindings 13.x's cuda/bindings files, and
`import flashinfer` breaks or not by install order): an error cell naming both. Byte-identical copies
(the same hash in every RECORD, e.g. nvidia/__init__.py) change nothing and are not reported.
"""

from __future__ import annotations

import csv
import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence
from email.parser import HeaderParser
from pathlib import Path

from packaging.utils import canonicalize_name


@dataclasses.dataclass(frozen=True)
class InstalledFile:
    path: str  # as RECORD lists it, relative to site-packages
    hash: str  # "sha256=..." ("" when RECORD gives none)


@dataclasses.dataclass(frozen=True)
class InstalledDistribution:
    name: str  # canonical
    version: str
    files: tuple[InstalledFile, ...] = ()

    @property
    def pin(self) -> str:
        return f"{self.name}=={self.version}"


@dataclasses.dataclass(frozen=True)
class Overlap:
    path: str
    owners: tuple[str, ...]  # "name==version", sorted


def site_packages(env_dir: Path) -> list[Path]:
    """The environment's site-packages folders (purelib and platlib may differ: lib vs lib64)."""
    return sorted({p.resolve() for pattern in ("lib/python*/site-packages", "lib64/python*/site-packages")
                   for p in env_dir.glob(pattern)})


def _name_version(metadata: Path) -> tuple[str, str] | None:
    with open(metadata, encoding="utf-8", errors="replace") as fh:
        headers = HeaderParser().parse(fh)
    name, version = (headers.get(key, "").strip() for key in ("Name", "Version"))
    return (name, version) if name and version else None


def read_installed(site_dirs: Sequence[Path]) -> tuple[InstalledDistribution, ...]:
    """Every distribution in these folders, with its RECORD entries, sorted by name. RECORD is read with csv:
    importlib.metadata's `files` stats every listed file (13 s for a torch environment on a loaded machine)."""
    dists = []
    for site in site_dirs:
        for info in sorted(site.glob("*.dist-info")):
            meta = info / "METADATA"
            found = _name_version(meta) if meta.is_file() else None
            if found is None:
                continue  # a half-removed dist-info folder: nothing to say about it
            files: tuple[InstalledFile, ...] = ()
            record = info / "RECORD"
            if record.is_file():
                with open(record, newline="", encoding="utf-8", errors="replace") as fh:
                    files = tuple(InstalledFile(row[0], row[1] if len(row) > 1 else "") for row in csv.reader(fh) if row)
            dists.append(InstalledDistribution(canonicalize_name(found[0]), found[1], files))
    return tuple(sorted(dists, key=lambda d: d.name))


def _counts(path: str) -> bool:
    # each distribution's own metadata folder, and bytecode compiled from a file (an overlap of
    # the source is reported instead)
    parts = path.split("/")
    return not (parts[0].endswith(".dist-info") or "__pycache__" in parts)


def file_overlaps(dists: Iterable[InstalledDistribution]) -> list[Overlap]:
    """Files that two or more distributions list with different (or unknown) contents. Pure."""
    owners: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for dist in dists:
        for f in dist.files:
            if _counts(f.path):
                owners[f.path].append((dist.pin, f.hash))
    overlaps = []
    for path, claims in sorted(owners.items()):
        names = sorted({pin for pin, _ in claims})
        hashes = {h for _, h in claims}
        if len(names) > 1 and not (len(hashes) == 1 and "" not in hashes):
            overlaps.append(Overlap(path, tuple(names)))
    return overlaps


def describe_overlaps(overlaps: Sequence[Overlap], limit: int = 3) -> str:
    """'cuda-bindings==13.5.0 and cuda-python==12.6.2.post1 both install 41 files (cuda/bindings/runtime.pyx, ...)'. Pure."""
    by_owners: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for o in overlaps:
        by_owners[o.owners].append(o.path)
    parts = []
    for owners, paths in sorted(by_owners.items(), key=lambda kv: -len(kv[1])):
        shown = ", ".join(paths[:limit]) + (", ..." if len(paths) > limit else "")
        parts.append(f"{' and '.join(owners)} both install {len(paths)} file{'s' if len(paths) > 1 else ''} ({shown})")
    return "; ".join(parts)


def freeze(dists: Iterable[InstalledDistribution]) -> dict[str, str]:
    """name -> version, as `uv pip freeze` lists them. Pure."""
    return {d.name: d.version for d in dists}
