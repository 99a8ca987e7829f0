"""Cells narrowed to one SGLang release's own cases (scope sglang-level): run plan, accounting, report."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from pcgkit.catalog import Family, all_modes, modes_in_scope, modes_of
from pcgkit.errors import Interrupted
from pcgkit.jobs.run import RunPlan, interrupted_results, plan_pytest_argv
from pcgkit.matrix.cells import SCOPE_SGLANG_LEVEL, Cell
from pcgkit.matrix.outcome import RAN, CellOutcome
from pcgkit.report.compat import build_compat
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import CaseResult


def test_sglang_level_scope_is_the_sglang_and_e2e_families():
    """The scope runs exactly the cases that import the cell's own sglang; 'all' is every default case."""
    default = set(all_modes())  # opt-in cases (the sweep, preflight-launch) run only when asked
    assert set(modes_in_scope(SCOPE_SGLANG_LEVEL)) == (set(modes_of(Family.SGLANG)) | set(modes_of(Family.E2E))) & default
    assert modes_in_scope("all") == all_modes()


def test_run_argv_passes_the_scope_only_when_narrowed(tmp_path: Path):
    """pytest gets --pcgkit-scope for a narrowed cell, nothing for a full one (its argv is unchanged)."""
    narrowed = RunPlan("python", tmp_path, 60, 30, scope=SCOPE_SGLANG_LEVEL)
    assert "--pcgkit-scope=sglang-level" in plan_pytest_argv(narrowed)
    assert not any(a.startswith("--pcgkit-scope") for a in plan_pytest_argv(RunPlan("python", tmp_path, 60, 30)))


def test_a_narrowed_cell_owes_only_its_scope(tmp_path: Path):
    """The matrix command hands each scope its modes: a sglang-level cell's missing or interrupted rows are
    its own cases, never the FlashInfer-only ones it does not run."""
    import argparse

    from pcgkit.commands.matrix import backend_config

    args = argparse.Namespace(reports=str(tmp_path), envs=str(tmp_path / "envs"), timeout=60.0)
    config = backend_config(args)
    assert config.modes_for(SCOPE_SGLANG_LEVEL) == tuple(modes_in_scope(SCOPE_SGLANG_LEVEL))
    assert config.modes_for("all") == tuple(all_modes())
    plan = RunPlan("python", tmp_path, 60, 30, scope=SCOPE_SGLANG_LEVEL, expected_modes=config.modes_for(SCOPE_SGLANG_LEVEL))
    interrupted_results(plan, Interrupted(signal.SIGTERM))
    rows = json.loads(plan.files.results_path.read_text())["results"]
    assert {r["mode"] for r in rows} == set(modes_in_scope(SCOPE_SGLANG_LEVEL))


def test_report_leaves_out_of_scope_columns_blank_not_error():
    """A sglang-level cell says nothing about FlashInfer-only cases: no entry (blank), never 'error'."""
    cell = Cell("sglang-0.5.9", sglang="0.5.9", flashinfer="0.6.3", torch="2.9.1", scope=SCOPE_SGLANG_LEVEL)
    result = CaseResult(mode="sglang-compile-sm120", variant="sim-sm120", verdict=Verdict.REPRODUCED, reason="r",
                        device={"label": "simulated SM120", "simulated": True}, versions={}, duration_s=1.0)
    full = Cell("fi-0.6.3", flashinfer="0.6.3", torch="2.9.1", covers_sglang=("0.5.9",))
    mode1 = CaseResult(mode="mode1", variant="sim-sm120", verdict=Verdict.REPRODUCED, reason="r",
                       device={"label": "simulated SM120", "simulated": True}, versions={}, duration_s=1.0)
    report = build_compat([CellOutcome(cell, RAN, 1.0, results=(result,)), CellOutcome(full, RAN, 1.0, results=(mode1,))],
                          created="2026-12-01T00:00:00+00:00")
    narrowed = next(c for c in report.cells if c.id == "sglang-0.5.9")
    assert narrowed.scope == SCOPE_SGLANG_LEVEL and "mode1" not in narrowed.entries
    assert set(narrowed.entries) <= set(modes_in_scope(SCOPE_SGLANG_LEVEL))


def test_compat_md_over_githubs_limit_moves_cell_details_to_a_sidecar(tmp_path: Path):
    """A report whose compat.md would pass 65,536 characters is written without the cell details, which go
    to compat-cells.md (linked); a small one stays whole and leaves no stale sidecar."""
    from pcgkit.report.markdown import CELL_DETAILS_FILE, GITHUB_BODY_LIMIT
    from pcgkit.report.model import from_json
    from pcgkit.report.writers import WriteContext, write_markdown

    sample = Path(__file__).parents[1] / "reports" / "samples" / "matrix-2026-12-01" / "compat.json"
    big = from_json(json.loads(sample.read_text()))
    ctx = WriteContext(tmp_path)
    write_markdown(big, ctx)
    text = (tmp_path / "compat.md").read_text()
    assert len(text) <= GITHUB_BODY_LIMIT and f"]({CELL_DETAILS_FILE})" in text
    assert "<details>" in (tmp_path / CELL_DETAILS_FILE).read_text() and "<details>" not in text
    write_markdown(build_compat([], created="2026-12-01T00:00:00+00:00"), ctx)
    assert not (tmp_path / CELL_DETAILS_FILE).exists()
