"""A CiPlan as a GitHub Actions workflow: `render_workflow` (the document, pure) and `to_yaml`.

Choices a reviewer should know (each also said in a comment of the generated file):
- one matrix job per runner class, `fail-fast: false`, `timeout-minutes` per cell from the plan;
- least privilege: `contents: read` at the top; `actions: read` only for the report job (it reads
  the previous run's history artifact); `pages: write` + `id-token: write` only for the deploy job;
- the previous run's history comes through the `gh` CLI (preinstalled on GitHub's runners,
  first-party, `GH_TOKEN` from the job's own token) rather than a third-party download action:
  nothing outside GitHub gets a token, and a missing artifact (first run, expired) is one message;
- matrix values reach shell steps through `env:`, never spliced into the script (no injection);
- uv's cache (astral-sh/setup-uv) keyed per torch version and not pruned, so the torch wheels
  (the expensive download) survive between runs on hosted runners; on a self-hosted GPU runner the
  torch layer is the docker engine's own cache of the cell image's torch-only layer.
"""

from __future__ import annotations

import shlex
from typing import Any

import yaml

from pcgkit.ci.plan import ARTIFACTS_DIR, CELLS_DIR, CellJob, CiPlan, JobGroup

ACTIONS = {  # major tags; pin to commit SHAs in your fork if your policy asks for it
    "checkout": "actions/checkout@v4",
    "setup-python": "actions/setup-python@v5",
    "setup-uv": "astral-sh/setup-uv@v6",
    "upload-artifact": "actions/upload-artifact@v4",
    "download-artifact": "actions/download-artifact@v4",
    "upload-pages": "actions/upload-pages-artifact@v3",
    "deploy-pages": "actions/deploy-pages@v4",
}
KIT_VENV = ".pcgkit-ci"
KIT_PYTHON = "3.12"
REPORT_TIMEOUT_MINUTES = 30
ARTIFACT_RETENTION_DAYS = 14
HISTORY_RETENTION_DAYS = 90
CELL_VAR, TIMEOUT_VAR = "PCGKIT_CELL", "PCGKIT_CELL_TIMEOUT_S"


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


def _cell_job(group: JobGroup) -> dict[str, Any]:
    runner = group.runner
    include = [
        {"cell": j.cell_id, "python": j.python, "torch": j.torch or "none", "timeout-minutes": j.timeout_minutes,
         "timeout-s": f"{j.timeout_s:g}", "artifact": j.artifact}
        for j in group.jobs
    ]
    steps: list[dict[str, Any]] = [{"uses": ACTIONS["checkout"], "with": {"persist-credentials": False}}]
    if runner.hosted:
        steps.append({"uses": ACTIONS["setup-python"], "with": {"python-version": "${{ matrix.python }}"}})
        steps.append({"uses": ACTIONS["setup-uv"], "with": {
            "enable-cache": True, "cache-suffix": "torch-${{ matrix.torch }}", "prune-cache": False,
            "cache-dependency-glob": "pyproject.toml\nfixtures/matrix.toml\nfixtures/sglang_requires.toml\n"}})
        install = f"uv venv --python {KIT_PYTHON} {KIT_VENV}\nuv pip install --python {KIT_VENV}/bin/python -e .\n"
    else:
        # A self-hosted runner keeps uv's cache and the docker engine's layers on its own disk.
        steps.append({"uses": ACTIONS["setup-uv"], "with": {"enable-cache": False}})
        install = (f"uv venv --python {KIT_PYTHON} {KIT_VENV}\nuv pip install --python {KIT_VENV}/bin/python -e '.[docker]'\n"
                   "nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv\n"
                   "docker info --format 'docker {{.ServerVersion}}, runtimes: {{json .Runtimes}}'\n")
    steps.append({"name": "Install pcgkit", "run": install})
    steps.append({"name": "Run the cell", "env": {CELL_VAR: "${{ matrix.cell }}", TIMEOUT_VAR: "${{ matrix.timeout-s }}"},
                  "run": _shell_command(group.jobs[0]) + "\n"})
    steps.append({"name": "Upload the cell folder", "if": "always()", "uses": ACTIONS["upload-artifact"], "with": {
        "name": "${{ matrix.artifact }}", "path": f"{CELLS_DIR}/matrix/cells/${{{{ matrix.cell }}}}/",
        "if-no-files-found": "error", "retention-days": ARTIFACT_RETENTION_DAYS}})
    what = "simulated SM120" if runner.target.simulated else f"real {runner.target.id}"
    return {
        "name": f"${{{{ matrix.cell }}}} ({what}, {runner.backend})",
        "runs-on": list(runner.labels),
        "timeout-minutes": "${{ matrix.timeout-minutes }}",
        "strategy": {"fail-fast": False, "matrix": {"include": include}},
        # GitHub tells a job its runner's name, not the labels that chose it: where.py reads these.
        "env": {"PCGKIT_RUNNER_LABELS": ",".join(runner.labels)},
        "steps": steps,
    }


def _history_script(plan: CiPlan) -> str:
    return (
        "mkdir -p reports/history\n"
        "# The newest earlier run of this workflow on this branch that left a history artifact.\n"
        'for id in $(gh run list --repo "$GITHUB_REPOSITORY" --workflow "$GITHUB_WORKFLOW" --branch "$GITHUB_REF_NAME" \\\n'
        "    --status completed --limit 20 --json databaseId --jq '.[].databaseId'); do\n"
        '  [ "$id" = "$GITHUB_RUN_ID" ] && continue\n'
        f'  if gh run download "$id" --repo "$GITHUB_REPOSITORY" --name {plan.history_artifact} --dir reports/history; then\n'
        '    echo "history carried from run $id"; break\n'
        "  fi\n"
        "done\n"
        'echo "history: $(find reports/history -name \'*.json\' | wc -l) earlier runs"\n'
    )


def _report_script(plan: CiPlan) -> str:
    command = " ".join(shlex.quote(w) if w != "pcgkit" else f"{KIT_VENV}/bin/pcgkit" for w in plan.report_command)
    return (
        "args=()\n"
        f'for dir in {ARTIFACTS_DIR}/*/; do args+=(--from "$dir"); done\n'
        f'status=0\n{command} "${{args[@]}}" || status=$?\n'
        f"# keep the newest {plan.history_runs_kept} runs: the dashboard's timeline reads them\n"
        f"find reports/history -name '*.json' | sort | head -n -{plan.history_runs_kept} | xargs -r rm --\n"
        "mkdir -p site && cp reports/index.html reports/compat.md reports/compat.json site/\n"
        'exit "$status"\n'
    )


def _report_job(plan: CiPlan) -> dict[str, Any]:
    return {
        "name": "Merge the cells into one report",
        "needs": [g.id for g in plan.groups],
        "if": "${{ !cancelled() }}",  # a red cell job still has a cell folder worth reporting
        "runs-on": "ubuntu-latest",
        "timeout-minutes": REPORT_TIMEOUT_MINUTES,
        "permissions": {"contents": "read", "actions": "read"},
        "steps": [
            {"uses": ACTIONS["checkout"], "with": {"persist-credentials": False}},
            {"uses": ACTIONS["setup-python"], "with": {"python-version": KIT_PYTHON}},
            {"uses": ACTIONS["setup-uv"], "with": {"enable-cache": True}},
            {"name": "Install pcgkit", "run": f"uv venv --python {KIT_PYTHON} {KIT_VENV}\nuv pip install --python {KIT_VENV}/bin/python -e .\n"},
            {"name": "Download every cell folder", "uses": ACTIONS["download-artifact"],
             "with": {"pattern": "cell-*", "path": ARTIFACTS_DIR}},
            {"name": "Carry the previous run's history", "env": {"GH_TOKEN": "${{ github.token }}"},
             "run": _history_script(plan)},
            {"name": "pcgkit report --from every cell", "run": _report_script(plan)},
            {"name": "Upload the history for the next run", "if": "always()", "uses": ACTIONS["upload-artifact"],
             "with": {"name": plan.history_artifact, "path": "reports/history/", "retention-days": HISTORY_RETENTION_DAYS}},
            {"name": "Upload the report", "if": "always()", "uses": ACTIONS["upload-artifact"],
             "with": {"name": plan.report_artifact, "path": "reports/", "retention-days": ARTIFACT_RETENTION_DAYS}},
            {"name": "Upload the dashboard for Pages", "if": "always()", "uses": ACTIONS["upload-pages"],
             "with": {"path": "site/"}},
        ],
    }


def _deploy_job() -> dict[str, Any]:
    return {
        "name": "Publish the dashboard",
        "needs": ["report"],
        "if": "${{ !cancelled() && needs.report.result != 'skipped' "
              "&& github.ref == format('refs/heads/{0}', github.event.repository.default_branch) }}",
        "runs-on": "ubuntu-latest",
        "timeout-minutes": 10,
        "permissions": {"pages": "write", "id-token": "write"},
        "environment": {"name": "github-pages", "url": "${{ steps.deployment.outputs.page_url }}"},
        "steps": [{"id": "deployment", "uses": ACTIONS["deploy-pages"]}],
    }


def render_workflow(plan: CiPlan, name: str = "pcgkit matrix", cron: str = "17 3 * * 1") -> dict[str, Any]:
    """The workflow document (a dict, ready for YAML). Pure."""
    jobs: dict[str, Any] = {group.id: _cell_job(group) for group in plan.groups}
    jobs["report"] = _report_job(plan)
    jobs["deploy"] = _deploy_job()
    return {
        "name": name,
        "on": {"workflow_dispatch": {}, "schedule": [{"cron": cron}]},
        "permissions": {"contents": "read"},
        # one sweep at a time per branch; a running sweep finishes (its history is the next one's base)
        "concurrency": {"group": "pcgkit-matrix-${{ github.ref }}", "cancel-in-progress": False},
        "defaults": {"run": {"shell": "bash"}},
        "jobs": jobs,
    }


class _Dumper(yaml.SafeDumper):
    """Block style for multi-line scripts, so a `run:` reads as the shell it is."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def to_yaml(document: dict[str, Any], plan: CiPlan, command: str) -> str:
    """The workflow file's text: a header saying how it was made and what it leaves out. Pure."""
    header = [f"# Generated by `{command}` from the kit's own matrix plan: regenerate, do not edit by hand.",
              f"# {len(plan.jobs)} cell jobs in {len(plan.groups)} group(s): " +
              ", ".join(f"{g.id} on [{', '.join(g.runner.labels)}] ({len(g.jobs)})" for g in plan.groups)]
    header += [f"# not on CI: {cell_id}: {why}" for cell_id, why in plan.excluded]
    body = yaml.dump(document, Dumper=_Dumper, sort_keys=False, width=200, allow_unicode=True)
    return "\n".join(header) + "\n" + body
