"""The nightly's cost: derived by code from the matrix's recorded cell times, one row per runner kind, and
the table's counts are the plan's own."""

from __future__ import annotations

import argparse

from lab.ci_costs import render_runner_plan, render_table
from pcgkit.ci.costs import (
    GPU_MEASUREMENTS,
    GpuMeasured,
    Measured,
    first_night_seconds,
    later_night_seconds,
    makespan,
    nightly_cost,
    runner_order,
)
from pcgkit.ci.github import gpu_wait_minutes, render_workflow
from pcgkit.ci.plan import plan_ci
from pcgkit.commands.ci import nightly_cost_of
from pcgkit.matrix import pins as pins_mod
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.plan import DEFAULT_MATRIX_FILE, planned_cells

SM120 = {"sm120": ("self-hosted", "linux", "sm120")}


def _default_cells() -> list[Cell]:
    return planned_cells(argparse.Namespace(matrix=str(DEFAULT_MATRIX_FILE), pins=str(pins_mod.DEFAULT_PINS_FILE), cell=None))


def test_table_counts_the_plans_cells_and_jobs_and_every_hosted_job_has_a_recorded_time():
    """The cost of the default plan (with SM120 runners) counts exactly the plan's cells and jobs; every hosted
    job's time comes from the committed matrix snapshot; the SM120 jobs from the GPU runner measurements."""
    cells = _default_cells()
    plan = plan_ci(cells, SM120)
    cost = nightly_cost_of(plan)
    assert cost.cells == len(cells) and cost.cell_jobs == len(plan.jobs) == 2 * len(cells)
    hosted, sm120 = cost.runners
    assert hosted.jobs == len(cells) and hosted.unmeasured == () and hosted.runner_minutes is not None
    assert sm120.runner_minutes is not None and sm120.unmeasured == () and sm120.jobs == len(cells)
    first, later = sm120.runner_minutes
    wall_first, wall_later = sm120.wall_minutes
    # one runner: the wall is the jobs' seconds added up (billing rounds each job up to a minute)
    assert first > later > 0 and first - sm120.jobs <= wall_first <= first and later - sm120.jobs <= wall_later <= later
    table = render_table(cost)
    assert table[0].startswith(f"{len(cells)} cells, {2 * len(cells)} cell jobs")
    assert f"| hosted [ubuntu-latest] | {len(cells)} ({len(cells)}) |" in "\n".join(table)


def test_runner_minutes_and_wall_follow_the_recorded_times_and_the_concurrency():
    """Each job is its cell's time plus the cold install, rounded up to a minute; the wall packs them onto the slots."""
    cells = [Cell("a", flashinfer="0.6.1", torch="2.9.1"), Cell("b", flashinfer="0.6.3", torch="2.9.1"),
             Cell("c", flashinfer="0.7.4", torch="2.14.1")]
    measured = Measured({"a": 100.0, "b": 200.0}, "test run", {"cuda": 20.0}, {"cuda": 5 * 10**9}, "test sizes")
    cost = nightly_cost(plan_ci(cells), measured, GPU, "cache line", gpu_wait_minutes=0, hosted_concurrency=1)
    (hosted,) = cost.runners
    assert hosted.runner_minutes == (2 + 4, 2 + 4) and hosted.wall_minutes == (6, 6)  # 120 s + 220 s, one slot
    assert hosted.unmeasured == ("c",) and "No recorded time (not counted above): hosted: c." in render_table(cost)
    assert makespan([5, 4, 3, 3], 2) == 8 and makespan([], 3) == 0


def test_gpu_wait_is_an_input_of_the_workflow_and_of_the_cost():
    """--gpu-wait-minutes sets the report's wait (still overridable by the repository variable) and the cost says it."""
    plan = plan_ci(_default_cells()[:2], SM120)
    assert gpu_wait_minutes(plan) == max(j.timeout_minutes for j in plan.jobs if not j.runner.hosted)
    report = render_workflow(plan, actions=None, gpu_wait=25)["jobs"]["report"]
    wait_step = next(s for s in report["steps"] if s.get("name", "").startswith("Wait for the GPU jobs"))
    assert wait_step["env"]["PCGKIT_GPU_WAIT_MINUTES"] == "${{ vars.PCGKIT_GPU_WAIT_MINUTES || '25' }}"
    assert "waits up to 25 min" in "\n".join(render_table(nightly_cost_of(plan, gpu_wait=25)))
    assert gpu_wait_minutes(plan_ci(_default_cells()[:2])) == 0


def gpu_case_seconds(results, variant: str = "gpu") -> float:
    """The summed durations of one target's cases that ran on a real device in a results.json."""
    return sum(float(r.get("duration_s") or 0.0) for r in results
               if r.get("variant") == variant and not (r.get("device") or {}).get("simulated", True))


GPU = GpuMeasured(flashinfer_cases_s=10.0, sglang_cases_s=100.0, run_overhead_s=20.0, base_s=300.0,
                  torch_layer_s=60.0, cell_layers_s=120.0, image_reuse_s=5.0, image_bytes=3 * 10**9, sources=("t",))


def test_one_gpu_runner_builds_the_base_once_and_each_torch_layer_once():
    """First night: base on the first job, a torch layer on the first job of each torch; later: reuse + cases."""
    cells = [Cell("b", flashinfer="0.6.3", torch="2.9.1"), Cell("s", sglang="0.5.8", flashinfer="0.6.1", torch="2.9.1"),
             Cell("a", flashinfer="0.6.1", torch="2.9.1"), Cell("c", flashinfer="0.7.4", torch="2.14.1")]
    jobs = plan_ci(cells, SM120).groups[1].jobs
    assert [j.cell_id for j in runner_order(jobs)] == ["a", "b", "s", "c"]  # by torch version, SGLang last in each
    assert first_night_seconds(jobs, GPU) == [300 + 60 + 120 + 30, 120 + 30, 120 + 130, 60 + 120 + 30]
    assert later_night_seconds(jobs, GPU) == [35, 35, 135, 35]
    table = render_runner_plan(jobs, GPU)
    assert table[-1] == "| | **4 jobs** | | | **19 min** | **4 min** | |"
    cost = nightly_cost(plan_ci(cells, SM120), Measured({}, "r", {}, {}, "s"), GPU, "c", gpu_wait_minutes=0)
    assert cost.runners[1].runner_minutes == (9 + 4 + 3 + 5, 1 + 1 + 1 + 3)


def test_gpu_case_sums_are_the_committed_samples_own():
    """fixtures/measurements/gpu-runner.json's case sums re-derive from the H200 samples it names."""
    import json

    from pcgkit import resources

    data = json.loads(resources.fixture(GPU_MEASUREMENTS).read_text())
    root = resources.workspace_root()
    for key in ("flashinfer", "sglang"):
        sample = json.loads((root / data["cases"][f"{key}_sample"]).read_text())
        assert round(gpu_case_seconds(sample["results"]), 3) == data["cases"][f"{key}_cases_s"]
    assert gpu_case_seconds([{"variant": "gpu", "duration_s": 9, "device": {"simulated": True}}]) == 0


def test_docs_sm120_night_is_the_default_plans_own():
    """docs/gpu-and-ci.md's one-runner table is render_runner_plan of the default plan's SM120 jobs, as committed."""
    import json

    from pcgkit import resources
    from pcgkit.ci.costs import gpu_measured_from

    gpu = gpu_measured_from(json.loads(resources.fixture(GPU_MEASUREMENTS).read_text()), "x")
    jobs = [j for g in plan_ci(_default_cells(), SM120).groups if not g.runner.hosted for j in g.jobs]
    page = (resources.workspace_root() / "docs" / "gpu-and-ci.md").read_text()
    block = page.split("<!-- generated:sm120-night -->\n")[1].split("\n<!-- /generated:sm120-night -->")[0]
    assert block == "\n".join(render_runner_plan(jobs, gpu))
