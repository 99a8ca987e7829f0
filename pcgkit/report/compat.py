"""Cell outcomes -> the typed compatibility report (pcgkit.report.model). Pure.

`build_compat` reads each cell's results once, picks each case's primary target (real hardware outranks the
simulation), and derives the attribution; the writers (pcgkit.report.writers) render it.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import platform
from collections.abc import Mapping, Sequence

from pcgkit import __version__, catalog
from pcgkit.matrix.outcome import CellOutcome
from pcgkit.report.model import BUG_VERDICTS, FIX, CaseColumn, CellReport, CompatReport, Entry, assemble
from pcgkit.report.sglang_section import sglang_facts
from pcgkit.values.verdict import BROKEN, LEGEND, Verdict

VERDICT_LEGEND: dict[str, str] = {v.value: legend.meaning for v, legend in LEGEND.items()}
OTHER = "other"
FAMILY_ORDER: tuple[str, ...] = tuple(f.value for f in catalog.FAMILY_ORDER)


def case_family(case_id: str) -> str:
    """The catalog's family of a case id; "other" for an id the catalog does not know. Pure."""
    entry = catalog.entry(case_id)
    return entry.family.value if entry is not None else OTHER


def _column_key(case_id: str) -> tuple:
    family = case_family(case_id)
    registry = list(catalog.BY_ID)
    family_rank = FAMILY_ORDER.index(family) if family in FAMILY_ORDER else len(FAMILY_ORDER)
    # Registered cases keep their registry order; others sort by family, then id.
    known_rank = registry.index(case_id) if case_id in registry else len(registry)
    return (family_rank, family if family_rank == len(FAMILY_ORDER) else "", known_rank, case_id)


def case_columns(outcomes: Sequence[CellOutcome]) -> tuple[CaseColumn, ...]:
    """One column per case id present in any cell's results: failure modes, then fixes, then others. Pure.
    When every cell is an error, the registered failure and fix modes stand in: the report still names them."""
    ids = {r.mode for o in outcomes for r in o.results}
    if not ids:
        ids = set(catalog.modes_of(catalog.Family.FAILURE)) | set(catalog.modes_of(catalog.Family.FIX))
    known = catalog.all_modes()
    return tuple(
        CaseColumn(case_id, case_family(case_id), known[case_id].title if case_id in known else case_id,
                   known[case_id].known_signature if case_id in known else "")
        for case_id in sorted(ids, key=_column_key)
    )


def fix_works(verdict: str) -> str | None:
    """'yes' / 'no' for a fix case's verdict; None when the cell says nothing about the fix (not-applicable
    included: this version lacks the code path, there is nothing to fix there). Pure."""
    if verdict == Verdict.FIXED.value:
        return "yes"
    if verdict in BROKEN:  # traces-but-fails included: a fix that traces and then fails to run does not work
        return "no"
    return None


def mode_entry(outcome: CellOutcome, mode: str) -> dict:
    """One cell x case as a plain dict (bisect compares these): verdict, short signature, evidence."""
    if outcome.is_error:
        return {"verdict": "error", "signature": "", "reason": f"{outcome.stage}: {outcome.reason}", "frames": []}
    result = outcome.result_for(mode)
    if result is None:
        return {"verdict": "error", "signature": "", "reason": "no result for this mode", "frames": []}
    sig = result.signature
    return {
        "verdict": result.verdict.value,
        "signature": sig.short() if sig else "",
        "graph_break_id": sig.graph_break_id if sig else None,
        "innermost_frame": str(sig.innermost_library_frame) if sig and sig.innermost_library_frame else None,
        "message_head": sig.message_head if sig else "",
        "frames": [str(f) for f in sig.frame_chain] if sig else [],
        "reason": result.reason,
        "variant": result.variant,
        "simulated": result.simulated,
        "device": result.device.get("label", ""),
        "duration_s": result.duration_s,
    }


def _entry(outcome: CellOutcome, column: CaseColumn) -> Entry:
    data = mode_entry(outcome, column.id)
    if column.family == FIX:
        data["fix_works"] = fix_works(data["verdict"])
    return Entry.from_dict(data)


def cell_report(outcome: CellOutcome, columns: Sequence[CaseColumn]) -> CellReport:
    cell = outcome.cell
    # A cell narrowed to one release's SGLang-level cases says nothing about the others (blank, not error).
    in_scope = catalog.modes_in_scope(cell.scope)
    entries = {c.id: _entry(outcome, c) for c in columns if c.id in in_scope or outcome.result_for(c.id) is not None}
    return CellReport.from_dict({
        "id": cell.id, "label": cell.label(), "definition_hash": cell.definition_hash, "axes": cell.axes(),
        "kind": cell.kind, "origin": cell.origin, "scope": cell.scope, "pin_status": cell.pin_status, "pin_note": cell.pin_note,
        "covers_sglang": list(cell.covers_sglang), "status": outcome.status, "stage": outcome.stage,
        "reason": outcome.reason, "log_tail": outcome.log_tail, "duration_s": round(outcome.duration_s, 3),
        "from_cache": outcome.from_cache, "versions": outcome.versions, "provenance": outcome.provenance,
        "where": outcome.where.to_dict() if outcome.where else None, "finished": outcome.finished,
        "simulated": any(e.simulated for e in entries.values()),
        "device": next((e.device for e in entries.values() if e.device and e.verdict in BUG_VERDICTS),
                       next((e.device for e in entries.values() if e.device), "")),
        "modes": {k: e.to_dict() for k, e in entries.items()},
    })


def build_compat(outcomes: Sequence[CellOutcome], created: str | None = None,
                 releases: Mapping[str, tuple[str, ...]] | None = None) -> CompatReport:
    """The typed report every writer reads. Pure (created is passed in for tests). releases: per axis,
    the releases a stated range may span (pcgkit.matrix.plan.axis_releases), so gaps get named."""
    from pcgkit.report.sweep_section import build_sweep, sweep_rows

    columns = case_columns(outcomes)
    report = assemble(
        created or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        __version__,
        {"host": platform.node(), "platform": platform.platform(), "machine": platform.machine()},
        columns, VERDICT_LEGEND, [cell_report(o, columns) for o in outcomes], sglang_facts(outcomes),
        releases=releases,
    )
    rows = sweep_rows(outcomes)
    return dataclasses.replace(report, sweep=build_sweep(rows)) if rows else report


def splice(measured: CompatReport, fresh: CompatReport, releases: Mapping[str, tuple[str, ...]] | None = None) -> CompatReport:
    """`measured` with the cells of `fresh` in place of those with the same id (new ids appended), the
    attribution derived again from the whole: re-running a few cells of a committed sample without the
    others' hours. Every kept cell is as measured (its own dates and evidence). Pure."""
    by_id = {c.id: c for c in fresh.cells}
    cells = [by_id.get(c.id, c) for c in measured.cells] + [c for c in fresh.cells if c.id not in {m.id for m in measured.cells}]
    cases = list(measured.cases) + [c for c in fresh.cases if measured.case(c.id) is None]
    facts = [f for f in measured.sglang_facts if f.get("cell") not in by_id] + list(fresh.sglang_facts)
    # the table stays dated by its measured run; the re-run cells are named with their own date
    report = assemble(measured.created, fresh.kit_version, fresh.environment, cases, fresh.legend, cells, facts,
                      releases=releases if releases is not None else (fresh.releases or measured.releases))
    note = f"re-run {fresh.created[:10]} into the run of {measured.created[:10]}: {', '.join(sorted(by_id))}"
    return dataclasses.replace(report, sweep=measured.sweep, disagreements=fresh.disagreements, sources=fresh.sources,
                               source_notes=(*measured.source_notes, *fresh.source_notes, note))
