"""The CI fan-out on this machine: every planned job as its own process, into its own artifact folder.

What the generated workflow does, without the CI: each CellJob's own `pcgkit matrix` command
(with PCGKIT_RUNNER_LABELS set as the workflow sets it) reports into jobs/<artifact>/, its cell
folder is "uploaded" to artifacts/<artifact>[.tar.gz] and the report step merges them with
`pcgkit report --from ...`. `local_argv` is pure; `run_local` is the edge (pcgkit.util.proc).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import sys
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from pcgkit import resources
from pcgkit.ci.plan import CELLS_DIR, CellJob, CiPlan
from pcgkit.matrix.where import LABELS_VAR
from pcgkit.util import proc


@dataclasses.dataclass(frozen=True)
class LocalJob:
    job: CellJob
    argv: tuple[str, ...]
    reports: Path  # the job's --reports folder
    artifact: Path  # where its cell folder is "uploaded"


def local_argv(job: CellJob, reports: Path, extra: Sequence[str] = (), python: str = sys.executable) -> tuple[str, ...]:
    """The job's own command with this interpreter's pcgkit and a local reports folder. Pure."""
    argv = [python, "-m", "pcgkit.cli"]
    words = list(job.command[1:])  # the command starts with "pcgkit"
    for i, word in enumerate(words):
        if word == CELLS_DIR and i and words[i - 1] == "--reports":
            words[i] = str(reports)
    return tuple(argv + words + list(extra))


def plan_local(plan: CiPlan, out: Path, job_args: Mapping[str, Sequence[str]], archive: bool) -> list[LocalJob]:
    """Every job with its folders; job_args keyed by cell id or artifact name are appended. Pure."""
    jobs = []
    for job in plan.jobs:
        extra = list(job_args.get(job.cell_id, ())) + list(job_args.get(job.artifact, ()))
        reports = out / "jobs" / job.artifact
        artifact = out / "artifacts" / (f"{job.artifact}.tar.gz" if archive else job.artifact)
        jobs.append(LocalJob(job, local_argv(job, reports, extra), reports, artifact))
    return jobs


def parse_job_args(items: Sequence[str]) -> dict[str, list[str]]:
    """'CELL=ARGS' (shell words) -> {CELL: [ARGS...]}. Pure."""
    out: dict[str, list[str]] = {}
    for item in items:
        key, sep, words = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--job-args {item!r}: expected CELL_OR_ARTIFACT=ARGS")
        out.setdefault(key, []).extend(shlex.split(words))
    return out


def upload(cell_folder: Path, artifact: Path) -> None:
    """Copy a job's cell folder to its artifact (a folder, or a .tar.gz as an archive download gives)."""
    artifact.parent.mkdir(parents=True, exist_ok=True)
    if artifact.name.endswith(".tar.gz"):
        with tarfile.open(artifact, "w:gz") as tf:
            for path in sorted(cell_folder.rglob("*")):
                if path.is_file():
                    tf.add(path, arcname=str(path.relative_to(cell_folder)))
    else:
        shutil.copytree(cell_folder, artifact, dirs_exist_ok=True)


def run_local(jobs: Sequence[LocalJob], out: Path, timeout_s: float = 3600.0) -> tuple[list[tuple[LocalJob, proc.Completed]], proc.Completed]:
    """Run each job, upload its cell folder, then `pcgkit report --from` every artifact (the edge)."""
    done = []
    for local in jobs:
        env = {**os.environ, LABELS_VAR: ",".join(local.job.runner.labels)}
        completed = proc.run(local.argv, env=env, cwd=resources.workspace_root(), timeout=timeout_s,
                             log_path=out / "logs" / f"{local.job.artifact}.log")
        cell_folder = local.reports / "matrix" / "cells" / local.job.cell_id
        if cell_folder.is_dir():  # a job that left nothing uploads nothing (the report then lacks it)
            upload(cell_folder, local.artifact)
        done.append((local, completed))
    report_argv = [sys.executable, "-m", "pcgkit.cli", "report", "--reports", str(out / "reports")]
    for local in jobs:
        if local.artifact.exists():
            report_argv += ["--from", str(local.artifact)]
    report = proc.run(report_argv, cwd=resources.workspace_root(), timeout=600, log_path=out / "logs" / "report.log")
    return done, report
