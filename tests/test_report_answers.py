"""What readers ask first (pcgkit.report.answers) and compat.md's size: version order on every axis,
no-verdict cases set apart, flips listed per run, compat.md under GitHub's body limit with its details moved."""

from __future__ import annotations

from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import RAN, CellOutcome
from pcgkit.report.answers import flips_across_runs, unjudged_cases, version_order
from pcgkit.report.compat import build_compat
from pcgkit.report.history import RunSummary
from pcgkit.report.markdown import CELL_DETAILS_FILE, GITHUB_BODY_LIMIT
from pcgkit.report.writers import publish
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.modes import MODES
from pcgkit.verdicts.result import CaseResult


def outcome(cell: Cell, mode1: Verdict, log: str = "") -> CellOutcome:
    results = tuple(CaseResult(m, "sim-sm120", mode1 if m == "mode1" else Verdict.SKIPPED, "r", {"label": "sim", "simulated": True},
                               {"flashinfer-python": cell.flashinfer or ""}, 1.0) for m in MODES)
    return CellOutcome(cell, RAN, 5.0, results=results, log_tail=log)


def test_rows_in_version_order_not_text_order():
    """0.6.3 sorts before 0.6.12 and FlashInfer-only cells before SGLang releases."""
    cells = [Cell("fi-0.6.12", flashinfer="0.6.12", torch="2.11.0"), Cell("fi-0.6.3", flashinfer="0.6.3", torch="2.9.1"),
             Cell("sg-0.5.10", sglang="0.5.10", flashinfer="0.6.7", torch="2.9.1"), Cell("sg-0.5.9", sglang="0.5.9", flashinfer="0.6.3", torch="2.9.1")]
    report = build_compat([outcome(c, Verdict.REPRODUCED) for c in cells], created="2026-01-01T00:00:00+00:00")
    assert [c.id for c in version_order(report.cells)] == ["fi-0.6.3", "fi-0.6.12", "sg-0.5.9", "sg-0.5.10"]


def test_cases_without_any_verdict_are_set_apart():
    """A case skipped in every cell is unjudged; a case reproduced somewhere is not."""
    report = build_compat([outcome(Cell("a", flashinfer="0.6.1", torch="2.9.1"), Verdict.REPRODUCED)], created="2026-01-01T00:00:00+00:00")
    unjudged = unjudged_cases(report)
    assert "mode1" not in unjudged and set(unjudged) == {m for m in MODES if m != "mode1"} & {c.id for c in report.cases}


def test_flips_across_runs_newest_first_and_only_runs_that_flipped():
    """Three runs, one flip between the 2nd and 3rd: one entry naming both runs and the change."""
    runs = [RunSummary(f"2026-01-0{d}", "0", {"a": {"mode1": v}}, {"a": True}) for d, v in ((1, "reproduced"), (2, "reproduced"), (3, "fixed"))]
    flips = flips_across_runs(runs)
    assert len(flips) == 1 and flips[0].created == "2026-01-03" and flips[0].previous == "2026-01-02"
    assert flips[0].changes == (("a", "mode1", "reproduced", "fixed"),)


def test_compat_md_stays_under_githubs_limit_and_moves_details_to_a_sidecar(tmp_path):
    """Cells with long log tails push the full text past 65,536 characters: compat.md drops the details, points
    to compat-cells.md, which holds every cell; a small report keeps them inline and removes the stale sidecar."""
    big = [outcome(Cell(f"fi-0.6.{n}", flashinfer=f"0.6.{n}", torch="2.9.1"), Verdict.REPRODUCED, log="x" * 6000) for n in range(14)]
    publish(build_compat(big, created="2026-01-01T00:00:00+00:00"), tmp_path, names=("markdown",))
    text = (tmp_path / "compat.md").read_text()
    assert len(text) <= GITHUB_BODY_LIMIT and CELL_DETAILS_FILE in text
    assert all(f"fi-0.6.{n}" in (tmp_path / CELL_DETAILS_FILE).read_text() for n in range(14))
    publish(build_compat(big[:1], created="2026-01-02T00:00:00+00:00"), tmp_path, names=("markdown",))
    assert "<details>" in (tmp_path / "compat.md").read_text() and not (tmp_path / CELL_DETAILS_FILE).exists()


def test_step_summary_has_the_grid_and_the_flips_and_flips_md_only_when_something_flipped(tmp_path):
    """Two runs where mode1 goes reproduced -> fixed: step-summary.md holds the grid and that flip; flips.md
    says it; a third identical run leaves flips.md empty (no upstream comment)."""
    cell = Cell("seed", flashinfer="0.6.1", torch="2.9.1")
    for day, verdict in ((1, Verdict.REPRODUCED), (2, Verdict.FIXED), (3, Verdict.FIXED)):
        publish(build_compat([outcome(cell, verdict)], created=f"2026-01-0{day}T00:00:00+00:00"), tmp_path,
                names=("step-summary",))
        if day == 2:
            summary = (tmp_path / "step-summary.md").read_text()
            assert "## Verdict grid" in summary and "`seed` mode1: reproduced → fixed" in summary
            assert "`seed` mode1: reproduced → fixed" in (tmp_path / "flips.md").read_text()
    assert (tmp_path / "flips.md").read_text() == "" and "No verdict changed." in (tmp_path / "step-summary.md").read_text()


def test_run_summary_folds_skipped_rows_into_one_line_per_target():
    """summary.md: verdict rows only; the skipped cases of a target are one line with the reason, not a row each."""
    from pcgkit.report.summary import markdown_summary

    def result(mode: str, variant: str, verdict: Verdict) -> CaseResult:
        return CaseResult(mode, variant, verdict, "requires SM120; found no CUDA device" if verdict is Verdict.SKIPPED else "r",
                          {"label": "sim", "simulated": variant == "sim-sm120"}, {}, 1.0)

    results = [result(m, v, Verdict.SKIPPED if v != "sim-sm120" else Verdict.REPRODUCED)
               for m in ("mode1", "mode2", "mode3") for v in ("sim-sm120", "sm120", "gpu")]
    text = markdown_summary(results, {"versions": {}})
    rows = [ln for ln in text.splitlines() if ln.startswith("| mode") and "| target |" not in ln]
    assert len(rows) == 3 and all("sim-sm120" in r for r in rows)
    assert "- sm120: 3 cases (mode1, mode2, mode3): requires SM120; found no CUDA device" in text
