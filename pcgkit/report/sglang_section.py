"""The compatibility report's per-SGLang-version facts section (issue 5). Pure.

Facts travel as evidence of the SGLang-level case's results (`sglang_facts`: piecewise flags and
the FP4 dispatch, read in the cell from its installed sglang); this module collects them per
SGLang version with that case's verdicts, and renders the markdown section.
"""

from __future__ import annotations

from collections.abc import Sequence

from pcgkit.catalog import Family, modes_of
from pcgkit.matrix.outcome import CellOutcome
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


def render_sglang_facts(rows: list[dict], md) -> list[str]:
    """Markdown lines; `md` escapes table text (report.py's helper)."""
    if not rows:
        return []
    lines = ["", "## SGLang per-version facts (read from each cell's installed sglang)", "",
             "| cell | sglang | piecewise CUDA graph | enable / disable / force | FP4 activation quantize | "
             "SGLang-level case |", "|---|---|---|---|---|---|"]
    for row in rows:
        pw = row.get("piecewise", {})
        flags = "not read: " + pw["error"] if "error" in pw else " / ".join(
            f"`{pw.get(k)}`" if pw.get(k) else "-" for k in ("enable", "disable", "force"))
        state = pw.get("default_state", "?") + (" (from source text)" if "source text" in pw.get("source", "") else "")
        verdicts = "; ".join(
            f"{name}: **{v['verdict']}**" + (f" {v['graph_break']}" if v.get("graph_break") else "")
            + (f" `{v['frame']}`" if v.get("frame") else "") + f" ({v['device']})"
            for name, v in row["verdicts"].items())
        lines.append("| " + " | ".join(md(x) for x in (
            f"`{row['cell']}`", row.get("sglang") or "-", state, flags,
            _dispatch_text(row.get("fp4_dispatch", {})), verdicts)) + " |")
    return lines
