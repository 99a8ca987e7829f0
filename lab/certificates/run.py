"""Run the planned certificate jobs (lab.certificates.plan): the edge.

Per release: its environment, built once into the kit's cache (`uv venv`, one `uv pip install` of the plan's
requirements, behind a file lock, stamped `.complete` with the list it holds: a build that stopped half-way is
finished by the next run, never reused as it is) and frozen into the run folder (`uv pip freeze`: what the
certificate was made with); then its two commands (the release's interpreter, the run's copy of the kit on
PYTHONPATH and as the working folder: `copy_kit`, made once per run), each through pcgkit.util.proc with its log in the run folder; then the checks (the tests read
are the recipe's commit; the certificate is the release's), the comparison with the committed files (times aside)
and, only when all of that held, the copy of its four files to the output folder. Anything that fails is that
release's error row with its one line; the others go on. With --jobs N, N releases at once (threads, each waiting
on its own children); a stop signal kills every child group (pcgkit.util.signals) and no new one starts."""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import tomllib

from lab.certificates.plan import (
    KIT_PARTS,
    EnvPlan,
    Job,
    Row,
    StepTime,
    differences,
    error_reason,
    row_from_certificate,
    upstream_mismatch,
)
from pcgkit import resources
from pcgkit.errors import Interrupted
from pcgkit.util import atomic, proc, signals
from pcgkit.util.envlock import build_lock
from pcgkit.util.interpreters import find_python

ENVS_DIR = "certificate-envs"  # under the kit's cache (`bin/pcgkit cache` lists it as cache:certificate-envs)
STAMP = ".complete"
INSTALL_TIMEOUT_S = 3600.0


class JobFailed(Exception):
    """One release cannot go on: the message is its row's one line."""


def kit_requirements(extras: Sequence[str]) -> list[str]:
    """The kit's own dependencies and those of the named extras, as pyproject.toml declares them (a checkout)."""
    from pcgkit.matrix.deps import kit_light_dependencies

    pyproject = resources.pyproject()
    optional = tomllib.loads(pyproject.read_text())["project"].get("optional-dependencies", {}) if pyproject else {}
    missing = [extra for extra in extras if extra not in optional]
    if missing:
        raise JobFailed(f"pyproject.toml declares no extra {', '.join(missing)}")
    return [*kit_light_dependencies(), *(req for extra in extras for req in optional[extra])]


def child_env(kit: Path) -> dict[str, str]:
    """The release's interpreter sees the run's copy of pcgkit and lab, never another environment's."""
    from pcgkit.matrix.backends.venv import uv_env

    return {**uv_env(), "PYTHONPATH": str(kit)}


def copy_kit(checkout: Path, kit: Path) -> Path:
    """The checkout's kit as it is now (KIT_PARTS, no bytecode) into `kit`, replacing an older copy: every release
    of the run is made by this code, whatever is edited in the checkout meanwhile."""
    shutil.rmtree(kit, ignore_errors=True)
    kit.mkdir(parents=True)
    for part in KIT_PARTS:
        source = checkout / part
        if source.is_dir():
            shutil.copytree(source, kit / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(source, kit / part)
    return kit


def _stamped(env: EnvPlan) -> bool:
    try:
        return json.loads((env.folder / STAMP).read_text()).get("requirements") == list(env.requirements)
    except (OSError, ValueError, AttributeError):
        return False


def ensure_env(env: EnvPlan, work: Path) -> str:
    """The release's environment, built unless a complete one is there; "reused" or "built in N s"."""
    from pcgkit.matrix.backends.venv import uv_env

    uv = proc.uv_command()
    with build_lock(env.folder):
        if _stamped(env) and env.interpreter.exists():
            said = "reused"
        else:
            python = find_python(env.python)
            if python is None:
                raise JobFailed(f"environment: no Python {env.python} on this machine (pcgkit/util/interpreters.py)")
            start = time.monotonic()
            steps = (("venv", [*uv, "venv", "--allow-existing", "--python", python, str(env.folder)]),
                     ("install", [*uv, "pip", "install", "--python", str(env.interpreter), *env.requirements]))
            for name, argv in steps:
                done = proc.run(argv, env=uv_env(), timeout=INSTALL_TIMEOUT_S, log_path=work / f"env-{name}.log")
                if not done.ok:
                    raise JobFailed(error_reason(f"environment ({name})", done.describe_failure(), done.output_tail))
            atomic.write_json(env.folder / STAMP, {"requirements": list(env.requirements), "python": python})
            said = f"built in {time.monotonic() - start:.0f} s"
    freeze = proc.run([*uv, "pip", "freeze", "--python", str(env.interpreter)], env=uv_env(), timeout=120,
                      log_path=work / "freeze.txt", echo=False)
    if not freeze.ok:
        raise JobFailed(error_reason("environment (freeze)", freeze.describe_failure(), freeze.output_tail))
    return said


def _cpu(record: Path) -> float | None:
    try:
        data = json.loads(record.read_text())
        return round(float(data["user_s"]) + float(data["system_s"]), 1)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise JobFailed(f"{what}: {path} unreadable ({exc})") from None
    if not isinstance(data, dict):
        raise JobFailed(f"{what}: {path} is not a JSON object")
    return data


def versus_committed(job: Job) -> str:
    """The staged JSON files against the committed ones, times aside; every difference into the run folder."""
    lines, missing = [], []
    for staged, committed in job.committed:
        if not committed.is_file():
            missing.append(committed.name)
            continue
        found = differences(_read_json(committed, "committed"), _read_json(staged, "staged"))
        lines += [f"{committed.name}: {line}" for line in found]
    atomic.write_text(job.work / "versus-committed.txt", "\n".join(lines) + ("\n" if lines else ""), redact=False)
    said = "same" if not lines else f"{len(lines)} difference{'s' if len(lines) > 1 else ''} ({job.work / 'versus-committed.txt'})"
    return said + (f"; not committed: {', '.join(missing)}" if missing else "")


def run_job(job: Job) -> Row:
    """One release, start to end: an ok row, or an error row with its one line (Interrupted goes up)."""
    atomic.ensure_dir(job.work, "the run folder")
    shutil.rmtree(job.certificate.parent, ignore_errors=True)  # an earlier run's staged files are never this run's
    times: list[StepTime] = []
    env_said = ""
    try:
        env_said = ensure_env(job.env, job.work)
        environ = child_env(job.kit)
        for step in job.steps:
            done = proc.run(step.argv, env=environ, cwd=job.kit, timeout=step.timeout_s, log_path=step.log)
            times.append(StepTime(step.name, round(done.duration_s, 1), _cpu(step.rusage)))
            if not done.ok:
                raise JobFailed(error_reason(step.name, done.describe_failure(), done.output_tail))
            if step.name == "inputs":
                mismatch = upstream_mismatch(job.release, _read_json(job.upstream, "inputs"))
                if mismatch:
                    raise JobFailed(mismatch)
        cert = _read_json(job.certificate, "certificate")
        row = row_from_certificate(job.release, cert, env_said, times, versus_committed(job))
        if row.status == "ok":
            for staged, destination in job.copies:
                atomic.ensure_dir(destination.parent, "--out")
                atomic.write_text(destination, staged.read_text(), redact=False)  # written (and redacted) by the kit
        return row
    except JobFailed as exc:
        return Row(job.release.flashinfer, "error", str(exc), env=env_said, times=tuple(times))
    except Interrupted:
        raise
    except Exception as exc:  # noqa: BLE001 -- one release's defect must not cost the others their rows
        return Row(job.release.flashinfer, "error", f"kit: {type(exc).__name__}: {str(exc)[:200]}",
                   env=env_said, times=tuple(times))


def run_jobs(jobs: Sequence[Job], parallel: int = 1,
             on_row: Callable[[Row], None] = lambda row: None) -> list[Row]:
    """Every job, `parallel` at a time; the rows in the plan's order. A stop signal: every child group is killed,
    the jobs not started never start, Interrupted goes up (the caller prints what finished)."""
    if parallel <= 1:
        rows = []
        for job in jobs:
            rows.append(run_job(job))
            on_row(rows[-1])
        return rows
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="certificate")
    futures = {pool.submit(run_job, job): job.release.flashinfer for job in jobs}
    done: dict[str, Row] = {}
    try:
        for future in concurrent.futures.as_completed(futures):
            row = future.result()
            done[row.release] = row
            on_row(row)
    except (Interrupted, KeyboardInterrupt) as exc:
        signum = exc.signum if isinstance(exc, Interrupted) else 2
        signals.request_stop(signum)  # kills every group; a worker's next proc.run raises Interrupted
        pool.shutdown(wait=True, cancel_futures=True)
        raise Interrupted(signum) from None
    pool.shutdown(wait=True)
    return [done[job.release.flashinfer] for job in jobs]


def envs_root() -> Path:
    return resources.cache_dir() / ENVS_DIR


def environ_note() -> str:
    """What the commands ran under, for the run's summary: the host's load and cores."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return f"{os.cpu_count()} CPUs"
    return f"{os.cpu_count()} CPUs, load {load:.1f} (1 min) at the end"
