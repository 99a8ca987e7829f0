"""fixtures/upstream.toml as typed values, joined with the advice model's evidence: the projects, the upstream
threads (state, title and first release from their dated reads) and the measured workarounds the report and the issue drafts quote.
`load_upstream` reads; everything else is pure.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pcgkit import resources
from pcgkit.advice.values import Evidence, UpstreamRead
from pcgkit.errors import UsageError
from pcgkit.util.tomlfile import tomllib

UPSTREAM_SCHEMA = "pcgkit.upstream/2"
UPSTREAM_FILE = "upstream.toml"
PROJECT_IDS = ("sglang", "flashinfer", "pytorch")
# Keys of pcgkit.upstream/1 whose content was typed by hand; refused with a pointer to where it lives now.
_RETIRED = {"fixed_in": "measured cells (pcgkit.advice.summary.where_fixed)",
            "piecewise_off": "fixtures/sglang_releases.json and fixtures/measurements/piecewise-cost.json",
            "switch": "fixtures/sglang_releases.json (each release's own parser)"}


@dataclasses.dataclass(frozen=True)
class Project:
    id: str
    name: str
    axis: str  # the matrix axis its releases live on
    repo: str
    breaks: str
    cases: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Link:
    """An upstream thread the kit cites: its dated read (`read.url`, `read.title`, `read.ref`...), and how the kit
    relates it to its own cases."""

    id: str
    cases: tuple[str, ...]
    relation: str
    read: UpstreamRead


@dataclasses.dataclass(frozen=True)
class Workaround:
    project: str
    what: str
    cost: str
    cases: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Upstream:
    projects: tuple[Project, ...]
    links: tuple[Link, ...]
    workarounds: tuple[Workaround, ...]
    evidence: Evidence = Evidence()

    def project(self, project_id: str) -> Project | None:
        return next((p for p in self.projects if p.id == project_id), None)

    def links_for(self, project_id: str) -> tuple[Link, ...]:
        return tuple(link for link in self.links if link.read.project == project_id)

    def links_for_case(self, case_id: str) -> tuple[Link, ...]:
        return tuple(link for link in self.links if case_id in link.cases)

    def workarounds_for(self, project_id: str) -> tuple[Workaround, ...]:
        return tuple(w for w in self.workarounds if w.project == project_id)


EMPTY = Upstream((), (), ())


def _typed(cls, row: dict, where: str):
    names = {f.name for f in dataclasses.fields(cls)}
    required = {f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    missing, unknown = required - set(row), set(row) - names
    if missing or unknown:
        raise ValueError(f"{where}: missing {sorted(missing)}, unknown {sorted(unknown)}")
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in row.items()})


def parse_upstream(data: dict, evidence: Evidence, source: str = UPSTREAM_FILE) -> Upstream:
    """Typed upstream facts from the TOML's dict, each link joined with its dated read; ValueError names the
    bad entry. Pure."""
    if data.get("schema") != UPSTREAM_SCHEMA:
        raise ValueError(f"{source}: schema {data.get('schema')!r}, expected {UPSTREAM_SCHEMA!r}")
    for key, where in _RETIRED.items():
        if key in data:
            raise ValueError(f"{source}: [{key}] is not part of {UPSTREAM_SCHEMA}: it comes from {where}")
    projects = tuple(_typed(Project, r, f"{source} [[project]] {i}") for i, r in enumerate(data.get("project", ())))
    reads = {read.id: read for read in evidence.reads}
    links = []
    for i, row in enumerate(data.get("link", ())):
        unknown = set(row) - {"id", "cases", "relation"}
        if unknown or "id" not in row:
            raise ValueError(f"{source} [[link]] {i}: keys id, cases, relation only (got {sorted(row)}); the state, "
                             f"title and url come from its read in fixtures/upstream_reads.json")
        if row["id"] not in reads:
            raise ValueError(f"{source} [[link]] {row['id']!r}: no dated read of it in fixtures/upstream_reads.json")
        links.append(Link(row["id"], tuple(row.get("cases", ())), str(row.get("relation", "")), reads[row["id"]]))
    workarounds = tuple(_typed(Workaround, r, f"{source} [[workaround]] {i}")
                        for i, r in enumerate(data.get("workaround", ())))
    for name in [p.id for p in projects] + [w.project for w in workarounds]:
        if name not in PROJECT_IDS:
            raise ValueError(f"{source}: project {name!r} is not one of {PROJECT_IDS}")
    for w in workarounds:
        if not w.cases:
            raise ValueError(f"{source}: workaround {w.what!r} names no case that measures it")
    return Upstream(projects, tuple(links), workarounds, evidence)


def load_upstream(path: Path | None = None, evidence: Evidence | None = None) -> Upstream:
    """fixtures/upstream.toml (or `path`) joined with the evidence; a missing default file gives no facts,
    a broken one a clear error."""
    from pcgkit.advice import load_evidence

    target = path or resources.fixture(UPSTREAM_FILE)
    if path is None and not target.is_file():
        return EMPTY
    try:
        return parse_upstream(tomllib.loads(target.read_text()), evidence or load_evidence(), str(target))
    except (OSError, tomllib.TOMLDecodeError, ValueError, TypeError) as exc:
        raise UsageError(f"{target}: not a valid upstream facts file: {exc}") from exc
