"""Attribution and evidence in words, shared by compat.md, the dashboard, the terminal and issue drafts. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from pcgkit.report import attribution as attr
from pcgkit.report.model import CompatReport
from pcgkit.util.ranges import measured_ranges, measured_runs
from pcgkit.values.axes import AXIS_NAMES
from pcgkit.values.runcheck import says_call_path_ran


def axis_name(axis: str) -> str:
    return AXIS_NAMES.get(axis, axis)


def _value(axis: str, value: str | None) -> str:
    return f"without {axis_name(axis)}" if value is None else value


def _measured(span: attr.Span) -> tuple[str, ...]:
    """The versions measured in a span (older compat.json spans carry only their two ends)."""
    return span.values or tuple(dict.fromkeys(v for v in (span.first, span.last) if v is not None))


def _boundary_gap(previous: attr.Span | None, span: attr.Span, releases: Sequence[str]) -> str:
    """The releases between the last one measured before a change and the first one after: unknown."""
    if previous is None or previous.last is None or span.first is None or not releases:
        return ""
    gaps = measured_runs(releases, (previous.last, span.first)).gaps_text()
    return f"; the change lies between {previous.last} and {span.first}, {gaps}" if gaps else ""


def spans_text(axis: str, spans: Sequence[attr.Span], releases: Sequence[str] = ()) -> str:
    """'drifted on 2.8.0, reproduced from 2.9.1'; 'not-applicable without SGLang, reproduced on 0.5.5.post3–0.5.11, ...'.
    A range is stated only over measured releases: with `releases` (the axis's releases, oldest first) the
    releases inside a span that no cell ran are named, and so are those at a boundary."""
    parts = []
    for i, span in enumerate(spans):
        n = f" ({len(span.cells)} cell{'s' if len(span.cells) != 1 else ''})"
        previous = spans[i - 1] if i > 0 else None
        if span.first is None:
            parts.append(f"{span.outcome} {_value(axis, None)}{n}")
        elif i == len(spans) - 1 and i > 0:
            ranges = measured_runs(releases, _measured(span))
            through = ""
            if span.last != span.first:
                through = f" (measured through {span.last})" if ranges.complete and releases else f" (measured on {ranges.text()})"
            parts.append(f"{span.outcome} from {span.first}{through}{n}{_boundary_gap(previous, span, releases)}")
        else:
            measured = measured_ranges(releases, _measured(span))  # measured releases only, gaps named
            parts.append(f"{span.outcome} on {measured}{n}{_boundary_gap(previous, span, releases)}")
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
        return f"depends on {axis_name(axis)}: {spans_text(axis, a.spans[axis], a.releases.get(axis, ()))} ({why})" + (f"; {others}" if others else "")
    if a.basis == attr.CONFOUNDED:
        names = " and ".join(axis_name(x) for x in a.explaining)
        ranges = "; ".join(f"{axis_name(x)}: {spans_text(x, a.spans[x], a.releases.get(x, ()))}" for x in a.explaining)
        return f"changes with {names} together (no cell that ran separates them): {ranges}.{_separating_cell(a)}"
    axis = next(iter(a.spans), "")
    return f"varies, but along no single axis: {axis_name(axis)}: {spans_text(axis, a.spans.get(axis, ()), a.releases.get(axis, ()))}"


def evidence_label(report: CompatReport, case_id: str | None = None, cell_ids: Sequence[str] | None = None) -> str:
    """'simulated SM120: 19 cells' or 'real NVIDIA H200 (9.0): 2 cells; simulated SM120: 17 cells'. Per case the
    entries' own devices count (the SGLang case simulates SM90 too); else each cell's."""
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


def _fixed_span(a: attr.Attribution | None, axis: str) -> attr.Span | None:
    """The last span on `axis` when it is a change to `fixed` (None: never fixed, or not along it)."""
    spans = a.spans.get(axis, ()) if a is not None else ()
    return spans[-1] if len(spans) > 1 and spans[-1].outcome == "fixed" else None


def traced_only(report: CompatReport, case: str, axis: str) -> tuple[str, ...]:
    """The versions of the fixed span on `axis` where no `fixed` cell of `case` says its call path ran (each only
    traced: pcgkit.values.runcheck.says_call_path_ran, the rule the advice snapshot's `ran` follows), oldest
    first. Pure."""
    span = _fixed_span(report.attribution.get(case), axis)
    if span is None:
        return ()
    cells = set(span.cells)
    out = []
    for value in _measured(span):
        entries = [e for c in report.cells if c.id in cells and c.axis_value(axis) == value
                   and (e := c.entries.get(case)) is not None and e.verdict == "fixed"]
        if entries and not any(says_call_path_ran(e.reason) for e in entries):
            out.append(value)
    return tuple(out)


def fixed_from(report: CompatReport, case: str, axis: str) -> str | None:
    """The first version on `axis` from which `case` is measured fixed, counting only versions whose `fixed` cells
    say their call path ran (None: never fixed, not along it, or every fixed version only traced). The versions of
    that span whose `fixed` only traced are not counted: `traced_only` names them, and a statement names them
    apart. Pure."""
    span = _fixed_span(report.attribution.get(case), axis)
    if span is None:
        return None
    traced = set(traced_only(report, case, axis))
    return next((value for value in _measured(span) if value not in traced), None)


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
