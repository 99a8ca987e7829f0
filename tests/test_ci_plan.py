"""`pcgkit ci`'s planning (pure): jobs per cell x runner class from the matrix plan, runner labels, limits."""

from __future__ import annotations

import pytest

from pcgkit.ci.plan import MAX_JOBS_PER_MATRIX, CiPlanError, parse_runner_labels, plan_ci
from pcgkit.matrix.cells import EXISTING, Cell

CELLS = [Cell(id="seed", flashinfer="0.6.1", torch="2.9.1"), Cell(id="fi-0.7.4", flashinfer="0.7.4", torch="2.14.1", timeout_s=600),
         Cell(id="here", kind=EXISTING, interpreter="/home/me/.venv/bin/python")]
SM120 = {"sm120": ("self-hosted", "linux", "sm120")}


def test_simulated_jobs_on_hosted_runners_with_the_venv_backend():
    """Without runner labels: one hosted group, `-m cpu_sim`, venv backend, no hardware requirement."""
    plan = plan_ci(CELLS)
    assert [g.id for g in plan.groups] == ["simulated"]
    job = plan.groups[0].jobs[0]
    assert plan.groups[0].runner.labels == ("ubuntu-latest",)
    assert job.command == ("pcgkit", "matrix", "--cell", "seed", "--reports", "pcgkit-out", "--jobs", "1",
                           "--timeout", "1800", "-m", "cpu_sim", "--backend", "venv")
    assert job.artifact == "cell-seed-sim-sm120" and job.torch == "2.9.1"


def test_sm120_jobs_run_docker_with_all_gpus_and_require_the_hardware():
    """A labelled sm120 runner class: docker backend, --gpus all, -m sm120, --require-hardware sm120."""
    plan = plan_ci(CELLS, SM120)
    group = next(g for g in plan.groups if g.id == "sm120")
    assert group.runner.labels == ("self-hosted", "linux", "sm120") and not group.runner.hosted
    command = group.jobs[0].command
    for pair in (("--backend", "docker"), ("--gpus", "all"), ("-m", "sm120"), ("--require-hardware", "sm120")):
        i = command.index(pair[0])
        assert command[i + 1] == pair[1]
    assert {j.artifact for j in plan.jobs} == {"cell-seed-sim-sm120", "cell-fi-0.7.4-sim-sm120", "cell-seed-sm120", "cell-fi-0.7.4-sm120"}


def test_existing_interpreter_cells_are_excluded_with_the_reason():
    """A cell naming the planning machine's interpreter gets no CI job, and the plan says why."""
    plan = plan_ci(CELLS)
    assert [c for c, _ in plan.excluded] == ["here"] and "/home/me/.venv/bin/python" in plan.excluded[0][1]
    assert "here" in {j.cell_id for j in plan_ci(CELLS, local=True).jobs}


def test_timeouts_follow_the_cell_and_gpu_jobs_allow_an_image_build():
    """A cell's own timeout sets its job limit; GPU jobs get extra minutes for the first image build."""
    plan = plan_ci(CELLS, SM120)
    minutes = {(j.cell_id, j.runner.id): j.timeout_minutes for j in plan.jobs}
    assert minutes[("fi-0.7.4", "hosted")] < minutes[("seed", "hosted")] < minutes[("seed", "sm120")]
    assert "600" in next(j for j in plan.jobs if j.cell_id == "fi-0.7.4").command


def test_hardware_cells_limit_only_the_gpu_jobs():
    """--hardware-cell keeps the simulation on every cell and real hardware on the chosen ones."""
    plan = plan_ci(CELLS, SM120, hardware_cells=["seed"])
    assert sorted((j.cell_id, j.runner.id) for j in plan.jobs) == [("fi-0.7.4", "hosted"), ("seed", "hosted"), ("seed", "sm120")]
    with pytest.raises(CiPlanError, match="nope"):
        plan_ci(CELLS, SM120, hardware_cells=["nope"])


def test_more_cells_than_one_matrix_allows_split_into_groups():
    """GitHub runs at most 256 jobs per matrix: a larger sweep becomes simulated, simulated-2, ..."""
    many = [Cell(id=f"c{i}", flashinfer="0.6.1", torch="2.9.1") for i in range(MAX_JOBS_PER_MATRIX + 3)]
    plan = plan_ci(many)
    assert [(g.id, len(g.jobs)) for g in plan.groups] == [("simulated", MAX_JOBS_PER_MATRIX), ("simulated-2", 3)]


@pytest.mark.parametrize("bad", ["sm120", "sim-sm120=ubuntu-latest", "tpu=self-hosted", "gpu="])
def test_runner_labels_errors_name_the_choices(bad):
    """Only real-hardware targets take labels, and a label list is required."""
    with pytest.raises(CiPlanError, match="TARGET one of gpu, sm120"):
        parse_runner_labels([bad])


def test_runner_labels_parse():
    """'gpu=self-hosted, gpu' becomes the label tuple, whitespace dropped."""
    assert parse_runner_labels(["gpu=self-hosted, gpu", "sm120=a"]) == {"gpu": ("self-hosted", "gpu"), "sm120": ("a",)}
