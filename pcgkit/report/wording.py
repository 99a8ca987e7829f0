"""Attribution and evidence in words, shared by compat.md, the dashboard, the terminal and issue drafts. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from pcgkit.report import attribution as attr
from pcgkit.report.model import CompatReport
from pcgkit.values.axes import AXIS_NAMES


def axis_name(axis: str) -> str:
    return AXIS_NAMES.get(axis, axis)


def _value(axis: str, value: str | None) -> str:
    return f"without {axis_name(axis)}" if value is None else value


def _range(axis: str, span: attr.Span) -> str:
    if span.first is None:
        return _value(axis, None)
    return span.first if span.first == span.last else f"{span.first}–{span.last}"


def spans_text(axis: str, spans: Sequence[attr.Span]) -> str:
    """'drifted on 2.8.0, reproduced from 2.9.1'; 'not-applicable without SGLang, reproduced on 0.5.5.post3–0.5.11, ...'."""
    parts = []
    for i, span in enumerate(spans):
        n = f" ({len(span.cells)} cell{'s' if len(span.cells) != 1 else ''})"
        if span.first is None:
            parts.append(f"{span.outcome} {_value(axis, None)}{n}")
        elif i == len(spans) - 1 and i > 0:
            parts.append(f"{span.outcome} from {span.first}" + (f" (measured through {span.last})" if span.last != span.first else "") + n)
        else:
            parts.append(f"{span.outcome} on {_range(axis, span)}{n}")
    return ", ".join(parts)


def _intervals(axis: str, finding: attr.AxisFinding) -> str:
    def end(v):
        return f"no {axis_name(axis)}" if v is None else v
    return ", ".join(end(a) if a == b else f"{end(a)}–{end(b)}" for a, b in finding.intervals)


def others_text(a: attr.Attribution) -> str:
    """What the other axes did: shown irrelevant (where), not isolated, or constant."""
    parts = []
    for f in a.findings:
        if f.axis in a.explaining:
            continue
        if f.effect == attr.NO_EFFECT:
            parts.append(f"{axis_name(f.axis)} does not change it (shown within {_intervals(f.axis, f)})")
        elif f.effect == attr.UNTESTED:
            parts.append(f"{axis_name(f.axis)} is not isolated by any pair of cells")
        elif f.effect == attr.MATTERS:
            parts.append(f"{axis_name(f.axis)} also matters (cells {f.pair[0]} vs {f.pair[1]})" if f.pair else "")
        elif f.effect == attr.CONSTANT and f.values:
            parts.append(f"{axis_name(f.axis)} {_value(f.axis, f.values[0])} in every cell")
    return "; ".join(p for p in parts if p)


def _separating_cell(a: attr.Attribution) -> str:
    """The cell that would tell confounded axes apart: one axis before its change, the other after."""
    if len(a.explaining) < 2:
        return ""
    x, y = a.explaining[:2]
    sx, sy = a.spans[x], a.spans[y]
    if len(sx) < 2 or len(sy) < 2 or None in (sx[0].last, sy[1].first):
        return ""
    return (f" A cell with {axis_name(x)} {sx[0].last} and {axis_name(y)} {sy[1].first} (or {axis_name(x)} {sx[1].first} "
            f"and {axis_name(y)} {sy[0].last}) would separate them: `pcgkit bisect` along one axis with the other held.")


def describe(a: attr.Attribution) -> str:
    """One paragraph stating the range along the axis that explains the change, and why that axis."""
    if a.basis == attr.NONE:
        return "no cell gave a verdict"
    if a.basis == attr.SAME:
        only = next(iter(a.spans.values()))[0].outcome if a.spans else "?"
        return f"{only} in every cell that gave a verdict ({a.cells} cells): no version axis changes it"
    if a.basis in (attr.CONTROLLED, attr.INFERRED):
        axis = a.explaining[0]
        finding = a.finding(axis)
        if a.basis == attr.CONTROLLED and finding and finding.pair:
            why = f"controlled: cells {finding.pair[0]} and {finding.pair[1]} differ only in {axis_name(axis)} among the axes that matter"
        else:
            why = f"inferred: the verdict follows {axis_name(axis)} alone, no pair of cells isolates it"
        others = others_text(a)
        return f"depends on {axis_name(axis)}: {spans_text(axis, a.spans[axis])} ({why})" + (f"; {others}" if others else "")
    if a.basis == attr.CONFOUNDED:
        names = " and ".join(axis_name(x) for x in a.explaining)
        ranges = "; ".join(f"{axis_name(x)}: {spans_text(x, a.spans[x])}" for x in a.explaining)
        return f"changes with {names} together (no cell that ran separates them): {ranges}.{_separating_cell(a)}"
    axis = next(iter(a.spans), "")
    return f"varies, but along no single axis: {axis_name(axis)}: {spans_text(axis, a.spans.get(axis, ()))}"


def evidence_label(report: CompatReport, case_id: str | None = None, cell_ids: Sequence[str] | None = None) -> str:
    """'simulated SM120: 19 cells' or 'real NVIDIA H200 (9.0): 2 cells; simulated SM120: 17 cells'.

    Per case the entries' own devices count (the SGLang case simulates SM90 too); else each cell's.
    """
    counts: dict[str, int] = {}
    for cell in report.cells:
        if cell.is_error or (cell_ids is not None and cell.id not in cell_ids):
            continue
        entry = cell.entries.get(case_id) if case_id else None
        simulated, device = (entry.simulated, entry.device) if entry is not None else (cell.simulated, cell.device)
        label = (device or "no device").split(" (no GPU")[0]
        key = label if simulated else f"real {label}"
        counts[key] = counts.get(key, 0) + 1
    return "; ".join(f"{k}: {n} cell{'s' if n != 1 else ''}" for k, n in counts.items()) or "no cell ran"


def not_judged(report: CompatReport, case_id: str) -> str:
    """Why a case gave no verdict anywhere: 'skipped in 19 cells: requires SM120 ...; error in 2 cells'."""
    reasons: dict[tuple[str, str], int] = {}
    for cell in report.cells:
        entry = cell.entries.get(case_id)
        if entry is not None:
            key = (entry.verdict, "" if cell.is_error else entry.reason)
            reasons[key] = reasons.get(key, 0) + 1
    return "; ".join(f"{v} in {n} cell{'s' if n != 1 else ''}" + (f": {r}" if r else "") for (v, r), n in reasons.items())


def fixed_from(a: attr.Attribution | None, axis: str) -> str | None:
    """The first version on `axis` from which the case is measured fixed (None: never, or not along it)."""
    if a is None or axis not in a.spans:
        return None
    spans = a.spans[axis]
    last = spans[-1] if spans else None
    return last.first if last is not None and last.outcome == "fixed" and len(spans) > 1 else None


def short(a: attr.Attribution | None) -> str:
    """A terminal-width summary: 'SGLang: not-applicable none → reproduced 0.5.5.post3 → fixed 0.5.12'."""
    if a is None or a.basis == attr.NONE:
        return "no verdict"
    if a.basis == attr.SAME:
        return f"same in all {a.cells} cells"
    if not a.spans:  # verdicts differ but on no version axis (e.g. two machines, one cell): nothing to range
        return f"differs within {a.cells} cells, on no version axis"
    axis = next(iter(a.spans))
    steps = " → ".join(f"{s.outcome} {s.first or 'none'}" for s in a.spans[axis])
    names = " or ".join(axis_name(x) for x in a.explaining) or axis_name(axis)
    tag = " (confounded)" if a.basis == attr.CONFOUNDED else " (unexplained)" if a.basis == attr.UNEXPLAINED else ""
    return f"{names}{tag}: {steps}"
