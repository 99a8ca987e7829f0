"""Per-cell locks: uv's resolution of a cell, with hashes, kept as data (fixtures/locks/<cell-id>.txt).

`bin/pcgkit lab lock` makes them: `uv pip compile --generate-hashes` of the cell's pins, the kit's light
dependencies and SGLang's import deps (with the cell's constraints), for the cell's Python and the lock
platform, plus sglang itself `--no-deps` (its own tree is CUDA-only and never imported by the cases). The
cell installs exactly that file (`uv pip sync --require-hashes`). The header records a digest of the
inputs: a cell whose inputs changed since is told to re-lock instead of silently installing something
else. A cell without a committed lock is resolved the same way at run time, and says so.
Planning helpers are pure; `compile_lock` is the edge.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from pcgkit import resources
from pcgkit.matrix.cells import VENV, Cell
from pcgkit.util import atomic, proc

LOCK_SCHEMA = "pcgkit.lock/1"
DEFAULT_LOCKS_DIR = resources.fixture("locks")
# glibc 2.34+ wheels: sglang >= 0.5.12 ships manylinux_2_34 only (FACTS.md); Debian 12 / Ubuntu 24.04 qualify.
LOCK_PLATFORM = "x86_64-manylinux_2_34"
NO_DEPS_MARK = "# --- installed without their dependencies ---"
_INPUTS_LINE = re.compile(r"^# inputs: ([0-9a-f]{16})$", re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class LockInputs:
    """Everything the resolution depends on; its digest goes into the lock's header."""

    requirements: tuple[str, ...]  # resolved with their dependencies
    constraints: tuple[str, ...]
    no_deps: tuple[str, ...]  # resolved alone (sglang)
    python: str
    platform: str = LOCK_PLATFORM

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(dataclasses.asdict(self), sort_keys=True).encode()).hexdigest()[:16]


def lock_inputs(cell: Cell, kit_dependencies: Sequence[str], sglang_dependencies: Sequence[str]) -> LockInputs:
    requirements = tuple(dict.fromkeys((*cell.requirements(), *kit_dependencies, *sglang_dependencies)))
    no_deps = (f"sglang=={cell.sglang}",) if cell.sglang else ()
    return LockInputs(requirements, tuple(cell.constraints), no_deps, cell.python)


def lock_path(locks_dir: Path, cell_id: str) -> Path:
    return locks_dir / f"{cell_id}.txt"


def file_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def with_lock_digests(cells: Iterable[Cell], locks_dir: Path) -> list[Cell]:
    """Each venv cell with the digest of its committed lock (so a refreshed lock reruns it)."""
    out = []
    for cell in cells:
        path = lock_path(locks_dir, cell.id)
        if cell.kind == VENV and path.is_file():
            cell = dataclasses.replace(cell, lock_digest=file_digest(path.read_text()))
        out.append(cell)
    return out


def inputs_digest_of(lock_text: str) -> str | None:
    """The inputs digest a lock was made from (its header); None when the header is missing. Pure."""
    match = _INPUTS_LINE.search(lock_text)
    return match.group(1) if match else None


def compile_argv(uv: Sequence[str], base_python: str, inputs: LockInputs, requirements_file: Path, out: Path,
                 constraints_file: Path | None = None, no_deps: bool = False, find_links: str = "") -> list[str]:
    """`uv pip compile` for the lock's Python and platform; the lock names find_links when given. Pure."""
    argv = [*uv, "pip", "compile", "--generate-hashes", "--no-header", "--python", base_python,
            "--python-version", inputs.python, "--python-platform", inputs.platform, "-o", str(out)]
    if constraints_file is not None:
        argv += ["--constraint", str(constraints_file)]
    if no_deps:
        argv.append("--no-deps")
    if find_links:
        argv += ["--find-links", find_links, "--emit-find-links"]
    return [*argv, str(requirements_file)]


def render_lock(cell_id: str, inputs: LockInputs, resolved: str, resolved_no_deps: str = "") -> str:
    """The lock file's text: our header, uv's resolution, then the no-deps part. Pure."""
    header = [
        f"# {LOCK_SCHEMA}: uv's resolution for matrix cell {cell_id!r}, with hashes. Installed with",
        "# `uv pip sync --require-hashes`. Do not edit: refresh with `bin/pcgkit lab lock --cell " + cell_id + "`.",
        f"# inputs: {inputs.digest}",
        f"# python {inputs.python}, platform {inputs.platform}",
        *(f"# requirement: {r}" for r in inputs.requirements),
        *(f"# constraint: {c}" for c in inputs.constraints),
        *(f"# without dependencies: {r}" for r in inputs.no_deps),
    ]
    return lock_text(header, resolved, resolved_no_deps if inputs.no_deps else "")


def lock_text(header: list[str], resolved: str, no_deps: str) -> str:
    """A lock file: its header lines, uv's resolution, then the no-deps part under NO_DEPS_MARK when there is one. Pure."""
    body = resolved.strip() + "\n" + (f"{NO_DEPS_MARK}\n{no_deps.strip()}\n" if no_deps else "")
    return "\n".join(header) + "\n" + body


def pinned(lock_text: str) -> dict[str, str]:
    """name -> version of every distribution a lock installs. Pure."""
    pins = {}
    for line in lock_text.splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)", line)
        if match:
            pins[match.group(1).lower().replace("_", "-")] = match.group(2)
    return pins


@contextlib.contextmanager
def private_workdir(work: Path, prefix: str) -> Iterator[Path]:
    """A private folder (0700, removed after) for uv to work in: a companion's URL credentials must reach uv,
    but `work` (the cell folder, uploaded as a CI artifact) only gets redacted copies of what uv saw."""
    work.mkdir(parents=True, exist_ok=True)
    private = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield private
    finally:
        for path in private.iterdir():
            if path.is_file():  # the record of what uv saw, through the one writer (redacted)
                atomic.write_text(work / path.name, path.read_text(errors="replace"))
        shutil.rmtree(private, ignore_errors=True)


def compile_lock(cell: Cell, inputs: LockInputs, base_python: str, work: Path, env: dict[str, str],
                 timeout: float) -> str | proc.Completed:
    """Resolve the cell with uv (the edge): the lock's text, or the uv run that failed. uv works in a
    private_workdir; the text returned keeps a companion's credentials (the install needs them; its caller
    keeps them out of artifacts). uv runs on relative file names, so that its `# via -r lock-requirements.in`
    annotations name no temporary folder: refreshing a lock changes only what the resolution changed."""
    with private_workdir(work, "pcgkit-lock-") as private:
        uv = proc.uv_command()
        requirements, resolved = Path("lock-requirements.in"), Path("lock-resolved.txt")
        (private / requirements).write_text("\n".join(inputs.requirements) + "\n")
        constraints = None
        if inputs.constraints:
            constraints = Path("lock-constraints.txt")
            (private / constraints).write_text("\n".join(inputs.constraints) + "\n")
        done = proc.run(compile_argv(uv, base_python, inputs, requirements, resolved, constraints),
                        cwd=private, env=env, timeout=timeout, log_path=private / "lock-compile.log")
        if not done.ok:
            return done
        no_deps_text = ""
        if inputs.no_deps:
            no_deps_in, no_deps_out = Path("lock-no-deps.in"), Path("lock-no-deps.txt")
            (private / no_deps_in).write_text("\n".join(inputs.no_deps) + "\n")
            done = proc.run(compile_argv(uv, base_python, inputs, no_deps_in, no_deps_out, no_deps=True),
                            cwd=private, env=env, timeout=timeout, log_path=private / "lock-compile-no-deps.log")
            if not done.ok:
                return done
            no_deps_text = (private / no_deps_out).read_text()
        return render_lock(cell.id, inputs, (private / resolved).read_text(), no_deps_text)
