"""Pure renderers of a matrix run: compat.json (versioned), compat.md (upstream-ready), the version
ranges where each mode reproduces, and the verdict changes since the previous run.
`write_reports` is the only function here that touches the disk.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import platform
from collections.abc import Sequence
from pathlib import Path

from pcgkit import __version__
from pcgkit.matrix.outcome import CellOutcome
from pcgkit.matrix.pins import version_key
from pcgkit.report.sglang_section import render_sglang_facts, sglang_facts
from pcgkit.report.summary import SIMULATION_NOTE
from pcgkit.util import atomic
from pcgkit.util.sanitize import md_cell, md_code
from pcgkit.verdicts import catalog

COMPAT_SCHEMA = "pcgkit.compat/1"
RANGE_AXES: tuple[str, ...] = ("flashinfer-python", "torch", "sglang")
BUG_VERDICTS = ("reproduced", "fixed", "drifted", "not-applicable")
MIXED = "mixed"
VERDICT_LEGEND: dict[str, str] = {
    "reproduced": "fails under fullgraph=True with the mode's known signature",
    "fixed": "traced cleanly under fullgraph=True",
    "drifted": "fails, but not with the mode's known signature (the bug changed shape)",
    "not-applicable": "this version lacks the code path the mode exercises",
    "skipped": "hardware or an optional dependency is missing",
    "error": "the install, the import or the kit broke: no statement about the bug",
}


# Case families, in column order (the catalog's). A case id the catalog does not know (a result
# file from a newer kit) still gets a column, family "other", after these.
FAILURE = catalog.Family.FAILURE.value
FIX = catalog.Family.FIX.value
OTHER = "other"
FAMILY_ORDER: tuple[str, ...] = tuple(f.value for f in catalog.FAMILY_ORDER)
FIX_LEGEND = (
    "fix columns read 'fix works in this cell': **yes** = the fix traced under its compile setting "
    "(and, on a real GPU, compiled == eager); **no** = it failed (known way or new), with why"
)


@dataclasses.dataclass(frozen=True)
class Span:
    verdict: str  # a bug verdict, or "mixed" when cells at one version disagree
    first: str
    last: str
    cells: tuple[str, ...]


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


def case_columns(outcomes: Sequence[CellOutcome]) -> list[dict]:
    """One column per case id present in any cell's results: failure modes, then fixes, then others. Pure.

    When no cell produced a result (every cell an error), the registered failure and fix modes
    stand in, so the table still says which cases could not be judged.
    """
    ids = {r.mode for o in outcomes for r in o.results}
    if not ids:
        ids = set(catalog.modes_of(catalog.Family.FAILURE)) | set(catalog.modes_of(catalog.Family.FIX))
    known = catalog.all_modes()
    columns = []
    for case_id in sorted(ids, key=_column_key):
        mode = known.get(case_id)
        columns.append({
            "id": case_id,
            "family": case_family(case_id),
            "title": mode.title if mode else case_id,
            "known_signature": mode.known_signature if mode else "",
        })
    return columns


def fix_works(verdict: str) -> str | None:
    """'yes' / 'no' for a fix case's verdict; None when the cell says nothing about the fix. Pure.

    not-applicable (this version lacks the code path) is neither: there is nothing to fix there.
    """
    if verdict == "fixed":
        return "yes"
    if verdict in ("reproduced", "drifted"):
        return "no"
    return None


def mode_entry(outcome: CellOutcome, mode: str) -> dict:
    """One table entry: verdict, short signature and evidence for a cell x mode."""
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


def _axis_value(outcome: CellOutcome, axis: str) -> str | None:
    installed = outcome.versions.get(axis)
    return installed or outcome.cell.axes().get(axis)


def version_spans(outcomes: Sequence[CellOutcome], mode: str, axis: str) -> list[Span]:
    """Runs of equal verdicts along one axis, from the cells that ran with a bug verdict. Pure."""
    by_version: dict[str, list[tuple[str, str]]] = {}
    for outcome in outcomes:
        value = _axis_value(outcome, axis)
        verdict = mode_entry(outcome, mode)["verdict"]
        if value and verdict in BUG_VERDICTS:
            by_version.setdefault(value, []).append((verdict, outcome.cell.id))
    spans: list[Span] = []
    for version in sorted(by_version, key=version_key):
        verdicts = {v for v, _ in by_version[version]}
        verdict = verdicts.pop() if len(verdicts) == 1 else MIXED
        ids = tuple(c for _, c in by_version[version])
        if spans and spans[-1].verdict == verdict:
            last = spans[-1]
            spans[-1] = Span(verdict, last.first, version, last.cells + ids)
        else:
            spans.append(Span(verdict, version, version, ids))
    return spans


def _range(span: Span) -> str:
    return span.first if span.first == span.last else f"{span.first}–{span.last}"


def describe_spans(axis: str, mode: str, spans: Sequence[Span]) -> str:
    """'flashinfer-python ≤ 0.6.1 reproduces mode1 (3 cells); fixed from 0.7.4 (1 cell)'. Pure."""
    if not spans:
        return f"{axis}: no cell that ran gives a verdict for {mode}"

    def n(span: Span) -> str:
        return f"({len(span.cells)} cell{'s' if len(span.cells) != 1 else ''})"

    if len(spans) == 1:
        return f"{axis} {_range(spans[0])}: {spans[0].verdict} in every cell that ran {n(spans[0])}"
    parts = []
    for i, span in enumerate(spans):
        if i == 0:
            parts.append(f"{axis} ≤ {span.last} {span.verdict} for {mode} {n(span)}")
        elif i == len(spans) - 1:
            parts.append(f"{span.verdict} from {span.first} {n(span)}")
        else:
            parts.append(f"{span.verdict} for {_range(span)} {n(span)}")
    return "; ".join(parts)


def build_compat(outcomes: Sequence[CellOutcome], created: str | None = None) -> dict:
    """The versioned JSON document every other renderer reads. Pure (created is passed in for tests)."""
    columns = case_columns(outcomes)
    cells = []
    for outcome in outcomes:
        cell = outcome.cell
        entries = {}
        for column in columns:
            entry = mode_entry(outcome, column["id"])
            if column["family"] == FIX:
                entry["fix_works"] = fix_works(entry["verdict"])
            entries[column["id"]] = entry
        cells.append({
            "id": cell.id,
            "label": cell.label(),
            "definition_hash": cell.definition_hash,
            "axes": cell.axes(),
            "kind": cell.kind,
            "origin": cell.origin,
            "pin_status": cell.pin_status,
            "pin_note": cell.pin_note,
            "covers_sglang": list(cell.covers_sglang),
            "status": outcome.status,
            "stage": outcome.stage,
            "reason": outcome.reason,
            "log_tail": outcome.log_tail,
            "duration_s": round(outcome.duration_s, 3),
            "from_cache": outcome.from_cache,
            "versions": outcome.versions,
            "provenance": outcome.provenance,
            "simulated": any(e.get("simulated") for e in entries.values()),
            "device": next((e["device"] for e in entries.values() if e.get("device")), ""),
            "modes": entries,
        })
    ranges = {
        mode: {
            axis: {"spans": [dataclasses.asdict(s) for s in spans], "text": describe_spans(axis, mode, spans)}
            for axis in RANGE_AXES
            if (spans := version_spans(outcomes, mode, axis)) or axis != "sglang"
        }
        for mode in (c["id"] for c in columns)
    }
    return {
        "schema": COMPAT_SCHEMA,
        "created": created or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "kit_version": __version__,
        "environment": {"host": platform.node(), "platform": platform.platform(), "machine": platform.machine()},
        "modes": columns,  # every case id present in the results, failure modes first, then fixes, then others
        "legend": VERDICT_LEGEND,
        "cells": cells,
        "ranges": ranges,
        "changes": {},
        "previous_run": None,
        "sglang_facts": sglang_facts(outcomes),
    }


def verdict_changes(previous: dict | None, current: dict) -> dict[str, list[dict]]:
    """Per cell id, the modes whose verdict differs from the previous run's. Pure."""
    if not previous:
        return {}
    before = {c["id"]: c for c in previous.get("cells", ())}
    changes: dict[str, list[dict]] = {}
    for cell in current["cells"]:
        old = before.get(cell["id"])
        if old is None:
            continue
        for mode, entry in cell["modes"].items():
            was = old.get("modes", {}).get(mode, {}).get("verdict")
            if was is not None and was != entry["verdict"]:
                changes.setdefault(cell["id"], []).append({"mode": mode, "previous": was, "current": entry["verdict"]})
    return changes


def _md(text: str) -> str:
    return md_cell(text)  # one line, '|' and markup escaped, control characters gone (util/sanitize)


def render_markdown(compat: dict) -> str:
    """reports/compat.md: rows = cells, one column per case (failure modes, fixes, others), ranges, legend."""
    modes = compat["modes"]
    lines = [
        "# pcgkit compatibility matrix",
        "",
        "| cell | sglang | flashinfer-python | torch | python | pins | " + " | ".join(m["id"] for m in modes) + " |",
        "|---" * (6 + len(modes)) + "|",
    ]
    for cell in compat["cells"]:
        axes = cell["axes"]
        installed = cell["versions"] or {}
        row = [
            md_code(cell["id"]) + (" ⚑" if cell["id"] in compat.get("changes", {}) else ""),
            *(_md(v) for v in (
                axes.get("sglang") or installed.get("sglang") or "-",
                installed.get("flashinfer-python") or axes.get("flashinfer-python") or "-",
                installed.get("torch") or axes.get("torch") or "-",
                installed.get("python") or axes.get("python") or "-",
                cell["pin_status"],
            )),
        ]
        for mode in modes:
            row.append(_md_entry(cell, mode, cell["modes"].get(mode["id"])))
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "## Where each case gives which verdict", ""]
    for mode in modes:
        for info in compat["ranges"].get(mode["id"], {}).values():
            lines.append(f"- **{mode['id']}** ({_md(mode['title'])}): {_md(info['text'])}")
    if compat.get("changes"):
        lines += ["", f"## Changed since the previous run ({compat.get('previous_run')})", ""]
        for cell_id, changes in compat["changes"].items():
            for c in changes:
                lines.append(f"- ⚑ `{cell_id}` {c['mode']}: {c['previous']} → {c['current']}")
    if compat.get("disagreements"):  # pcgkit/report/sources.py: parity at matrix scale, typed data in compat.json
        lines += ["", "## Results that disagree (simulated vs real hardware, or between machines)", ""]
        for d in compat["disagreements"]:
            sides = [f"{w['target']} on {w['where']}: {w['verdict']} {w.get('innermost_frame') or ''}".strip() for w in (d["first"], d["second"])]
            lines.append(f"- ⚠ `{d['cell']}` {d['case']} ({', '.join(d['fields'])} differ): {_md(sides[0])} vs {_md(sides[1])}")
    lines += render_sglang_facts(compat.get("sglang_facts", []), _md)
    errors = [c for c in compat["cells"] if c["status"] == "error"]
    if errors:
        lines += ["", "## Error cells (no statement about the bug)", ""]
        for cell in errors:
            lines.append(f"- {md_code(cell['id'])} ({_md(cell['stage'])}): {_md(cell['reason'])}")
    lines += render_images(compat["cells"])
    lines += ["", "## Legend", ""]
    lines += [f"- **{verdict}**: {text}" for verdict, text in compat["legend"].items()]
    lines += [
        "- signature: dynamo graph-break id and the innermost FlashInfer frame (file:line:function)",
        f"- {FIX_LEGEND}",
        (
            "- pins: on-pin = exactly the flashinfer-python and torch an SGLang release declares; off-pin otherwise; "
            "unpinned = an existing interpreter"
        ),
        "- ⚑: a verdict changed since the previous run",
        "",
        "## Environment",
        "",
        f"- pcgkit {compat['kit_version']}, created {compat['created']}, host {compat['environment']['platform']}",
    ]
    for mode in modes:
        known = f"; known signature: {_md(mode['known_signature'])}" if mode.get("known_signature") else ""
        lines.append(f"- {mode['id']} ({mode.get('family', FAILURE)}): {_md(mode['title'])}{known}")
    if any(c.get("simulated") for c in compat["cells"]):
        lines += ["", f"> {SIMULATION_NOTE}"]
    return "\n".join(lines) + "\n"


def render_images(cells: Sequence[dict]) -> list[str]:
    """'## Images': where each container cell ran (image id, digest, base, CUDA, host driver). Pure."""
    rows = [c for c in cells if (c.get("provenance") or {}).get("backend") == "docker"]
    if not rows:
        return []
    lines = ["", "## Images (docker backend)", "",
             "| cell | image id | digest | base image | CUDA in image | host driver |", "|---" * 6 + "|"]
    for cell in rows:
        p = cell["provenance"]
        cols = [f"`{cell['id']}`", f"`{p.get('image_id', '')[:19]}`", p.get("image_digest", ""),
                f"{p.get('base_image', '')} ({p.get('base_image_digest', '')})", p.get("cuda_in_image", ""),
                p.get("host_driver", "")]
        lines.append("| " + " | ".join(_md(c) for c in cols) + " |")
    return lines


FIX_WHY_CHARS = 90


def _md_entry(cell: dict, mode: dict, entry: dict | None) -> str:
    """One table cell. Fix columns answer 'fix works here: yes/no, why'; the others show verdict + signature."""
    if entry is None:  # a column from another run's case set (old history): this cell has no such result
        return "-"
    if entry["verdict"] == "error":
        return f"**error** ({_md(cell['stage'] or 'no result')})"  # the reason is listed below
    sig = f" {md_code(entry['signature'])}" if entry.get("signature") else ""
    if mode.get("family") == FIX and entry.get("fix_works"):
        why = _md(entry.get("reason", ""))
        why = why if len(why) <= FIX_WHY_CHARS else why[: FIX_WHY_CHARS - 1] + "…"
        return f"**{entry['fix_works']}** ({entry['verdict']}): {why}{sig}"
    return f"**{entry['verdict']}**{sig}"


def previous_history(history_dir: Path) -> dict | None:
    files = sorted(history_dir.glob("*.json"))
    for path in reversed(files):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if data.get("schema") == COMPAT_SCHEMA and _history_shape_ok(data):
            return data
        if data.get("schema") == COMPAT_SCHEMA:
            print(f"pcgkit report: {path}: right schema, wrong shape (cells must be a list of objects); ignored")
    return None


def _history_shape_ok(data: dict) -> bool:
    """What verdict_changes reads: cells as a list of objects with an id and a modes object."""
    cells = data.get("cells")
    return isinstance(data.get("created"), str) and isinstance(cells, list) and all(
        isinstance(c, dict) and isinstance(c.get("id"), str) and isinstance(c.get("modes", {}), dict)
        and all(isinstance(m, dict) for m in c.get("modes", {}).values())
        for c in cells
    )


def write_reports(compat: dict, reports_dir: Path) -> tuple[dict, dict[str, Path]]:
    """compat.json, compat.md and history/<created>.json; `changes` filled from the previous run."""
    history_dir = reports_dir / "history"
    atomic.ensure_dir(history_dir)
    previous = previous_history(history_dir)
    compat = {**compat, "changes": verdict_changes(previous, compat), "previous_run": previous and previous["created"]}
    text = json.dumps(compat, indent=2, sort_keys=True) + "\n"
    stamp = compat["created"].replace(":", "").replace("+0000", "Z")
    paths = {
        "compat.json": reports_dir / "compat.json",
        "compat.md": reports_dir / "compat.md",
        "history": history_dir / f"{stamp}.json",
    }
    # atomic (unique temp names) and redacted: pcgkit.util.atomic
    atomic.write_text(paths["compat.json"], text)
    atomic.write_text(paths["history"], text)
    atomic.write_text(paths["compat.md"], render_markdown(compat))
    return compat, paths
