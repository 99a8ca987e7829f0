"""Benchmark: one fresh matrix cell against its floor, side by side, ratios printed from one run.

cell:  `pcgkit matrix --cell ID --force` into an empty environments folder (uv's cache warm, the
       FlashInfer JIT cache and the cells' bytecode warm from an untimed first run: the JIT cache is
       shared by key, see pcgkit.matrix.jitcache; the bytecode by the cell's environment path, see
       pcgkit.matrix.backends.venv.BYTECODE_DIR), timed end to end as a user sees it; the first run's
       wall is printed too (what a cell never built here costs, the JIT cache aside).
floor: the unavoidable work done bare: `uv venv` + `uv pip sync --require-hashes` of the same
       committed lock (the environment from the warm cache), then benchmarks/floor_traces.py in it:
       the imports and every trace the cell's cases performed (the modes that ran in the cell,
       read from its results), with no pytest, plugin, evidence or reports.
Repeats alternate cell and floor; medians are compared. Target (issue 16): cell <= 1.3x floor.
The cell's own cost breakdown (cell.json `costs`) is printed beside it.

    .venv/bin/python benchmarks/bench_cell_vs_floor.py [--cell seed] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

from lab.matrix.costs_table import render_breakdown
from pcgkit.matrix import locks
from pcgkit.matrix.jitcache import ENV_VAR
from pcgkit.util import proc
from pcgkit.util.interpreters import find_python

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 3600.0


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["UV_PYTHON_DOWNLOADS"] = "never"
    return env


def run_cell(cell_id: str, work: Path) -> tuple[float, dict]:
    """One fresh cell through the CLI; (wall seconds, its cell.json)."""
    shutil.rmtree(work / "envs", ignore_errors=True)
    reports = work / "reports"
    argv = [sys.executable, "-m", "pcgkit.cli", "matrix", "--cell", cell_id, "--envs", str(work / "envs"),
            "--reports", str(reports), "--jobs", "1", "--force"]
    done = proc.run(argv, cwd=ROOT, env={**_env(), "PYTHONPATH": str(ROOT)}, timeout=TIMEOUT_S, log_path=work / "cell.log")
    cell = json.loads((reports / "matrix" / "cells" / cell_id / "cell.json").read_text())
    if cell["status"] != "ran":
        raise SystemExit(f"cell {cell_id} did not run: {cell['reason']}")
    return done.duration_s, cell


def run_floor(cell: dict, work: Path, jit_base: str) -> tuple[float, dict]:
    """The floor for that cell: same lock synced into a fresh venv, then the bare traces; (wall, traces JSON)."""
    env_dir = work / "floor-env"
    shutil.rmtree(env_dir, ignore_errors=True)
    python = find_python(cell["cell"]["python"])
    lock = locks.lock_path(locks.DEFAULT_LOCKS_DIR, cell["cell"]["id"])
    modes = sorted({r["mode"] for r in cell["results"] if r["variant"] == "sim-sm120" and r["verdict"] in
                    ("reproduced", "fixed", "drifted")})
    total = 0.0
    for argv in ([*proc.uv_command(), "venv", "--python", python, str(env_dir)],
                 [*proc.uv_command(), "pip", "sync", "--python", str(env_dir / "bin" / "python"), "--require-hashes", str(lock)]):
        done = proc.run(argv, env=_env(), timeout=TIMEOUT_S, echo=False)
        if not done.ok:
            raise SystemExit(f"floor install failed: {done.describe_failure()}\n{done.output_tail}")
        total += done.duration_s
    done = proc.run([str(env_dir / "bin" / "python"), str(ROOT / "benchmarks" / "floor_traces.py"), *modes], cwd=ROOT,
                    env={**_env(), "PYTHONPATH": str(ROOT), ENV_VAR: jit_base}, timeout=TIMEOUT_S, echo=False)
    if not done.ok:
        raise SystemExit(f"floor traces failed: {done.output_tail}")
    return total + done.duration_s, json.loads(done.output_tail.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cell", default="seed")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", default=str(ROOT / ".pcgkit" / "bench-cell"))
    parser.add_argument("--json", help="write the measurements here")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    first_wall, warm = run_cell(args.cell, work)  # not in the medians: fills uv's cache, the JIT cache, the bytecode
    jit_base = next(iter(_jit_dirs(work)), "")  # the one key this cell uses
    cells, floors, last_cell, last_floor = [], [], warm, {}
    for _ in range(args.repeats):
        wall, last_cell = run_cell(args.cell, work)
        cells.append(wall)
        wall, last_floor = run_floor(last_cell, work, jit_base)
        floors.append(wall)
    c, f = statistics.median(cells), statistics.median(floors)
    load = os.getloadavg()
    print(f"\ncell {args.cell}: fresh environment, uv cache, FlashInfer JIT cache and the cell's bytecode warm; load average "
          f"{load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores")
    print(f"{'':<34}{'median s':>10}  runs")
    print(f"{'floor (venv+sync, import, traces)':<34}{f:>10.2f}  {', '.join(f'{t:.1f}' for t in floors)}")
    print(f"{'pcgkit matrix --cell ' + args.cell:<34}{c:>10.2f}  {', '.join(f'{t:.1f}' for t in cells)}")
    print(f"ratio cell/floor: {c / f:.2f}x (target <= 1.30x)")
    print(f"the first run (not in the medians; this cell's bytecode cold unless an earlier run left it): {first_wall:.2f} s")
    print(f"outside the cell (CLI start, plan, merged report: wall - cell total, last run): "
          f"{cells[-1] - last_cell['costs']['total']:.2f} s")
    print("cell breakdown (last run):")
    print("\n".join(render_breakdown(last_cell["costs"], top_cases=12)))
    print(f"floor: import {last_floor.get('import_s')} s, traces {sum(last_floor.get('traces_s', {}).values()):.2f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"cell": args.cell, "first_cell_s": first_wall, "cell_s": cells, "floor_s": floors, "ratio": round(c / f, 3),
                                               "load": load, "costs": last_cell["costs"], "floor": last_floor}, indent=2) + "\n")
    return 0


def _jit_dirs(work: Path) -> list[str]:
    root = work / "flashinfer-jit"
    return sorted(str(p) for p in root.iterdir()) if root.is_dir() else []


if __name__ == "__main__":
    sys.exit(main())
