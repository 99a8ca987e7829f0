"""The compatibility report's per-SGLang-version facts section (issue 5): the piecewise flags and the FP4
dispatch each cell read from its installed sglang (evidence of the SGLang-level case's results), with that
case's verdicts. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pcgkit.catalog import Family, modes_of
from pcgkit.matrix.outcome import CellOutcome
from pcgkit.sglang.facts import UNKNOWN
from pcgkit.values import targets


def sglang_facts(outcomes: Sequence[CellOutcome]) -> list[dict]:
    """One entry per cell that ran the SGLang-level case with sglang installed."""
    rows = []
    for outcome in outcomes:
        ran = [r for r in outcome.results if r.mode in modes_of(Family.SGLANG)]
        facts = next((r.evidence.get("sglang_facts") for r in ran if r.evidence.get("sglang_facts")), None)
        if not facts:
            continue
        verdicts = {}
        for r in ran:
            if not targets.is_simulated(r.variant) and not r.verdict.ran:
                continue  # real-hardware targets that did not run here
            sig = r.signature
            verdicts[f"{r.mode} [{r.variant}]"] = {
                "verdict": r.verdict.value,
                "device": r.device.get("label", ""),
                "graph_break": getattr(sig, "graph_break_id", None) if sig else None,
                "frame": str(sig.innermost_library_frame) if sig and sig.innermost_library_frame else None,
                "reason": r.reason,
                "callable": r.evidence.get("callable"),
                "torch_op": r.evidence.get("torch_op"),
                "fullgraph": (r.evidence.get("fullgraph") or {}).get("value"),
            }
        rows.append({"cell": outcome.cell.id, "versions": outcome.versions, **facts, "verdicts": verdicts})
    return rows


def _dispatch_text(dispatch: dict) -> str:
    if "error" in dispatch:
        return f"not read: {dispatch['error']}"
    parts = []
    for family, b in dispatch.items():
        op = f"torch op: {b['torch_op']}" if b.get("torch_op") else "not registered as a torch op by sglang"
        parts.append(f"{family}: `{b['module']}.{b['attr']}` ({op})")
    return "; ".join(parts)


def piecewise_state(read_in_cell: dict, release: str | None, wheel_states: Mapping[str, str]) -> str:
    """The release's piecewise default as one answer: the cell's own read, or, where the cell could not read it
    (`unknown`), the state read from the release's wheel (fixtures/sglang_releases.json), said so; never both
    'unknown' and a state for one release. Pure."""
    state = read_in_cell.get("default_state", "?")
    from_wheel = wheel_states.get(release or "")
    if state == UNKNOWN and from_wheel and from_wheel != UNKNOWN:
        return f"{from_wheel} (read from the release wheel; the cell's own read could not tell)"
    if from_wheel and from_wheel != state:
        return f"{state} (the release wheel reads {from_wheel})"
    return state + (" (from source text)" if "source text" in read_in_cell.get("source", "") else "")


def render_sglang_facts(rows: list[dict], md, wheel_states: Mapping[str, str] | None = None) -> list[str]:
    """Markdown lines; `md` escapes table text (report.py's helper); `wheel_states` is each release's piecewise
    default as read from its wheel, which answers where the cell's own read could not."""
    if not rows:
        return []
    lines = ["", "## SGLang per-version facts (read from each cell's installed sglang)", "",
             "| cell | sglang | piecewise CUDA graph | enable / disable / force | FP4 activation quantize | "
             "SGLang-level case |", "|---|---|---|---|---|---|"]
    for row in rows:
        pw = row.get("piecewise", {})
        flags = "not read: " + pw["error"] if "error" in pw else " / ".join(
            f"`{pw.get(k)}`" if pw.get(k) else "-" for k in ("enable", "disable", "force"))
        state = piecewise_state(pw, row.get("sglang"), wheel_states or {})
        verdicts = "; ".join(
            f"{name}: **{v['verdict']}**" + (f" {v['graph_break']}" if v.get("graph_break") else "")
            + (f" `{v['frame']}`" if v.get("frame") else "") + f" ({v['device']})"
            for name, v in row["verdicts"].items())
        lines.append("| " + " | ".join(md(x) for x in (
            f"`{row['cell']}`", row.get("sglang") or "-", state, flags,
            _dispatch_text(row.get("fp4_dispatch", {})), verdicts)) + " |")
    return lines
