"""The embedded default backend: one uv virtual environment per cell, the cases run inside it.

install (uv venv + exact pins from PyPI; sglang without its dependencies; pcgkit editable + its
light deps) -> import check (torch, flashinfer, pcgkit import; installed versions recorded) ->
`pcgkit run`'s own plan/execute against the cell's interpreter. Any stage that breaks makes an
error cell with the reason and the log tail; the whole cell shares one deadline, and every
command goes through pcgkit.util.proc, which kills the process group on timeout.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from pathlib import Path

from pcgkit import resources
from pcgkit.jobs import run as runjob
from pcgkit.matrix.backends.base import BackendConfig, RunCell
from pcgkit.matrix.cells import EXISTING, Cell
from pcgkit.matrix.deps import kit_light_dependencies, sglang_import_dependencies
from pcgkit.matrix.outcome import (
    ERROR,
    LOG_TAIL_CHARS,
    RAN,
    STAGE_IMPORT,
    STAGE_INSTALL,
    STAGE_RUN,
    CellOutcome,
    classify_install_failure,
    install_failure_detail,
    last_exception_line,
    uv_culprit,
    yielded_verdicts,
)
from pcgkit.util import proc
from pcgkit.util.interpreters import find_python

STAMP = ".pcgkit-cell-stamp"
IMPORT_CHECK_TIMEOUT_S = 300.0
# The import check: the subject packages and the kit must import; prints the installed versions.
IMPORT_CHECK = (
    "import json, torch, flashinfer, pytest, pcgkit.harness.plugin; from pcgkit.harness.versions import collect_versions; "
    "print('PCGKIT-VERSIONS ' + json.dumps(collect_versions()))"
)


def install_commands(cell: Cell, env_dir: Path, base_python: str, constraints_file: Path | None = None) -> list[list[str]]:
    """The uv commands that build the cell's environment (constraints_file holds cell.constraints). Pure."""
    uv = proc.uv_command()
    env_python = str(env_dir / "bin" / "python")
    constrain = ["--constraint", str(constraints_file)] if constraints_file is not None else []
    commands = [
        [*uv, "venv", "--allow-existing", "--python", base_python, str(env_dir)],
        [*uv, "pip", "install", "--python", env_python, *constrain, *cell.requirements(), *kit_light_dependencies()],
    ]
    no_deps = resources.kit_install_args()
    if cell.sglang:
        # sglang's own tree is huge and CUDA-only; the FlashInfer-level cases never import it.
        no_deps.insert(0, f"sglang=={cell.sglang}")
    commands.append([*uv, "pip", "install", "--python", env_python, "--no-deps", *no_deps])
    if cell.sglang and (light := sglang_import_dependencies(cell.sglang)):
        # with their own deps, but never a torch change: the cell's pins are repeated as constraints
        commands.append([*uv, "pip", "install", "--python", env_python, *light, *cell.requirements()])
    return commands


def _uv_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["UV_PYTHON_DOWNLOADS"] = "never"  # no managed-Python downloads: machines here cannot reach them
    return env


class _Deadline:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(1.0, self.end - time.monotonic())


def _tail(text: str) -> str:
    return text[-LOG_TAIL_CHARS:]


@contextlib.contextmanager
def _env_lock(env_dir: Path):
    """Two matrix runs sharing an envs folder (a bisect beside a matrix, two test workers) must not
    install into one environment at once: the second waits, then finds the stamp and reuses it."""
    env_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(env_dir.parent / f".{env_dir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def prepare_env(cell: Cell, cell_dir: Path, config: BackendConfig, deadline: _Deadline) -> tuple[str | None, str, str]:
    """(python, cause, log tail): the environment's interpreter, or None and why the install failed."""
    if cell.kind == EXISTING:
        return cell.interpreter, "", ""
    env_dir = config.envs_root / f"{cell.id}-{cell.definition_hash}"
    with _env_lock(env_dir):
        return _prepare_locked(cell, cell_dir, env_dir, deadline)


def _prepare_locked(cell: Cell, cell_dir: Path, env_dir: Path, deadline: _Deadline) -> tuple[str | None, str, str]:
    env_python = env_dir / "bin" / "python"
    stamp = env_dir / STAMP
    if stamp.exists() and stamp.read_text().strip() == cell.definition_hash and env_python.exists():
        return str(env_python), "", ""
    base_python = find_python(cell.python)
    if base_python is None:
        return None, f"interpreter missing: no Python {cell.python} on this machine (see pcgkit/util/interpreters.py)", ""
    log_path = cell_dir / "install.log"
    constraints_file = None
    if cell.constraints:
        constraints_file = cell_dir / "constraints.txt"
        constraints_file.write_text("\n".join(cell.constraints) + "\n")
    logs = []
    for i, argv in enumerate(install_commands(cell, env_dir, base_python, constraints_file)):
        done = proc.run(argv, env=_uv_env(), timeout=deadline.left(), log_path=cell_dir / f"install-{i}.log")
        logs.append(f"+ {' '.join(argv)}\n" + (done.log_path.read_text(errors="replace") if done.log_path else ""))
        if not done.ok:
            log_path.write_text("\n".join(logs))
            if done.timed_out:
                cause = "timeout"
            else:
                cause = classify_install_failure(done.output_tail)
            pins = " ".join(cell.requirements() + ((f"sglang=={cell.sglang}",) if cell.sglang else ()))
            # the resolver's culprit: a missing dependency, else uv's own error line and its cause
            detail = install_failure_detail(done.output_tail) or uv_culprit(done.output_tail)
            detail = f"{detail}; pins " if detail else ""
            return None, f"{cause}: {detail}{pins} (uv {done.describe_failure()})", _tail(done.output_tail)
    log_path.write_text("\n".join(logs))
    stamp.write_text(cell.definition_hash + "\n")
    return str(env_python), "", ""


def import_check(python: str, cell_dir: Path, deadline: _Deadline) -> tuple[dict | None, str, str]:
    done = proc.run(
        [python, "-c", IMPORT_CHECK], cwd=resources.workspace_root(), timeout=min(IMPORT_CHECK_TIMEOUT_S, deadline.left()),
        log_path=cell_dir / "import-check.log", env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    for line in done.output_tail.splitlines():
        if done.ok and line.startswith("PCGKIT-VERSIONS "):
            return json.loads(line.split(" ", 1)[1]), "", ""
    culprit = last_exception_line(done.output_tail)
    return None, f"import check {done.describe_failure()}" + (f": {culprit}" if culprit else ""), _tail(done.output_tail)


def run_cell(cell: Cell, config: BackendConfig, on_stage=lambda cell, stage: None) -> CellOutcome:
    """Install, check, run one cell; never raises for a broken cell (it becomes an error cell)."""
    cell_dir = config.cells_root / cell.id
    cell_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    deadline = _Deadline(cell.timeout_s or config.timeout_s)

    def error(stage: str, reason: str, tail: str, versions: dict | None = None) -> CellOutcome:
        return CellOutcome(cell, ERROR, time.monotonic() - start, stage, reason, tail, versions or {})

    on_stage(cell, STAGE_INSTALL)
    python, cause, tail = prepare_env(cell, cell_dir, config, deadline)
    if python is None:
        return error(STAGE_INSTALL, cause, tail)
    on_stage(cell, STAGE_IMPORT)
    versions, cause, tail = import_check(python, cell_dir, deadline)
    if versions is None:
        return error(STAGE_IMPORT, cause, tail)
    on_stage(cell, STAGE_RUN)
    plan = runjob.RunPlan(
        python=python, reports_dir=cell_dir, timeout_s=deadline.left(),
        case_timeout_s=min(config.case_timeout_s, deadline.left()),
        select=config.select, require_hardware=config.require_hardware,
    )
    _, results, completed = runjob.execute(plan)
    if not yielded_verdicts(results, completed.ok):
        return error(STAGE_RUN, f"pytest {completed.describe_failure()}", _tail(completed.output_tail), versions)
    return CellOutcome(cell, RAN, time.monotonic() - start, versions=versions, results=tuple(results))


def remove_env(cell: Cell, config: BackendConfig) -> None:
    """Delete a cell's environment (several GB for a torch stack)."""
    env_dir = config.envs_root / f"{cell.id}-{cell.definition_hash}"
    if env_dir.is_dir():
        shutil.rmtree(env_dir)



def make_runner(args) -> RunCell:
    """This backend's RunCell (the registry in pcgkit.matrix.backends calls it); no options of its own."""
    return run_cell
