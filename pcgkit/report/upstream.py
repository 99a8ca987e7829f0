"""fixtures/upstream.toml as typed values: the projects, known issues/PRs, piecewise switches and
workaround costs the report and the issue drafts quote. `load_upstream` reads; everything else is pure.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import tomllib

from pcgkit import resources
from pcgkit.errors import UsageError
from pcgkit.sglang import facts as sglang_facts
from pcgkit.sglang.facts import SwitchRow

UPSTREAM_SCHEMA = "pcgkit.upstream/1"
UPSTREAM_FILE = "upstream.toml"
PROJECT_IDS = ("sglang", "flashinfer", "pytorch")
LINK_KINDS = ("issue", "pr", "doc")
LINK_STATES = ("open", "closed", "merged", "unknown")


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
    project: str
    kind: str
    number: int
    url: str
    title: str
    state: str
    fixed_in: str  # first release containing the change; "" when no release has it
    cases: tuple[str, ...]
    note: str = ""
    id: str = ""  # what [[fixed_in]] / [[dead_end]] / [piecewise_off] refer to (triage reads those)
    says: str = ""  # one line, as the thread states it

    @property
    def ref(self) -> str:
        """'flashinfer#3081', the way maintainers cite each other."""
        return f"{self.project}#{self.number}" if self.number else (self.id or self.title)


@dataclasses.dataclass(frozen=True)
class Workaround:
    project: str
    what: str
    cost: str
    url: str
    cases: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Upstream:
    projects: tuple[Project, ...]
    links: tuple[Link, ...]
    # Not from upstream.toml: derived from each release's own parser (pcgkit.sglang.facts.switch_rows)
    switches: tuple[SwitchRow, ...]
    workarounds: tuple[Workaround, ...]

    def project(self, project_id: str) -> Project | None:
        return next((p for p in self.projects if p.id == project_id), None)

    def links_for(self, project_id: str) -> tuple[Link, ...]:
        return tuple(link for link in self.links if link.project == project_id)

    def links_for_case(self, case_id: str) -> tuple[Link, ...]:
        return tuple(link for link in self.links if case_id in link.cases)

    def workarounds_for(self, project_id: str) -> tuple[Workaround, ...]:
        return tuple(w for w in self.workarounds if w.project == project_id)



EMPTY = Upstream((), (), (), ())


def _typed(cls, row: dict, where: str):
    names = {f.name for f in dataclasses.fields(cls)}
    required = {f.name for f in dataclasses.fields(cls)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    missing, unknown = required - set(row), set(row) - names
    if missing or unknown:
        raise ValueError(f"{where}: missing {sorted(missing)}, unknown {sorted(unknown)}")
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in row.items()})


def parse_upstream(data: dict, source: str = UPSTREAM_FILE, switch_flags: tuple = ()) -> Upstream:
    """Typed upstream facts from the TOML's dict (plus the validated releases' piecewise flags);
    ValueError names the bad entry. Pure."""
    if data.get("schema") != UPSTREAM_SCHEMA:
        raise ValueError(f"{source}: schema {data.get('schema')!r}, expected {UPSTREAM_SCHEMA!r}")
    projects = tuple(_typed(Project, r, f"{source} [[project]] {i}") for i, r in enumerate(data.get("project", ())))
    links = tuple(_typed(Link, r, f"{source} [[link]] {i}") for i, r in enumerate(data.get("link", ())))
    workarounds = tuple(_typed(Workaround, r, f"{source} [[workaround]] {i}")
                        for i, r in enumerate(data.get("workaround", ())))
    for item in (*links, *workarounds):
        if item.project not in PROJECT_IDS:
            raise ValueError(f"{source}: project {item.project!r} is not one of {PROJECT_IDS}")
    for link in links:
        if link.kind not in LINK_KINDS or link.state not in LINK_STATES or not link.url.startswith("https://"):
            raise ValueError(f"{source}: link {link.url!r}: kind {link.kind!r} / state {link.state!r} / url invalid")
    if "switch" in data:  # the per-release switch is read from each release's parser, never typed here
        raise ValueError(f"{source}: [[switch]] is not part of {UPSTREAM_SCHEMA}: the switches come from "
                         f"fixtures/{sglang_facts.VALIDATION_FILE} (pcgkit.sglang.facts.switch_rows)")
    return Upstream(projects, links, tuple(sglang_facts.switch_rows(switch_flags)), workarounds)


def load_upstream(path: Path | None = None) -> Upstream:
    """fixtures/upstream.toml (or `path`); a missing default file gives no facts, a broken one a clear error."""
    target = path or resources.fixture(UPSTREAM_FILE)
    if path is None and not target.is_file():
        return EMPTY
    try:
        return parse_upstream(tomllib.loads(target.read_text()), str(target), sglang_facts.validated_flags())
    except (OSError, tomllib.TOMLDecodeError, ValueError, TypeError) as exc:
        raise UsageError(f"{target}: not a valid upstream facts file: {exc}") from exc
