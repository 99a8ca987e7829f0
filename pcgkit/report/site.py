"""What a CI run publishes: the site folder's contents (declared once: the workflow copies exactly
these) and the two short Markdown texts a run leaves for people, the job summary (headline, verdict
grid, flips) and the flips alone (the optional upstream comment). Pure.
"""

from __future__ import annotations

from pcgkit.report.history import HISTORY_FILE
from pcgkit.report.model import CompatReport

SIDECAR_FOLDER = "index.files"  # the dashboard's per-cell evidence scripts (pcgkit.report.dashboard)
# The dashboard and everything it opens, the readable report, and the history the next run reads back.
# compat-cells.md exists only when compat.md would pass GitHub's limit (pcgkit.report.markdown).
SITE_FILES: tuple[str, ...] = ("index.html", SIDECAR_FOLDER, "compat.md", "compat.json", HISTORY_FILE)
OPTIONAL_SITE_FILES: tuple[str, ...] = ("compat-cells.md",)
STEP_SUMMARY_FILE = "step-summary.md"
FLIPS_FILE = "flips.md"
STEP_SUMMARY_LIMIT = 1024 * 1024  # GitHub's limit on one step's $GITHUB_STEP_SUMMARY


def render_flips(report: CompatReport) -> str:
    """The verdicts that changed since the previous run, one line each; "" when none did. Pure."""
    if not report.changes:
        return ""
    lines = [f"pcgkit: {len(report.changes)} verdict(s) changed since the run of {report.previous_run} "
             f"(run of {report.created}{', simulated SM120' if report.simulated else ''}):", ""]
    lines += [f"- `{ch.cell}` {ch.case}: {ch.previous} → {ch.current}" for ch in report.changes]
    return "\n".join(lines) + "\n"


def render_step_summary(report: CompatReport) -> str:
    """The job summary: a headline, the verdict grid, the flips. Pure; under GitHub's 1 MiB limit
    (the grid is the first thing dropped, with a line saying so)."""
    from pcgkit.report.markdown import render_grid  # the grid compat.md shows, not a second one

    judged = sum(1 for c in report.cells if not c.is_error)
    head = [f"## pcgkit matrix: {len(report.cells)} cells, {judged} with verdicts",
            "", f"Run of {report.created}" + (f", compared with {report.previous_run}" if report.previous_run else
                                               ", no earlier run to compare with") + "."]
    if report.simulated:
        head += ["", "Simulated SM120: no GPU was used for cells marked sim."]
    flips = render_flips(report)
    tail = ["", "### Flips", "", flips.split("\n", 2)[2].rstrip() if flips else "No verdict changed."]
    text = "\n".join(head + render_grid(report) + tail) + "\n"
    if len(text.encode()) > STEP_SUMMARY_LIMIT:
        text = "\n".join(head + ["", "(verdict grid left out: over GitHub's 1 MiB summary limit; see compat.md)"] + tail) + "\n"
    return text
