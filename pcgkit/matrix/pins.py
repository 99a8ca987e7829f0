"""What each SGLang release declares (its Requires-Dist), cached in fixtures/ so planning is offline. Pure.

The workshop rewrites the file (`bin/pcgkit lab pins`, lab.matrix.pins_refresh).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from pcgkit import resources
from pcgkit.util import atomic
from pcgkit.util.ranges import version_key
from pcgkit.util.tomlfile import tomllib

PINS_SCHEMA = "pcgkit.sglang-requires/1"
DEFAULT_PINS_FILE = resources.fixture("sglang_requires.toml")


@dataclasses.dataclass(frozen=True)
class ExactPin:
    name: str  # canonical: "flashinfer-python"
    version: str
    extras: tuple[str, ...] = ()

    def requirement(self) -> str:
        extras = f"[{','.join(self.extras)}]" if self.extras else ""
        return f"{self.name}{extras}=={self.version}"


@dataclasses.dataclass(frozen=True)
class SglangRelease:
    version: str
    requires: tuple[str, ...]  # the cached Requires-Dist lines (subject distributions only)
    piecewise_cuda_graph: bool

    @property
    def pins(self) -> dict[str, ExactPin]:
        return parse_subject_pins(self.requires)


@dataclasses.dataclass(frozen=True)
class PinsIndex:
    releases: tuple[SglangRelease, ...]  # oldest first
    known_versions: dict[str, tuple[str, ...]]  # distribution -> releases on PyPI, oldest first
    refreshed: str = ""

    def release(self, version: str) -> SglangRelease | None:
        return next((r for r in self.releases if r.version == version), None)

    def first_piecewise(self) -> SglangRelease | None:
        return next((r for r in self.releases if r.piecewise_cuda_graph), None)


def parse_subject_pins(lines: Iterable[str]) -> dict[str, ExactPin]:
    """Exact (==) pins among unconditional requirement lines; lines behind a marker (extras) are ignored."""
    pins: dict[str, ExactPin] = {}
    for line in lines:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.marker is not None and "extra" in str(req.marker):
            continue
        specs = list(req.specifier)
        if len(specs) == 1 and specs[0].operator == "==" and "*" not in specs[0].version:
            name = canonicalize_name(req.name)
            pins[name] = ExactPin(name, specs[0].version, tuple(sorted(req.extras)))
    return pins


def load_pins(path: Path = DEFAULT_PINS_FILE) -> PinsIndex:
    data = tomllib.loads(atomic.read_user_text(path, "--pins"))  # bounded, never a device
    if data.get("schema") != PINS_SCHEMA:
        raise ValueError(f"{path}: schema {data.get('schema')!r}, expected {PINS_SCHEMA!r}")
    releases = [
        SglangRelease(r["version"], tuple(r.get("requires", ())), bool(r.get("piecewise_cuda_graph")))
        for r in data.get("release", ())
    ]
    known = {k: tuple(sorted(v, key=version_key)) for k, v in data.get("known_versions", {}).items()}
    return PinsIndex(tuple(sorted(releases, key=lambda r: version_key(r.version))), known, data.get("refreshed", ""))
