"""The embedded default backend: one uv virtual environment per cell, the cases run inside it.

lock (committed in fixtures/locks/, else resolved now into the cell's folder) -> install (`uv venv`, then ONE
`uv pip sync --require-hashes` of the lock) -> check (the installed set read from the RECORDs; two
distributions owning one file is an error cell naming both) -> run (`pcgkit run` in the cell's interpreter,
which reports a failed import of torch or flashinfer as the cell's `import` error: no second interpreter just
to check imports). The kit reaches the cell as a .pth line, not as a package install; FlashInfer's JIT cache
is shared by the cells whose key (pcgkit.matrix.jitcache) matches.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Iterator

from pcgkit import resources
from pcgkit.jobs import run as runjob
from pcgkit.matrix import installed as installed_mod
from pcgkit.matrix import jitcache, locks, torchbuild
from pcgkit.matrix.backends.base import BackendConfig, CaseRequest, CasesRan, CellContext, Deadline, StageFailed, Stages
from pcgkit.matrix.cells import EXISTING, TORCH_BUILD_CPU, VENV, Cell
from pcgkit.matrix.deps import kit_light_dependencies, sglang_import_dependencies
from pcgkit.matrix.outcome import (
    INTERPRETER_MISSING,
    STAGE_INSTALL,
    classify_install_failure,
    install_failure_detail,
    uv_culprit,
)
from pcgkit.util import atomic, proc, signals
from pcgkit.util.envlock import build_lock, held, open_lock, owned_dir, use_lock_path
from pcgkit.util.interpreters import find_python
from pcgkit.util.redact import redact_argv, secret_values

STAMP = ".pcgkit-cell-stamp"
KIT_PTH = "_pcgkit_kit.pth"
JIT_CACHE_DIR = "flashinfer-jit"  # beside the environments folder
# The cells' compiled bytecode, beside it too (PYTHONPYCACHEPREFIX): uv installs no .pyc, so a fresh
# environment's first `import torch, flashinfer` compiles ~40 MB of bytecode, ~9 s of a ~16 s import
# (docs/lab-notes.md). Python keys the tree by source path and checks each .pyc against its source, so a
# rebuilt environment of the same cell reuses it and cells at other paths never share it.
BYTECODE_DIR = "cell-bytecode"
SUMMARY = "a uv venv each"  # how `--backend`'s help describes it


def install_commands(env_dir: Path, base_python: str, lock_file: Path) -> list[list[str]]:
    """The uv commands that build a cell's environment from its lock: one venv, one sync. Pure."""
    uv = proc.uv_command()
    env_python = str(env_dir / "bin" / "python")
    return [
        [*uv, "venv", "--allow-existing", "--python", base_python, str(env_dir)],
        [*uv, "pip", "sync", "--python", env_python, "--require-hashes", str(lock_file)],
    ]


def cell_lock_inputs(cell: Cell) -> locks.LockInputs:
    sglang_deps = sglang_import_dependencies(cell.sglang) if cell.sglang else []
    return locks.lock_inputs(cell, kit_light_dependencies(cell.python), sglang_deps)


def uv_env() -> dict[str, str]:
    """This process's environment for uv, without a virtual environment or a path of its own."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["UV_PYTHON_DOWNLOADS"] = "never"  # no managed-Python downloads: machines here cannot reach them
    return env


# Environments a cell of this process is using, and the shared lock it holds on each (run_cell).
_IN_USE: dict[Path, IO[bytes]] = {}
IN_USE_POLL_S = 0.5


@contextlib.contextmanager
def env_in_use(env_dir: Path):
    """A shared hold on an environment for as long as a cell runs in it: `--force` or a damage rebuild in
    another run, or `pcgkit cache remove`, waits for it, never deletes the env under it (envlock.held)."""
    owned_dir(env_dir.parent)
    with held(use_lock_path(env_dir), shared=True) as handle:
        _IN_USE[env_dir] = handle
        try:
            yield
        finally:
            _IN_USE.pop(env_dir, None)


def _take_for_rebuild(env_dir: Path, deadline: Deadline) -> bool:
    """The use lock exclusively (this cell's own shared hold converted), waiting while another run
    uses the environment; False when it is still in use at the cell's deadline."""
    own = _IN_USE.get(env_dir)
    handle = own if own is not None else open_lock(use_lock_path(env_dir))
    try:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if own is not None:
                    fcntl.flock(handle, fcntl.LOCK_SH)  # a failed conversion may drop the hold: take it back
                if deadline.end - time.monotonic() <= 0:
                    return False
                signals.raise_if_stopping()
                time.sleep(IN_USE_POLL_S)
    finally:
        if own is None:
            handle.close()


def env_dir_for(cell: Cell, config: BackendConfig) -> Path:
    return config.envs_root / f"{cell.id}-{cell.definition_hash}"


def prepare_env(cell: Cell, cell_dir: Path, config: BackendConfig, deadline: Deadline,
                stages: Stages | None = None) -> VenvEnvironment:
    """The cell's environment, built or reused; StageFailed (install stage) saying why it cannot be had."""
    if cell.kind == EXISTING:
        return VenvEnvironment(str(cell.interpreter), (), {}, config.envs_root, cell.python)
    stages = stages or Stages()
    env_dir = env_dir_for(cell, config)
    with build_lock(env_dir):
        python, lock = _prepare_locked(cell, cell_dir, env_dir, config, deadline, stages)
    with stages.timing("check"):
        dists = installed_mod.read_installed(installed_mod.site_packages(env_dir))
        overlaps = installed_mod.file_overlaps(dists)
    if overlaps:
        # The environment holds neither distribution as shipped: never run cases in it.
        reason = "inconsistent environment: " + installed_mod.describe_overlaps(overlaps)
        raise StageFailed(STAGE_INSTALL, reason, "\n".join(f"{o.path}: {', '.join(o.owners)}" for o in overlaps[:40]),
                          lock=lock, installed=dists)
    return VenvEnvironment(python, dists, lock, config.envs_root, cell.python)


def _lock_for(cell: Cell, cell_dir: Path, locks_dir: Path, base_python: str, deadline: Deadline,
              stages: Stages, torch_cpu_index: str = torchbuild.DEFAULT_CPU_INDEX) -> tuple[Path, dict]:
    """(lock file, lock facts): _locked_build's lock, or for torch build cpu its CPU build."""
    lock_file, facts = _locked_build(cell, cell_dir, locks_dir, base_python, deadline, stages)
    if cell.torch_build != TORCH_BUILD_CPU:
        return lock_file, facts
    lock_text = lock_file.read_text()
    discard_install_copy(lock_file)  # a lock resolved now: its CPU build replaces it
    with stages.timing("resolve"):
        result = torchbuild.compile_cpu_lock(cell.id, cell_lock_inputs(cell), lock_text, torch_cpu_index, base_python,
                                             cell_dir / "lock", uv_env(), deadline.left())
    facts = {**facts, "torch_build": TORCH_BUILD_CPU, "torch_from": torch_cpu_index}
    if not isinstance(result, str):
        raise StageFailed(STAGE_INSTALL, _install_cause(cell, result), result.output_tail, lock=facts)
    atomic.write_text(cell_dir / torchbuild.LOCK_FILE, result)  # the record, redacted
    changed = torchbuild.changed_pins(lock_text, result)
    return install_copy(result), {**facts, "cpu_lock": {
        "path": str(cell_dir / torchbuild.LOCK_FILE), "digest": locks.file_digest(result),
        "changed": {name: list(versions) for name, versions in changed.items()}}}


def _locked_build(cell: Cell, cell_dir: Path, locks_dir: Path, base_python: str, deadline: Deadline,
                  stages: Stages) -> tuple[Path, dict]:
    """(lock file, lock facts): the committed lock when current, else one resolved now."""
    inputs = cell_lock_inputs(cell)
    committed = locks.lock_path(locks_dir, cell.id)
    if committed.is_file():
        text = committed.read_text()
        made_from = locks.inputs_digest_of(text)
        facts = {"source": "committed", "path": str(committed), "digest": locks.file_digest(text), "inputs": made_from}
        if made_from != inputs.digest:
            raise StageFailed(STAGE_INSTALL, f"lock out of date: {committed} was made from other inputs (pins, rules "
                              f"or the kit's dependencies changed); refresh it with `bin/pcgkit lab lock --cell {cell.id}`",
                              lock=facts)
        return committed, facts
    with stages.timing("resolve"):
        result = locks.compile_lock(cell, inputs, base_python, cell_dir / "lock", uv_env(), deadline.left())
    if not isinstance(result, str):
        raise StageFailed(STAGE_INSTALL, _install_cause(cell, result), result.output_tail, lock={"source": "resolved"})
    atomic.write_text(cell_dir / "lock.txt", result)  # the record, redacted: the cell folder is an artifact
    path = install_copy(result)  # what uv installs from, credentials kept, outside every artifact
    return path, {"source": "resolved", "path": str(path), "digest": locks.file_digest(result),
                  "inputs": inputs.digest, "note": f"no committed lock: `bin/pcgkit lab lock --cell {cell.id}` makes one"}


INSTALL_COPY_PREFIX = "pcgkit-install-lock-"


def install_copy(lock_text: str) -> Path:
    """The lock as uv must read it (a companion's URL credentials kept) in a private 0700 temp folder."""
    folder = Path(tempfile.mkdtemp(prefix=INSTALL_COPY_PREFIX))
    path = folder / "lock.txt"
    atomic.write_text(path, lock_text, redact=False)
    os.chmod(path, 0o600)
    return path


def discard_install_copy(lock_file: Path) -> None:
    if lock_file.parent.name.startswith(INSTALL_COPY_PREFIX):
        shutil.rmtree(lock_file.parent, ignore_errors=True)


def _install_cause(cell: Cell, done: proc.Completed) -> str:
    cause = "timeout" if done.timed_out else classify_install_failure(done.output_tail)
    pins = " ".join(cell.requirements() + ((f"sglang=={cell.sglang}",) if cell.sglang else ()))
    # the resolver's culprit: a missing dependency, else uv's own error line and its cause
    detail = install_failure_detail(done.output_tail) or uv_culprit(done.output_tail)
    detail = f"{detail}; pins " if detail else ""
    return f"{cause}: {detail}{pins} (uv {done.describe_failure()})"


def env_damage(env_dir: Path, recorded: dict) -> str | None:
    """Why a stamped environment cannot be reused, found cheaply (None when it looks whole): what a cleanup job,
    a half-finished `pip uninstall` or an upgraded base Python leaves, the interpreter gone or not starting or a
    recorded distribution's METADATA vanished. Deeper damage is what `--force` is for: hashing every file on
    each reuse would cost as much as the install."""
    env_python = env_dir / "bin" / "python"
    if not env_python.exists():  # follows the link: a removed base interpreter counts too
        return f"the environment's python is missing ({env_python})"
    check = proc.run([str(env_python), "-I", "-S", "-c", ""], env=uv_env(), timeout=60, echo=False)
    if not check.ok:
        return f"the environment's python does not start ({check.describe_failure()})"
    lost = [rel for rel in recorded.get("installed", ()) if not (env_dir / rel / "METADATA").is_file()]
    if lost:
        names = ", ".join(Path(rel).name for rel in lost[:3]) + (f" and {len(lost) - 3} more" if len(lost) > 3 else "")
        return f"{len(lost)} installed distribution{'s' if len(lost) > 1 else ''} lost {'their' if len(lost) > 1 else 'its'} METADATA ({names})"
    return None


def _dist_infos(env_dir: Path) -> list[str]:
    """The installed set as the stamp records it: each dist-info folder, relative to the env."""
    return sorted(str(info.relative_to(env_dir)) for site in installed_mod.site_packages(env_dir)
                  for info in site.glob("*.dist-info"))


def _read_stamp(stamp: Path) -> dict | None:
    try:
        recorded = json.loads(stamp.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {}  # unreadable, or an older kit's stamp: reinstall
    return recorded if isinstance(recorded, dict) else {}


def rebuild_reason(cell: Cell, env_dir: Path, force: bool) -> tuple[str | None, dict]:
    """(why the env must be (re)built, None to reuse it; the stamp's record)."""
    recorded = _read_stamp(env_dir / STAMP)
    if recorded is None:
        return ("left unfinished by an earlier install (no stamp)" if env_dir.exists() else "new"), {}
    if recorded.get("definition") != cell.definition_hash:
        return "stamped for another definition of this cell", recorded
    if force:
        return "--force", recorded
    return env_damage(env_dir, recorded), recorded


def _prepare_locked(cell: Cell, cell_dir: Path, env_dir: Path, config: BackendConfig, deadline: Deadline,
                    stages: Stages) -> tuple[str, dict]:
    """(the environment's python, its lock facts), built unless a whole one of this definition is there."""
    env_python = env_dir / "bin" / "python"
    why, recorded = rebuild_reason(cell, env_dir, config.force)
    if why is None:
        return str(env_python), {**recorded.get("lock", {}), "reused_env": True}
    base_python = find_python(cell.python)
    if base_python is None:
        raise StageFailed(STAGE_INSTALL, f"{INTERPRETER_MISSING}: no Python {cell.python} on this machine "
                          f"(see pcgkit/util/interpreters.py)")
    lock_file, lock_facts = _lock_for(cell, cell_dir, config.locks_dir, base_python, deadline, stages,
                                      config.torch_cpu_index)
    logs = [f"# building {env_dir}: {why}"]
    if recorded:
        # A stamped env that is damaged or forced starts from nothing: a sync keeps what it finds (uv cannot
        # see a dist-info without METADATA), and without the stamp a killed rebuild never looks reusable.
        # An unstamped one (an install that never finished) is synced in place: uv converges it.
        lock_facts = {**lock_facts, "rebuilt": why}
        if not _take_for_rebuild(env_dir, deadline):
            raise StageFailed(STAGE_INSTALL, f"environment in use: another run is using {env_dir}; it was not "
                              f"rebuilt ({why}) under that run: rerun when it ends", lock=lock_facts)
        try:
            print(f"pcgkit: rebuilding the environment of cell {cell.id}: {why}", file=sys.stderr, flush=True)
            shutil.rmtree(env_dir, ignore_errors=True)
        finally:
            if (own := _IN_USE.get(env_dir)) is not None:
                fcntl.flock(own, fcntl.LOCK_SH)
    secrets = secret_values(uv_env())
    try:
        for stage, argv in zip(("env", "install"), install_commands(env_dir, base_python, lock_file)):
            with stages.timing(stage):
                done = proc.run(argv, env=uv_env(), timeout=deadline.left(), log_path=cell_dir / f"{stage}.log")
            # the echo is redacted as proc.run's own is (a credentialed URL may be an argument)
            logs.append(f"+ {redact_argv(tuple(argv), secrets)}\n" + (done.log_path.read_text(errors="replace") if done.log_path else ""))
            if not done.ok:
                raise StageFailed(STAGE_INSTALL, _install_cause(cell, done), done.output_tail, lock=lock_facts)
    finally:
        discard_install_copy(lock_file)
        atomic.write_text(cell_dir / "install.log", "\n".join(logs))
    _link_kit(env_dir)
    atomic.write_json(env_dir / STAMP, {"definition": cell.definition_hash, "lock": lock_facts, "installed": _dist_infos(env_dir)})
    return str(env_python), lock_facts


def _link_kit(env_dir: Path) -> None:
    """The kit importable in the cell without a uv call: a .pth line to the checkout, or to a copy of the
    installed package (a wheel has no source tree)."""
    root = resources.checkout_root()
    if root is None:
        root = env_dir / "pcgkit-kit"
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(resources.package_dir(), root / "pcgkit", ignore=shutil.ignore_patterns("__pycache__"))
    for site in installed_mod.site_packages(env_dir):
        (site / KIT_PTH).write_text(f"{root}\n")


def bytecode_env(folder: Path) -> dict[str, str]:
    """The cell interpreter's bytecode written under the kit's `folder`, never into the environment or the
    checkout; an inherited PYTHONDONTWRITEBYTECODE emptied (read as unset) for the cell only. Pure."""
    return {"PYTHONPYCACHEPREFIX": str(folder), "PYTHONDONTWRITEBYTECODE": ""}


@dataclasses.dataclass(frozen=True)
class VenvEnvironment:
    """A cell's venv, ready: its interpreter, what it holds, and the lock it came from."""

    python: str
    installed: tuple[installed_mod.InstalledDistribution, ...]
    lock: dict
    envs_root: Path
    cell_python: str
    provenance: dict = dataclasses.field(default_factory=dict)  # nothing beyond the machine (where.py says that)
    result_evidence: dict = dataclasses.field(default_factory=dict)

    def run_cases(self, request: CaseRequest) -> CasesRan:
        """`pcgkit run`'s plan/execute in the cell's interpreter; FlashInfer's JIT cache shared by key."""
        env = dict(request.env)
        key = jitcache.cache_key(installed_mod.freeze(self.installed), self.cell_python, jitcache.machine_arch_facts())
        if key is not None:
            env[jitcache.ENV_VAR] = str(owned_dir(self.envs_root.parent / JIT_CACHE_DIR / key))
        env.update(bytecode_env(owned_dir(self.envs_root.parent / BYTECODE_DIR)))  # stamped: `cache remove` may delete them
        # a CaseRequest holds a RunPlan's fields but the interpreter, which only this backend knows
        plan = runjob.RunPlan(python=self.python, **{**vars(request), "env": tuple(env.items())})
        start = time.monotonic()
        _, _, completed = runjob.execute(plan)
        return CasesRan(completed.ok, completed.describe_failure(), completed.output_tail, time.monotonic() - start)


@dataclasses.dataclass(frozen=True)
class VenvBackend:
    """One uv virtual environment per cell (this module's docstring)."""

    prepare_stage: str = STAGE_INSTALL

    def check_machine(self, cells) -> None:
        if any(c.kind == VENV for c in cells):
            proc.uv_command()  # no uv: one environment error (exit 4) now, not an error per cell blamed on its pins

    @contextlib.contextmanager
    def prepared(self, ctx: CellContext) -> Iterator[VenvEnvironment]:
        cell, config = ctx.cell, ctx.config
        with contextlib.ExitStack() as holds:
            if cell.kind != EXISTING:  # held until the cases are done: no other run may delete the env under them
                holds.enter_context(env_in_use(env_dir_for(cell, config)))
            yield prepare_env(cell, ctx.cell_dir, config, ctx.deadline, ctx.stages)


BACKEND = VenvBackend()


def make_backend(args) -> VenvBackend:
    """This backend (the registry in pcgkit.matrix.backends calls it); no options of its own."""
    return BACKEND
