"""The report's writers, one registry: markdown, json, dashboard, junit, summary. Each takes the typed
report and a context and returns what it wrote; `publish` runs them and keeps the history. Every file is
written by pcgkit.util.atomic (unique temp name, fsync, rename, redacted): a killed run never leaves half a report.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from pcgkit.matrix.outcome import CellOutcome
from pcgkit.matrix.uninstallable import Uninstallable, load_uninstallable
from pcgkit.report import history as hist
from pcgkit.report.annotations import mark_expected
from pcgkit.report.dashboard import build_page, write_page
from pcgkit.report.markdown import CELL_DETAILS_FILE, split_markdown
from pcgkit.report.model import CompatReport, to_json
from pcgkit.report.site import FLIPS_FILE, STEP_SUMMARY_FILE, render_flips, render_step_summary
from pcgkit.report.upstream import EMPTY, Upstream, load_upstream
from pcgkit.util import atomic

MERGED_JUNIT = "matrix-junit.xml"


@dataclasses.dataclass(frozen=True)
class WriteContext:
    reports_dir: Path
    runs: tuple[hist.RunSummary, ...] = ()  # every run's summary, this one last
    upstream: Upstream = EMPTY
    outcomes: tuple[CellOutcome, ...] = ()  # the cells on disk (none when rendered from compat.json)
    cells_root: Path | None = None
    certificates: tuple[dict, ...] = ()  # the committed trace-safety certificates (pcgkit.report.certificate_page)


Writer = Callable[[CompatReport, WriteContext], list[Path]]


def write_json(report: CompatReport, ctx: WriteContext) -> list[Path]:
    return [atomic.write_text(ctx.reports_dir / "compat.json", json.dumps(to_json(report), indent=2, sort_keys=True) + "\n")]


def write_markdown(report: CompatReport, ctx: WriteContext) -> list[Path]:
    """compat.md within its budget (pcgkit.report.markdown.COMPAT_BUDGET, under GitHub's body limit): whole when it
    fits, else its cell-sized sections move to a sidecar. The certificate section (pcgkit.sweep.certificate) counts."""
    from pcgkit.report.certificate_page import with_matrix_runs
    from pcgkit.sweep.certificate import render_section

    text, sidecar_text = split_markdown(report, ctx.upstream, render_section(with_matrix_runs(ctx.certificates, report)))
    sidecar = ctx.reports_dir / CELL_DETAILS_FILE
    written = [atomic.write_text(ctx.reports_dir / "compat.md", text)]
    if sidecar_text is None:
        sidecar.unlink(missing_ok=True)  # a smaller run after a larger one: no stale details
        return written
    return written + [atomic.write_text(sidecar, sidecar_text)]


def write_dashboard(report: CompatReport, ctx: WriteContext) -> list[Path]:
    from pcgkit.report.certificate_page import PAGE, build_certificate_page, with_matrix_runs

    written = [write_page(build_page(report, ctx.runs, ctx.upstream), ctx.reports_dir)]
    if ctx.certificates:
        written.append(atomic.write_text(ctx.reports_dir / PAGE, build_certificate_page(with_matrix_runs(ctx.certificates, report))))
    return written


def write_junit(report: CompatReport, ctx: WriteContext) -> list[Path]:
    """The cells' own JUnit files merged (xunit2); nothing when there are no cell folders to merge."""
    if not ctx.outcomes or ctx.cells_root is None:
        return []
    from pcgkit.report.junit_merge import validated, write_merged

    junit = write_merged(list(ctx.outcomes), ctx.cells_root, ctx.reports_dir / MERGED_JUNIT)
    problems = validated(junit)  # skipped when the bytes equal the last valid file's
    if problems:  # a kit bug, never a cell's fault: say so loudly
        raise RuntimeError(f"{junit} is NOT xunit2-valid: {problems[:3]}")
    return [junit]


def write_summary(report: CompatReport, ctx: WriteContext) -> list[Path]:
    """The compact terminal table (rows = cases); it writes no file."""
    from pcgkit.report.terminal import matrix_table, print_table

    print_table(matrix_table(report))
    return []


def write_step_summary(report: CompatReport, ctx: WriteContext) -> list[Path]:
    """step-summary.md (CI's job summary: headline, grid, flips) and flips.md (empty when nothing flipped)."""
    return [atomic.write_text(ctx.reports_dir / STEP_SUMMARY_FILE, render_step_summary(report)),
            atomic.write_text(ctx.reports_dir / FLIPS_FILE, render_flips(report))]


WRITERS: dict[str, Writer] = {
    "json": write_json,
    "markdown": write_markdown,
    "dashboard": write_dashboard,
    "junit": write_junit,
    "summary": write_summary,
    "step-summary": write_step_summary,
}


def publish(report: CompatReport, reports_dir: Path, outcomes: Sequence[CellOutcome] = (),
            cells_root: Path | None = None, names: Sequence[str] = tuple(WRITERS),
            upstream: Upstream | None = None,
            uninstallable: Sequence[Uninstallable] | None = None,
            certificates: tuple[dict, ...] | None = None) -> tuple[CompatReport, dict[str, list[Path]]]:
    """Label cannot-run cells (fixtures/expectations.toml unless `uninstallable` is given),
    compare with the previous run, run the writers, append this run to history.jsonl."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    report = mark_expected(report, load_uninstallable() if uninstallable is None else uninstallable)
    runs = hist.load_history(reports_dir)
    previous = next((r for r in reversed(runs) if r.created != report.created), None)
    changes = hist.verdict_changes(previous, hist.summarize(report).verdicts) if previous is not None else ()
    report = dataclasses.replace(report, changes=changes, previous_run=previous.created if previous else None)
    from pcgkit.report.certificate_page import load_certificates

    ctx = WriteContext(reports_dir, tuple(hist.with_current(runs, report)),
                       upstream if upstream is not None else load_upstream(), tuple(outcomes), cells_root,
                       certificates=certificates if certificates is not None else load_certificates())
    written = {name: WRITERS[name](report, ctx) for name in names}
    written["history"] = [hist.append_history(reports_dir, report)]
    return report, written
