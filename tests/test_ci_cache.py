"""The hosted jobs' uv cache against GitHub's 10 GB per repository: one entry per (torch, build), each the
size measured in fixtures/measurements/uv-cache-size.json (benchmarks/uv_cache_size.py), pruned before it is
saved; `pcgkit ci github` refuses a plan whose entries would not fit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pcgkit import resources
from pcgkit.ci import costs
from pcgkit.ci.github import render_workflow
from pcgkit.ci.plan import plan_ci
from pcgkit.cli import main
from pcgkit.matrix.cells import TORCH_BUILD_CPU, TORCH_BUILD_CUDA, TORCH_BUILDS, Cell
from pcgkit.matrix.pins import DEFAULT_PINS_FILE, load_pins
from pcgkit.matrix.plan import DEFAULT_MATRIX_FILE, load_matrix, plan

MEASURED = json.loads(resources.fixture(costs.UV_CACHE_MEASUREMENTS).read_text())
CELLS = [Cell("a", torch="2.9.1"), Cell("b", torch="2.9.1", python="3.11"), Cell("c", torch="2.13.0"), Cell("d")]


def default_plan(build: str):
    return plan_ci(plan(load_matrix(DEFAULT_MATRIX_FILE), load_pins(DEFAULT_PINS_FILE)), hosted_torch_build=build)


def test_every_torch_build_has_a_measurement_with_its_command_date_and_machine():
    """Both builds were measured (before and after `uv cache prune --ci`), each record saying how, when and where."""
    assert {m["torch_build"] for m in MEASURED["measurements"]} == set(TORCH_BUILDS)
    for record in MEASURED["measurements"]:
        assert record["command"] and record["date"] and record["machine"], record["label"]
        assert record["before_prune"]["archived_bytes"] > 50 * record["after_prune_ci"]["archived_bytes"] > 0


@pytest.mark.parametrize("build", TORCH_BUILDS)
def test_the_default_matrix_fits_githubs_cache_with_the_pruned_sizes(build):
    """Every planned (torch, build) entry at its measured pruned size, two generations, stays under 10 GB."""
    budget = costs.cache_budget(default_plan(build), costs.measured_bytes_per_build(MEASURED))
    assert len(budget.keys) >= 5 and not budget.over, budget.describe()


def test_unpruned_the_default_matrix_would_overflow_the_cache():
    """Saved as installed (no prune), the CUDA entries alone exceed 10 GB: the check sees it and the prune is needed."""
    unpruned = costs.measured_bytes_per_build(MEASURED, saved="before_prune")
    budget = costs.cache_budget(default_plan(TORCH_BUILD_CUDA), unpruned)
    assert budget.over and budget.planned_bytes > costs.GITHUB_CACHE_LIMIT_BYTES, budget.describe()


def test_one_cache_entry_per_torch_version_and_build_of_the_hosted_jobs():
    """Pythons share an entry, GPU jobs keep none (their runner keeps its disk), a cell without torch pins one 'none'."""
    ci_plan = plan_ci(CELLS, {"sm120": ("self-hosted", "sm120")}, hosted_torch_build=TORCH_BUILD_CPU)
    assert costs.cache_keys(ci_plan) == (("2.13.0", "cpu"), ("2.9.1", "cpu"), ("none", "cpu"))
    with pytest.raises(costs.CacheBudgetError, match="no uv cache measurement for torch build cpu"):
        costs.cache_budget(ci_plan, {"cuda": 1})


def test_workflow_prunes_before_the_nightly_save_and_keys_by_torch_and_build():
    """The prune runs exactly when the save does, just before it; the key names the torch version and build."""
    steps = render_workflow(plan_ci(CELLS, hosted_torch_build=TORCH_BUILD_CPU))["jobs"]["simulated"]["steps"]
    names = [s.get("name", "") for s in steps]
    prune, save = steps[names.index("Prune uv's cache for saving (uv cache prune --ci)")], steps[names.index("Save uv's cache (nightly only)")]
    assert names.index("Save uv's cache (nightly only)") == names.index("Prune uv's cache for saving (uv cache prune --ci)") + 1
    assert prune["if"] == save["if"] and "uv cache prune --ci" in prune["run"]
    restore = next(s for s in steps if s.get("id") == "uv-cache")
    assert restore["with"]["key"].startswith("uv-torch-${{ matrix.torch }}-${{ matrix.torch-build }}-")
    run = next(s for s in steps if s.get("name") == "Run the cell")
    assert "--torch-build cpu" in run["run"] and run["env"]["PCGKIT_TORCH_CPU_INDEX"] == "${{ vars.PCGKIT_TORCH_CPU_INDEX }}"
    cuda_steps = render_workflow(plan_ci(CELLS))["jobs"]["simulated"]["steps"]
    assert not any("--torch-build" in s.get("run", "") for s in cuda_steps)


def test_ci_github_refuses_a_plan_over_the_budget_and_writes_nothing(monkeypatch, tmp_path: Path, capsys):
    """With entries measured at 3 GB each, the default plan does not fit: a one-line refusal, no workflow file."""
    heavy = {"measurements": [{**m, "after_prune_ci": {"raw_bytes": 0, "archived_bytes": 3 * 10**9}}
                              for m in MEASURED["measurements"]]}
    real_fixture = resources.fixture
    monkeypatch.setattr(resources, "fixture", lambda name: _write(tmp_path / "m.json", heavy)
                        if name == costs.UV_CACHE_MEASUREMENTS else real_fixture(name))
    out = tmp_path / "wf.yml"
    assert main(["ci", "github", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "over the limit" in err and "of GitHub's 10.0 GB" in err and not out.exists()
    monkeypatch.undo()
    assert main(["ci", "github", "--out", str(out)]) == 0 and out.is_file()
    assert "uv cache: " in capsys.readouterr().out


def _write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_simulated_jobs_keep_the_cuda_build_while_the_cpu_build_is_measured_to_answer_differently():
    """The hosted default stays cuda as long as a recorded CPU-vs-CUDA pair disagrees (re-measure before flipping it)."""
    verdicts = json.loads(resources.fixture("measurements/torch-build-verdicts.json").read_text())
    pairs = verdicts["pairs"]
    assert pairs and all(p["cuda"]["status"] == "ran" and p["date"] and p["command"] for p in pairs)
    assert any(not p["same"] for p in pairs) and any(p["same"] for p in pairs)  # the data shows both outcomes
    assert {j.torch_build for j in plan_ci(CELLS).jobs} == {TORCH_BUILD_CUDA}
