"""compat.md fits its budget (60,000 characters, under GitHub's 65,536-character body limit): the committed matrix
sample with the committed certificates, and a synthetic matrix ten times its size. Issue 44: the committed compat.md
was 65,889 characters (the certificate section was appended after the size check), so it could not be pasted."""

from __future__ import annotations

import json
from pathlib import Path

from pcgkit.report.certificate_page import load_certificates
from pcgkit.report.markdown import CELL_DETAILS_FILE, COMPAT_BUDGET, GITHUB_BODY_LIMIT, split_markdown
from pcgkit.report.model import CaseColumn, CellReport, Entry, assemble, from_json
from pcgkit.report.upstream import load_upstream
from pcgkit.report.writers import WriteContext, publish, write_markdown
from pcgkit.sweep.certificate import render_section

SAMPLE = Path(__file__).resolve().parents[1] / "reports" / "samples" / "matrix-2026-12-01"


def _sample_report():
    return from_json(json.loads((SAMPLE / "compat.json").read_text()))


def test_the_committed_sample_fits_the_budget_with_its_certificates(tmp_path):
    """The writer's compat.md for the committed sample, certificates included, is <= 60,000 characters; what moved out
    is in compat-cells.md and linked; the committed file is what it writes."""
    ctx = WriteContext(tmp_path, upstream=load_upstream(), certificates=load_certificates())
    write_markdown(_sample_report(), ctx)
    text = (tmp_path / "compat.md").read_text()
    sidecar = (tmp_path / CELL_DETAILS_FILE).read_text()
    assert COMPAT_BUDGET < GITHUB_BODY_LIMIT and len(text) <= COMPAT_BUDGET, len(text)
    assert f"]({CELL_DETAILS_FILE})" in text and "## Where it is fixed" in text and "## Verdict grid" in text
    assert "<summary><code>sglang-0.5.11</code>" in sidecar and "## SGLang per-version facts" in sidecar
    assert len((SAMPLE / "compat.md").read_text()) <= COMPAT_BUDGET


def _synthetic(cells: int, cases: int):
    """A matrix of `cells` cells x `cases` cases with long reasons, frames and log tails (as benchmarks/
    bench_report_scale.py builds it)."""
    columns = tuple(CaseColumn(f"case{i:02d}", "failure" if i < 5 else "fix", f"synthetic case {i}") for i in range(cases))
    frames = ("flashinfer/jit/core.py:169:register", "flashinfer/jit/cpp_ext.py:69:get_cuda_version")
    reports = []
    for c in range(cells):
        axes = {"sglang": ("0.5.8", "0.5.12", "0.5.23")[c % 3], "flashinfer-python": f"0.6.{c % 20}",
                "torch": ("2.9.1", "2.11.0")[c % 2], "python": "3.12"}
        entries = {col.id: Entry("reproduced" if (c + k) % 3 else "fixed", "gb0007 core.py:169:register", "a reason " * 8,
                                 "gb0007", frames[c % 2], "Attempted to call function marked as skipped", frames * 2,
                                 "sim-sm120", True, "simulated SM120", 0.5) for k, col in enumerate(columns)}
        reports.append(CellReport(f"cell-{c:03d}", f"synthetic {c}", "ran", axes, dict(axes), entries,
                                  log_tail="log line\n" * 40, simulated=True, device="simulated SM120"))
    return assemble("2026-12-01T00:00:00+00:00", "0", {}, columns, {}, reports)


def test_a_matrix_ten_times_larger_still_fits_and_loses_no_cell():
    """500 cells x 15 cases: compat.md stays within budget (the grid moves out too) and the sidecar names every cell."""
    report = _synthetic(500, 15)
    text, sidecar = split_markdown(report, load_upstream(), render_section(load_certificates()))
    assert len(text) <= COMPAT_BUDGET and sidecar is not None
    assert "## Verdict grid" in sidecar and "## Verdict grid" not in text and "the verdict grid" in text
    assert all(f"cell-{c:03d}" in sidecar for c in range(500))


def test_a_small_matrix_stays_whole_and_leaves_no_stale_sidecar(tmp_path):
    """A report that fits keeps every section inline; writing it after a large one removes the old sidecar."""
    publish(_synthetic(500, 15), tmp_path, names=("markdown",), certificates=())
    assert (tmp_path / CELL_DETAILS_FILE).exists()
    publish(_synthetic(3, 4), tmp_path, names=("markdown",), certificates=())
    text = (tmp_path / "compat.md").read_text()
    assert "<details>" in text and "## Verdict grid" in text and not (tmp_path / CELL_DETAILS_FILE).exists()


def test_cannot_run_cells_with_one_reason_are_one_line():
    """The five FlashInfer 0.4.x cells share one measured reason: one line naming the five, not five bullets."""
    text, _ = split_markdown(_sample_report_marked(), load_upstream())
    section = text.split("## Cells that cannot run", 1)[1].split("\n## ", 1)[0]
    bullets = [ln for ln in section.splitlines() if ln.startswith("- ")]
    assert len(bullets) == 1 and all(f"`sglang-{v}`" in bullets[0] for v in ("0.5.3.post2", "0.5.4", "0.5.4.post2"))


def _sample_report_marked():
    from pcgkit.matrix.uninstallable import load_uninstallable
    from pcgkit.report.annotations import mark_expected

    return mark_expected(_sample_report(), load_uninstallable())
