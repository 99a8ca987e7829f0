"""Pure renderers for one environment's results: console lines and the Markdown summary."""

from __future__ import annotations

from typing import Sequence

from pcgkit.catalog import all_modes
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import CaseResult

SIMULATION_NOTE = (
    "SIMULATED SM120: no GPU was used; FlashInfer's and torch's hardware queries were answered as "
    "compute capability 12.0. All library code on the traced path is the real, installed code."
)


def console_lines(results: Sequence[CaseResult]) -> list[str]:
    """The compact table (rows = cases, columns = targets that ran: verdict, gb id, innermost frame),
    then one line per skipped target with its reason, drifted/error reasons, and the simulation note."""
    from pcgkit.report.terminal import render_text, run_table  # rich is imported only when a table is drawn

    table, notes = run_table(results)
    lines = render_text(table) + notes
    if any(r.simulated for r in results):
        lines.append(SIMULATION_NOTE)
    return lines


def md_escape(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_summary(results: Sequence[CaseResult], environment: dict) -> str:
    versions = environment.get("versions", {})
    modes = all_modes()
    lines = ["# pcgkit run summary", "",
             "| mode | target | verdict | graph-break id | innermost FlashInfer frame | message head | time |",
             "|---|---|---|---|---|---|---|"]
    # Skipped rows (a target this machine lacks) would be most of the table: one line per target and reason.
    skipped: dict[tuple[str, str], list[str]] = {}
    for r in sorted(results, key=lambda r: (r.mode, r.variant)):
        if r.verdict is Verdict.SKIPPED:
            skipped.setdefault((r.variant, r.reason), []).append(r.mode)
            continue
        sig = r.signature
        title = modes[r.mode].title if r.mode in modes else r.mode
        head = sig.message_head if sig else r.reason
        frame = sig.innermost_library_frame.short if sig and sig.innermost_library_frame else "-"
        lines.append(
            f"| {r.mode}: {md_escape(title)} | {r.variant}{' (simulated)' if r.simulated else ''} "
            f"| **{r.verdict.value}** | {(sig.graph_break_id if sig else None) or '-'} | `{frame}` "
            f"| {md_escape(head[:100])} | {r.duration_s:.2f} s |"
        )
    if skipped:
        lines += ["", "Skipped (no verdict):"]
        lines += [f"- {variant}: {len(modes_)} case{'s' if len(modes_) > 1 else ''} ({', '.join(modes_)}): {md_escape(reason[:200])}"
                  for (variant, reason), modes_ in skipped.items()]
    lines += ["", "Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v), ""]
    devices = environment.get("devices") or []
    lines.append("Devices: " + (", ".join(d["label"] for d in devices) if devices else "no CUDA device"))
    if any(r.simulated for r in results):
        lines += ["", f"> {SIMULATION_NOTE}"]
    return "\n".join(lines) + "\n"
