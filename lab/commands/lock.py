"""`bin/pcgkit lab lock [--cell ID]`: re-resolve the matrix's venv cells (uv pip compile --generate-hashes) into their
committed locks (fixtures/locks/); runs no cell. The locked torch build is the one written (a cpu cell's lock is
derived from it at run time)."""

from __future__ import annotations

from pathlib import Path

from lab.matrixargs import add_plan_options
from pcgkit.matrix.cells import VENV, Cell
from pcgkit.matrix.locks import DEFAULT_LOCKS_DIR
from pcgkit.matrix.plan import planned_cells
from pcgkit.matrix.runner import default_jobs
from pcgkit.matrix.uninstallable import load_uninstallable
from pcgkit.util.argtypes import positive_int


def lock_cells(cells: list[Cell], locks_dir: Path, jobs: int = 1) -> int:
    """Resolve each venv cell with uv (hashes) into LOCKS/<id>.txt (the edge)."""
    import concurrent.futures
    import tempfile

    from pcgkit.matrix import locks
    from pcgkit.matrix.backends.venv import cell_lock_inputs, uv_env
    from pcgkit.util.interpreters import find_python

    venv_cells = [c for c in cells if c.kind == VENV]
    rules = load_uninstallable()
    locks_dir.mkdir(parents=True, exist_ok=True)

    def one(cell: Cell) -> str | None:
        base_python = find_python(cell.python)
        if base_python is None:
            return f"{cell.id}: no Python {cell.python} on this machine"
        with tempfile.TemporaryDirectory(prefix=f"pcgkit-lock-{cell.id}-") as tmp:
            result = locks.compile_lock(cell, cell_lock_inputs(cell), base_python, Path(tmp), uv_env(), 900.0)
            if not isinstance(result, str):
                said = result.output_tail
                known = next((r for r in rules if r.covers(cell) and r.match in said), None)
                if known is not None:  # recorded in the baseline: no lock can exist, and that is known
                    print(f"  {cell.id}: not locked, {known.describe()}")
                    return None
                return f"{cell.id}: uv pip compile {result.describe_failure()}: {said[-400:]}"
        path = locks.lock_path(locks_dir, cell.id)
        path.write_text(result)
        locked.append(cell.id)
        print(f"  {cell.id}: {len(locks.pinned(result))} distributions -> {path}")
        return None

    locked: list[str] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        failures = [f for f in pool.map(one, venv_cells) if f]
    for failure in failures:
        print(f"  lock failed: {failure}")
    print(f"bin/pcgkit lab lock: {len(locked)} of {len(venv_cells)} cells locked in {locks_dir}")
    return 1 if failures else 0


def _cmd_lock(args) -> int:
    return lock_cells(planned_cells(args), Path(args.locks), jobs=args.jobs)


def register(subparsers) -> None:
    cmd = subparsers.add_parser(
        "lock", help="re-resolve the cells into their committed locks (uv, hashes)",
        description="Re-resolve the matrix's venv cells (uv pip compile --generate-hashes) into their committed locks; runs no cell.",
        epilog="examples:\n  %(prog)s --cell fi-0.7.4\n  %(prog)s --jobs 2")
    add_plan_options(cmd)
    cmd.add_argument("--locks", default=str(DEFAULT_LOCKS_DIR), help="where cell locks live (default fixtures/locks/)")
    cmd.add_argument("--jobs", type=positive_int, default=default_jobs(), help="cells resolved in parallel (default: cores)")
    cmd.set_defaults(func=_cmd_lock)
