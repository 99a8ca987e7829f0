"""The compatibility report as typed values, from `build_compat` to the writers. Pure.

compat.json is this model serialized (schema pcgkit.compat/2: /1's cells and case columns, with
`attribution` replacing /1's per-axis `ranges`). `from_json` reads /2 and /1 (history written by
older kits); attribution is always recomputed from the cells, never trusted from the file.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from pcgkit import catalog
from pcgkit.report import attribution as attr
from pcgkit.util import untrusted
from pcgkit.util.untrusted import UntrustedValueError, safe_id
from pcgkit.values.axes import AXIS_IDS
from pcgkit.values.verdict import BROKEN, BUG_VERDICTS, LEGEND

COMPAT_SCHEMA = "pcgkit.compat/2"
READABLE_SCHEMAS = ("pcgkit.compat/1", COMPAT_SCHEMA)
FAILURE = catalog.Family.FAILURE.value
FIX = catalog.Family.FIX.value
# One symbol per verdict, for grids (pcgkit.values.verdict.LEGEND; the colours ride along in the dashboard).
SYMBOLS: dict[str, str] = {v.value: legend.symbol for v, legend in LEGEND.items()}


# Machine paths made relative for reports people paste upstream: `/root/.pyenv/versions/3.12.1/lib/python3.12/
# subprocess.py:466:check_output` says the same to a maintainer as `python3.12/subprocess.py:466:check_output`.
# Order matters: the most specific prefix wins (site-packages lives under lib/pythonX.Y).
_PATH_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?:/[^\s:'\"()]*)?/(?:site|dist)-packages/"), ""),  # installed packages: from the package
    (re.compile(r"/tmp/pytest-of-[^/\s]+/pytest-\d+/"), "<tmp>/"),
    (re.compile(r"(?:/[^\s:'\"()]*)?/lib/(python3\.\d+)/"), r"\1/"),  # the standard library
    (re.compile(r"(?:/[^\s:'\"()]*)?/((?:pcgkit|cases|tests)/[\w./-]+\.py)"), r"\1"),  # the kit's own checkout
    (re.compile(r"/(?:home/[^/\s]+|root|Users/[^/\s]+)/"), "~/"),
    (re.compile(r"/tmp/[\w.-]+/"), "<tmp>/"),
)


def relative_paths(text: str) -> str:
    """`text` with home folders, site-packages prefixes, stdlib prefixes and pytest tmp dirs made relative."""
    for pattern, replacement in _PATH_RULES:
        text = pattern.sub(replacement, text)
    return text


@dataclasses.dataclass(frozen=True)
class CaseColumn:
    id: str
    family: str
    title: str
    known_signature: str = ""


@dataclasses.dataclass(frozen=True)
class Entry:
    """One cell x case: the verdict and its evidence (machine paths already made relative)."""

    verdict: str
    signature: str = ""
    reason: str = ""
    graph_break_id: str | None = None
    innermost_frame: str | None = None
    message_head: str = ""
    frames: tuple[str, ...] = ()
    variant: str = ""
    simulated: bool = False
    device: str = ""
    duration_s: float = 0.0
    fix_works: str | None = None  # fix cases only: "yes" / "no" / None (nothing to fix here)

    @property
    def frame_short(self) -> str:
        """'cpp_ext.py:69:get_cuda_version': file name, line, function."""
        if not self.innermost_frame:
            return ""
        file, _, rest = self.innermost_frame.partition(":")
        return f"{file.rsplit('/', 1)[-1]}:{rest}"

    @property
    def failure_point(self) -> str | None:
        """The verdict and where it failed (file:function, lines left out: they move with unrelated edits)."""
        if self.verdict not in BUG_VERDICTS:
            return None
        parts = (self.innermost_frame or "").split(":")
        where = f"{parts[0]}:{parts[-1]}" if len(parts) >= 3 else "no FlashInfer frame"
        return f"{self.verdict} at {where}" if self.verdict in BROKEN else self.verdict

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Entry:
        text = {k: relative_paths(str(data.get(k) or "")) for k in ("signature", "reason", "message_head")}
        frame = data.get("innermost_frame")
        return cls(
            verdict=str(data.get("verdict", "error")), **text,
            graph_break_id=data.get("graph_break_id"),
            innermost_frame=relative_paths(frame) if frame else None,
            frames=tuple(relative_paths(str(f)) for f in data.get("frames") or ()),
            variant=str(data.get("variant", "")), simulated=bool(data.get("simulated")),
            device=str(data.get("device", "")), duration_s=float(data.get("duration_s") or 0.0),
            fix_works=data.get("fix_works"),
        )

    def to_dict(self) -> dict:
        # Not dataclasses.asdict: it deep-copies recursively, and the dashboard calls this 7,500 times.
        out = {name: getattr(self, name) for name in _ENTRY_FIELDS}
        out["frames"] = list(self.frames)
        return out


_ENTRY_FIELDS = tuple(f.name for f in dataclasses.fields(Entry))


@dataclasses.dataclass(frozen=True)
class CellReport:
    id: str
    label: str
    status: str  # "ran" | "error"
    axes: Mapping[str, str | None]  # as planned
    versions: Mapping[str, Any]  # as installed
    entries: Mapping[str, Entry]
    definition_hash: str = ""
    kind: str = ""
    origin: str = ""
    pin_status: str = ""
    pin_note: str = ""
    covers_sglang: tuple[str, ...] = ()
    stage: str | None = None
    reason: str = ""
    log_tail: str = ""
    duration_s: float = 0.0
    from_cache: bool = False
    provenance: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    simulated: bool = False
    device: str = ""
    where: Mapping[str, Any] | None = None  # the machine it ran on (pcgkit.matrix.where), when recorded
    source: Mapping[str, Any] | None = None  # the folder/archive it was read from (`pcgkit report --from`)
    expected: str = ""  # a cannot-run cell: the rule's wording (pcgkit.report.annotations)
    scope: str = "all"  # pcgkit.matrix.cells.SCOPES: a "sglang-level" cell ran only its release's SGLang-level cases
    finished: str = ""  # when the cell's run finished (ISO, its cell.json); "" in a compat.json written before it

    def axis_value(self, axis: str) -> str | None:
        """The installed version on an axis, else the planned one; None when absent (no sglang)."""
        value = self.versions.get(axis) or self.axes.get(axis)
        return str(value) if value else None

    @property
    def is_error(self) -> bool:
        return self.status == "error"

    @property
    def broken(self) -> bool:
        """An error cell, or a cell with an error entry, that is not cannot-run: what makes `report` exit
        non-zero, and what every report counts as "error" (the badge and the exit code agree)."""
        return not self.expected and (self.is_error or any(e.verdict == "error" for e in self.entries.values()))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CellReport:
        fields = {f.name for f in dataclasses.fields(cls)} - {"entries", "covers_sglang", "log_tail", "reason"}
        return cls(
            **untrusted.typed_fields(cls, data, sorted(fields), f"compat cell {str(data.get('id'))[:40]}"),
            entries={case: Entry.from_dict(e) for case, e in (data.get("modes") or {}).items()},
            covers_sglang=tuple(data.get("covers_sglang") or ()),
            log_tail=relative_paths(data.get("log_tail") or ""),
            reason=relative_paths(data.get("reason") or ""),
        )

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "entries"}
        out.update(axes=dict(self.axes), versions=dict(self.versions), provenance=dict(self.provenance),
                   covers_sglang=list(self.covers_sglang), modes={c: e.to_dict() for c, e in self.entries.items()})
        return out


class Change(NamedTuple):
    cell: str
    case: str
    previous: str
    current: str


@dataclasses.dataclass(frozen=True)
class CompatReport:
    created: str
    kit_version: str
    environment: Mapping[str, str]
    cases: tuple[CaseColumn, ...]
    legend: Mapping[str, str]
    cells: tuple[CellReport, ...]
    attribution: Mapping[str, attr.Attribution]  # per case, on the verdict
    failure_points: Mapping[str, attr.Attribution]  # per failure case, on verdict + innermost frame
    sglang_facts: tuple[Mapping[str, Any], ...] = ()
    changes: tuple[Change, ...] = ()
    previous_run: str | None = None
    schema: str = COMPAT_SCHEMA
    # `pcgkit report --from`: results that disagree (simulated vs real, or between machines), the inputs read
    disagreements: tuple[Mapping[str, Any], ...] = ()
    sources: tuple[Mapping[str, Any], ...] = ()
    source_notes: tuple[str, ...] = ()
    sweep: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # pcgkit.report.sweep_section.build_sweep
    # per axis, the releases a stated range may span (pcgkit.matrix.plan.axis_releases); gaps named against them
    releases: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    @property
    def simulated(self) -> bool:
        return any(c.simulated for c in self.cells)

    def case(self, case_id: str) -> CaseColumn | None:
        return next((c for c in self.cases if c.id == case_id), None)


def assemble(created, kit_version, environment, cases, legend, cells, sglang_facts=(), changes=(), previous_run=None,
             releases: Mapping[str, tuple[str, ...]] | None = None):
    """A CompatReport with its attribution derived from the cells: per case, which axis explains its verdicts; per
    failure case, also its failure point. releases: per axis, the releases a range may span (gaps are named
    against them). Pure."""
    known = dict(releases or {})

    def attribute(case_id: str, key) -> attr.Attribution:
        found = attr.attribute(case_id, attr.observations_for(cells, case_id, AXIS_IDS, key), AXIS_IDS)
        return dataclasses.replace(found, releases=known)

    verdicts = {c.id: attribute(c.id, lambda e: e.verdict if e.verdict in BUG_VERDICTS else None) for c in cases}
    points = {c.id: attribute(c.id, lambda e: e.failure_point) for c in cases if c.family == FAILURE}
    return CompatReport(created, kit_version, dict(environment), tuple(cases), dict(legend), tuple(cells), verdicts,
                        points, tuple(sglang_facts), tuple(changes), previous_run,
                        releases={k: tuple(v) for k, v in (releases or {}).items()})


def changes_by_cell(changes: Sequence[Change]) -> dict[str, list[dict]]:
    """compat.json's `changes`: per cell, each changed case's previous and current verdict. Pure."""
    out: dict[str, list[dict]] = {}
    for ch in changes:
        out.setdefault(ch.cell, []).append({"mode": ch.case, "previous": ch.previous, "current": ch.current})
    return out


def to_json(report: CompatReport) -> dict:
    """compat.json (pcgkit.compat/2). Pure."""
    return {
        "schema": COMPAT_SCHEMA, "created": report.created, "kit_version": report.kit_version,
        "environment": dict(report.environment), "modes": [dataclasses.asdict(c) for c in report.cases],
        "legend": dict(report.legend), "cells": [c.to_dict() for c in report.cells],
        "attribution": {k: _attribution_json(a) for k, a in report.attribution.items()},
        "failure_points": {k: _attribution_json(a) for k, a in report.failure_points.items()},
        "changes": changes_by_cell(report.changes), "previous_run": report.previous_run,
        "sglang_facts": [dict(f) for f in report.sglang_facts], "disagreements": [dict(d) for d in report.disagreements],
        "sources": [dict(s) for s in report.sources], "source_notes": list(report.source_notes),
        "sweep": dict(report.sweep), "releases": {axis: list(v) for axis, v in report.releases.items()},
    }


def _attribution_json(a: attr.Attribution) -> dict:
    return {
        "basis": a.basis, "explaining": list(a.explaining), "cells": a.cells,
        "findings": [dataclasses.asdict(f) for f in a.findings],
        "spans": {axis: [dataclasses.asdict(s) for s in spans] for axis, spans in a.spans.items()},
    }


def _releases(data: object) -> dict[str, tuple[str, ...]]:
    """compat.json's `releases` (absent before issue 25: then no gap can be named, and none is claimed)."""
    if not isinstance(data, Mapping):
        return {}
    return {str(axis): tuple(str(v) for v in values) for axis, values in data.items() if isinstance(values, list)}


class CompatSchemaError(ValueError):
    pass


def from_json(data: Mapping[str, Any], releases_if_absent: Mapping[str, tuple[str, ...]] | None = None) -> CompatReport:
    """A CompatReport from compat.json /2 or /1; CompatSchemaError for anything else.
    releases_if_absent: the release lists to state ranges against when the file carries none
    (written before issue 25; the caller passes today's, pcgkit.matrix.plan.default_axis_releases)."""
    schema = data.get("schema") if isinstance(data, Mapping) else None
    if schema not in READABLE_SCHEMAS:
        raise CompatSchemaError(f"compat schema {schema!r}, expected one of {', '.join(READABLE_SCHEMAS)}")
    try:
        cases = tuple(CaseColumn(**{k: m.get(k, "") for k in ("id", "family", "title", "known_signature")})
                      for m in data["modes"])
        cells = tuple(CellReport.from_dict(c) for c in data["cells"])
        for case in cases:  # ids become table columns and dashboard keys: the one safe-id rule
            safe_id(case.id, "compat case id")
        for cell in cells:
            safe_id(cell.id, "compat cell id")
            for case_id in cell.entries:
                safe_id(case_id, f"compat cell {cell.id} case id")
    except (KeyError, TypeError, AttributeError, UntrustedValueError) as exc:
        raise CompatSchemaError(f"compat document is missing or mistypes {exc}") from exc
    changes = tuple(Change(cell, c["mode"], c["previous"], c["current"])
                    for cell, items in (data.get("changes") or {}).items() for c in items)
    report = assemble(str(data.get("created", "")), str(data.get("kit_version", "")), data.get("environment") or {},
                      cases, data.get("legend") or {}, cells, tuple(data.get("sglang_facts") or ()), changes,
                      data.get("previous_run"), _releases(data.get("releases")) or dict(releases_if_absent or {}))
    return dataclasses.replace(report, disagreements=tuple(data.get("disagreements") or ()),
                               sources=tuple(data.get("sources") or ()),
                               source_notes=tuple(data.get("source_notes") or ()),
                               sweep=dict(data.get("sweep") or {}))
