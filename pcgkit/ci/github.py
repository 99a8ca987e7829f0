"""A CiPlan as a GitHub Actions workflow: `render_workflow` (the document, pure) and `to_yaml`.

Choices a reviewer should know (docs/ci.md says why for each; each also has a comment here or in the generated file):
one matrix job per runner class (`fail-fast: false`); least privilege (`pages: write` + `id-token: write` only for the
deploy job); actions pinned by commit SHA (fixtures/ci_actions.toml); the history read back over HTTP from the
published site, and a failed read other than 404 stops the publish; uv and Pythons from PyPI / uv, matrix values
through `env:` only (no injection); uv's cache saved only by the scheduled run, after `uv cache prune --ci`
(pcgkit.ci.costs).
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from pcgkit import resources
from pcgkit.ci.plan import ARTIFACTS_DIR, HISTORY_RUNS_KEPT, REPORT_ARTIFACT, CellJob, CiPlan, JobGroup
from pcgkit.matrix.cells import TORCH_BUILD_CUDA
from pcgkit.matrix.torchbuild import INDEX_VAR as TORCH_CPU_INDEX_VAR
from pcgkit.report.site import FLIPS_FILE, HISTORY_FILE, OPTIONAL_SITE_FILES, SITE_FILES, STEP_SUMMARY_FILE
from pcgkit.util import templating
from pcgkit.util.tomlfile import tomllib

ACTIONS_FILE = "ci_actions.toml"
KIT_VENV = ".pcgkit-ci"
KIT_PYTHON = "3.12"
UV_REQUIREMENT = "uv>=0.8"
REPORT_TIMEOUT_MINUTES = 30
ARTIFACT_RETENTION_DAYS = 14
DEFAULT_CRON = "17 3 * * *"  # nightly, 03:17 UTC (off the top of the hour, when GitHub's queue is long)
SITE_DIR = "site"
SITE_URL_VAR, FLIP_ISSUE_VAR, FLIP_TOKEN_SECRET = "PCGKIT_SITE_URL", "PCGKIT_FLIP_ISSUE", "PCGKIT_FLIP_TOKEN"
CELL_VAR, TIMEOUT_VAR, PYTHON_VAR = "PCGKIT_CELL", "PCGKIT_CELL_TIMEOUT_S", "PCGKIT_CELL_PYTHON"
UV_CACHE = "~/.cache/uv"
# GitHub's own runner labels: actionlint knows them; any other label must be declared to it.
GITHUB_LABELS = frozenset({"self-hosted", "linux", "x64", "arm64", "ubuntu-latest", "ubuntu-24.04", "ubuntu-22.04"})


def load_actions(text: str | None = None) -> dict[str, dict[str, str]]:
    """fixtures/ci_actions.toml: key -> {repo, tag, sha[, path]}. Pure given the text."""
    data = tomllib.loads(text if text is not None else resources.fixture(ACTIONS_FILE).read_text())
    for key, pin in data.items():
        if len(pin.get("sha", "")) != 40:
            raise ValueError(f"{ACTIONS_FILE} [{key}]: sha must be a 40-hex commit, got {pin.get('sha')!r}")
    return data


def uses(actions: Mapping[str, Mapping[str, str]], key: str) -> str:
    pin = actions[key]
    return f"{pin['repo']}{'/' + pin['path'] if pin.get('path') else ''}@{pin['sha']}"


def _shell_command(job: CellJob) -> str:
    """A job's pcgkit argv as a shell line reading the cell id and limit from the step's env. Pure."""
    words = []
    for word in job.command:
        if word == job.cell_id:
            words.append(f'"${CELL_VAR}"')
        elif word == f"{job.timeout_s:g}":
            words.append(f'"${TIMEOUT_VAR}"')
        elif word == "pcgkit":
            words.append(f"{KIT_VENV}/bin/pcgkit")
        else:
            words.append(shlex.quote(word))
    return " ".join(words)


def _install_kit(cell_python_var: str = "", gpu_runner: bool = False) -> str:
    return templating.render("ci/install.sh.j2", uv_requirement=UV_REQUIREMENT, kit_python=KIT_PYTHON,
                             kit_venv=KIT_VENV, cell_python_var=cell_python_var, gpu_runner=gpu_runner)


def _cell_job(group: JobGroup, actions: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    runner = group.runner
    include = [{"cell": j.cell_id, "python": j.python, "torch": j.torch or "none", "torch-build": j.torch_build,
                "timeout-minutes": j.timeout_minutes, "timeout-s": f"{j.timeout_s:g}", "artifact": j.artifact}
               for j in group.jobs]
    install_env = {"PIP_BREAK_SYSTEM_PACKAGES": "1", PYTHON_VAR: "${{ matrix.python }}"}
    steps: list[dict[str, Any]] = [{"uses": uses(actions, "checkout"), "with": {"persist-credentials": False}}]
    if runner.hosted:
        # Restored on every run, saved by the nightly only, pruned first: one entry per torch version and build.
        prefix = "uv-torch-${{ matrix.torch }}-${{ matrix.torch-build }}-"
        steps.append({"name": "Restore uv's cache (this torch)", "id": "uv-cache", "uses": uses(actions, "cache-restore"),
                      "with": {"path": UV_CACHE, "key": prefix + "${{ hashFiles('fixtures/locks/*.txt') }}",
                               "restore-keys": prefix}})
    # (A self-hosted runner keeps uv's cache and the docker engine's layers on its own disk.)
    steps.append({"name": "Install uv, Python and pcgkit", "env": install_env,
                  "run": _install_kit(PYTHON_VAR, gpu_runner=not runner.hosted)})
    run_env = {CELL_VAR: "${{ matrix.cell }}", TIMEOUT_VAR: "${{ matrix.timeout-s }}"}
    if any(j.torch_build != TORCH_BUILD_CUDA for j in group.jobs):  # a mirror of PyTorch's CPU wheels, if set
        run_env[TORCH_CPU_INDEX_VAR] = f"${{{{ vars.{TORCH_CPU_INDEX_VAR} }}}}"
    steps.append({"name": "Run the cell", "env": run_env, "run": _shell_command(group.jobs[0]) + "\n"})
    steps.append({"name": "Upload the cell folder", "if": "always()", "uses": uses(actions, "upload-artifact"), "with": {
        "name": "${{ matrix.artifact }}", "path": f"{group.jobs[0].cell_folder.rsplit('/', 1)[0]}/${{{{ matrix.cell }}}}/",
        "if-no-files-found": "error", "retention-days": ARTIFACT_RETENTION_DAYS}})
    if runner.hosted:
        save_if = "github.event_name == 'schedule' && steps.uv-cache.outputs.cache-hit != 'true'"
        # uv's documented CI practice: keep only wheels built from source (pre-built ones download again
        # as fast as a restore), so each entry stays a few MB and the sum fits the repository's 10 GB.
        steps.append({"name": "Prune uv's cache for saving (uv cache prune --ci)", "if": save_if,
                      "run": "python3 -m uv cache prune --ci\n"})
        steps.append({"name": "Save uv's cache (nightly only)", "uses": uses(actions, "cache-save"), "if": save_if,
                      "with": {"path": UV_CACHE, "key": "${{ steps.uv-cache.outputs.cache-primary-key }}"}})
    return {
        "name": _job_title(dataclasses.replace(group.jobs[0], cell_id="${{ matrix.cell }}")),
        "runs-on": list(runner.labels),
        "timeout-minutes": "${{ matrix.timeout-minutes }}",
        "strategy": {"fail-fast": False, "matrix": {"include": include}},
        # GitHub tells a job its runner's name, not the labels that chose it: where.py reads these.
        "env": {"PCGKIT_RUNNER_LABELS": ",".join(runner.labels)},
        "steps": steps,
    }


def gpu_jobs(plan: CiPlan) -> list[CellJob]:
    """The jobs on self-hosted (GPU) runners: the report waits for them only so long. Pure."""
    return [j for g in plan.groups if not g.runner.hosted for j in g.jobs]


def gpu_wait_minutes(plan: CiPlan, override: int | None = None) -> int:
    """How long the report job waits for the GPU jobs (0: none planned): by default long enough for the slowest
    one that starts at once (an offline runner never starts it); PCGKIT_GPU_WAIT_MINUTES overrides at run time."""
    jobs = gpu_jobs(plan)
    if not jobs:
        return 0
    return override if override is not None else max(j.timeout_minutes for j in jobs)


def _gpu_script(plan: CiPlan) -> str:
    """Wait (bounded) for this run's GPU jobs, take the artifacts that arrived, and name the rest `not run`
    with the job's state as the reason (reports/not-run.args, read by the report step)."""
    planned = "".join(f"{j.artifact}|{j.cell_id}@{j.runner.target.id}|{_job_title(j)}|{','.join(j.runner.labels)}\n"
                      for j in gpu_jobs(plan))
    return templating.render("ci/gpu_wait.sh.j2", planned=shlex.quote(planned), artifacts_dir=ARTIFACTS_DIR)


def _job_title(job: CellJob) -> str:
    """The job's name as GitHub shows it (the matrix job's `name:` with the cell filled in). Pure."""
    what = "simulated SM120" if job.runner.target.simulated else f"real {job.runner.target.id}"
    return f"{job.cell_id} ({what}, {job.runner.backend})"


def _report_script(plan: CiPlan) -> str:
    command = " ".join(shlex.quote(w) if w != "pcgkit" else f"{KIT_VENV}/bin/pcgkit" for w in plan.report_command)
    return templating.render("ci/report.sh.j2", command=command, artifacts_dir=ARTIFACTS_DIR, site_dir=SITE_DIR,
                             step_summary=STEP_SUMMARY_FILE, site_files=SITE_FILES,
                             optional_site_files=OPTIONAL_SITE_FILES)


def _report_job(plan: CiPlan, actions: Mapping[str, Mapping[str, str]], wait: int) -> dict[str, Any]:
    gpu_steps = [{"name": "Wait for the GPU jobs (bounded), take what arrived", "env": {
        "GH_TOKEN": "${{ github.token }}",
        "PCGKIT_GPU_WAIT_MINUTES": f"${{{{ vars.PCGKIT_GPU_WAIT_MINUTES || '{wait}' }}}}"}, "run": _gpu_script(plan)}] if wait else []
    return {
        "name": "Merge the cells into one report",
        # Only the hosted jobs: a self-hosted GPU runner that is offline would hold a `needs` for GitHub's
        # 24 h queue limit. The GPU jobs are waited for below, at most as long as the slowest may take.
        "needs": [g.id for g in plan.groups if g.runner.hosted],
        "if": "${{ !cancelled() }}",  # a red cell job still has a cell folder worth reporting
        "runs-on": "ubuntu-latest",
        "timeout-minutes": REPORT_TIMEOUT_MINUTES + wait,
        "permissions": {"contents": "read", **({"actions": "read"} if wait else {})},
        "outputs": {"site": "${{ steps.site.outcome }}"},  # the deploy job publishes only an uploaded site
        "steps": [
            {"uses": uses(actions, "checkout"), "with": {"persist-credentials": False}},
            {"name": "Install uv, Python and pcgkit", "env": {"PIP_BREAK_SYSTEM_PACKAGES": "1"}, "run": _install_kit()},
            {"name": "Download every cell folder", "uses": uses(actions, "download-artifact"),
             "with": {"pattern": "cell-*", "path": ARTIFACTS_DIR}},
            *gpu_steps,
            {"name": "Read the history back from the published site", "id": "history",
             "run": templating.render("ci/history.sh.j2", site_url_var=SITE_URL_VAR, history=HISTORY_FILE,
                                      keep=HISTORY_RUNS_KEPT - 1)},  # this run's line is appended by the report
            {"name": "pcgkit report --from every cell", "id": "report", "run": _report_script(plan)},
            {"name": "Comment upstream on a flip (opt-in)", "if": f"vars.{FLIP_ISSUE_VAR} != ''",
             "env": {"GH_TOKEN": f"${{{{ secrets.{FLIP_TOKEN_SECRET} }}}}", FLIP_ISSUE_VAR: f"${{{{ vars.{FLIP_ISSUE_VAR} }}}}"},
             "run": templating.render("ci/flip.sh.j2", flip_issue_var=FLIP_ISSUE_VAR,
                                      flip_token_secret=FLIP_TOKEN_SECRET, flips=FLIPS_FILE)},
            {"name": "Upload the report", "if": "always()", "uses": uses(actions, "upload-artifact"),
             "with": {"name": REPORT_ARTIFACT, "path": "reports/", "retention-days": ARTIFACT_RETENTION_DAYS}},
            # a red report (an error cell) still publishes; a failed history read never does
            {"name": "Upload the site for Pages", "uses": uses(actions, "upload-pages"), "with": {"path": f"{SITE_DIR}/"},
             "id": "site", "if": "${{ !cancelled() && steps.history.outcome == 'success' && steps.report.outcome != 'skipped' }}"},
        ],
    }


def _deploy_job(actions: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    return {
        "name": "Publish the dashboard",
        "needs": ["report"],
        "if": "${{ !cancelled() && needs.report.outputs.site == 'success' "
              "&& github.ref == format('refs/heads/{0}', github.event.repository.default_branch) }}",
        "runs-on": "ubuntu-latest",
        "timeout-minutes": 10,
        "permissions": {"pages": "write", "id-token": "write"},
        "environment": {"name": "github-pages", "url": "${{ steps.deployment.outputs.page_url }}"},
        "steps": [{"id": "deployment", "uses": uses(actions, "deploy-pages")}],
    }


def render_workflow(plan: CiPlan, name: str = "pcgkit matrix", cron: str = DEFAULT_CRON,
                    actions: Mapping[str, Mapping[str, str]] | None = None, gpu_wait: int | None = None) -> dict[str, Any]:
    """The workflow document (a dict, ready for YAML). Pure given `actions`. gpu_wait: minutes the report
    waits for GPU jobs (default: gpu_wait_minutes)."""
    actions = actions if actions is not None else load_actions()
    jobs: dict[str, Any] = {group.id: _cell_job(group, actions) for group in plan.groups}
    jobs["report"] = _report_job(plan, actions, gpu_wait_minutes(plan, gpu_wait))
    jobs["deploy"] = _deploy_job(actions)
    return {
        "name": name,
        "on": {"workflow_dispatch": {}, "schedule": [{"cron": cron}]},
        "permissions": {"contents": "read"},
        # one sweep at a time per branch; a running sweep finishes (its history is the next one's base)
        "concurrency": {"group": "pcgkit-matrix-${{ github.ref }}", "cancel-in-progress": False},
        "env": {SITE_URL_VAR: f"${{{{ vars.{SITE_URL_VAR} || format('https://{{0}}.github.io/{{1}}', "
                              "github.repository_owner, github.event.repository.name) }}"},
        "defaults": {"run": {"shell": "bash"}},
        "jobs": jobs,
    }


def actionlint_config(plan: CiPlan) -> str | None:
    """.github/actionlint.yaml declaring the runner labels actionlint does not know (yours); None when there are
    none. Pure."""
    labels = sorted({label for g in plan.groups for label in g.runner.labels if label not in GITHUB_LABELS})
    return templating.render("ci/actionlint.yaml.j2", labels=labels) if labels else None


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line scripts, so a `run:` reads as the shell it is."""

    def represent_str(self, value: str) -> yaml.Node:
        return self.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _Dumper.represent_str)


def to_yaml(document: dict[str, Any], plan: CiPlan, command: str,
            actions: Mapping[str, Mapping[str, str]] | None = None, notes: Sequence[str] = ()) -> str:
    """The workflow file's text: a header saying how it was made and what it leaves out, and each pinned
    action's release tag as a comment beside its SHA. Pure given `actions`."""
    actions = actions if actions is not None else load_actions()
    builds = sorted({j.torch_build for g in plan.groups if g.runner.hosted for j in g.jobs})
    header = templating.render(
        "ci/header.yml.j2", command=command, plan=plan, notes=notes, builds=builds,
        groups=", ".join(f"{g.id} on [{', '.join(g.runner.labels)}] ({len(g.jobs)})" for g in plan.groups),
        site_url_var=SITE_URL_VAR, flip_issue_var=FLIP_ISSUE_VAR, flip_token_secret=FLIP_TOKEN_SECRET,
        cpu_index_var=TORCH_CPU_INDEX_VAR if any(b != TORCH_BUILD_CUDA for b in builds) else "")
    body = yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=200, allow_unicode=True)
    tags = {uses(actions, key): pin["tag"] for key, pin in actions.items()}
    lines = [line + f" # {tags[line.split('uses: ', 1)[1]]}" if "uses: " in line and line.split("uses: ", 1)[1] in tags
             else line for line in body.splitlines()]
    return header + "\n".join(lines) + "\n"
