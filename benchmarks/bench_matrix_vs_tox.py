"""Benchmark: the same matrix cells through `pcgkit matrix` and through `tox -p` with tox-uv (the same
installer), using the shipped tox.ini (its generated section is `bin/pcgkit lab tox`), verdicts compared.

fresh: every environment built anew with warm caches (pcgkit: an empty --envs folder and --force;
       tox: `run-parallel -r`). uv's cache is warm for both (an untimed warm-up run of each first);
       the FlashInfer JIT cache of pcgkit's cells is shared by key, tox's cells use FlashInfer's
       default (~/.cache/flashinfer), warmed by the same warm-up.
warm:  the same command again with nothing changed: pcgkit reuses each cell's result (same
       definition hash, the lock included), tox reuses its environments and reruns the cases.
Targets (issue 16): pcgkit not slower fresh, >= 20x faster warm. Verdicts must agree cell by cell.
A matrix-growth table (the wall for the first 1, 2, ... cells, fresh) is printed with --growth.

    .venv/bin/python benchmarks/bench_matrix_vs_tox.py [--cell seed --cell fi-0.5.3] [--jobs 2] [--growth]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from lab.matrix.tox_export import factor
from pcgkit.util import proc
from pcgkit.util.proc import uv_command

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CELLS = ("seed", "fi-0.5.3")
RUN_TIMEOUT_S = 3600.0


def read_verdicts(results_json: Path) -> dict[tuple[str, str], str]:
    """(case, variant) -> verdict from a results.json; empty when the file is missing or unreadable."""
    try:
        data = json.loads(results_json.read_text())
    except (OSError, ValueError):
        return {}
    return {(r["mode"], r["variant"]): r["verdict"] for r in data.get("results", ())}


def compare_verdicts(pcgkit: dict, tox: dict) -> list[str]:
    """Human-readable differences between two cells' verdicts; [] when they agree and are non-empty. Pure."""
    if not pcgkit or not tox:
        return [f"missing results (pcgkit: {len(pcgkit)}, tox: {len(tox)})"]
    return [
        f"{case}[{variant}]: pcgkit {pcgkit.get((case, variant))} vs tox {tox.get((case, variant))}"
        for case, variant in sorted(set(pcgkit) | set(tox))
        if pcgkit.get((case, variant)) != tox.get((case, variant))
    ]


def _env(python_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{python_dir}{os.pathsep}{env.get('PATH', '')}"  # tox's base_python "python3.12"
    env["UV_PYTHON_DOWNLOADS"] = "never"
    return env


def ensure_tox(work: Path) -> Path:
    """A venv holding tox and tox-uv: the same installer pcgkit uses."""
    tox = work / "tox-venv" / "bin" / "tox"
    if not tox.exists():
        venv = work / "tox-venv"
        for argv in ([*uv_command(), "venv", "--python", sys.executable, str(venv)],
                     [*uv_command(), "pip", "install", "--python", str(venv / "bin" / "python"), "tox>=4.2", "tox-uv>=1"]):
            done = proc.run(argv, timeout=600)
            if not done.ok:
                raise SystemExit(f"could not install tox: {done.describe_failure()}\n{done.output_tail}")
    return tox


def pcgkit_run(cells: list[str], work: Path, jobs: int, env: dict, fresh: bool) -> float:
    envs, reports = work / "pcgkit-envs", work / "pcgkit-reports"
    if fresh:
        shutil.rmtree(envs, ignore_errors=True)
    argv = [sys.executable, "-m", "pcgkit.cli", "matrix", "--envs", str(envs), "--reports", str(reports), "--jobs", str(jobs)]
    argv += ["--force"] if fresh else []
    for cell in cells:
        argv += ["--cell", cell]
    done = proc.run(argv, cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)}, timeout=RUN_TIMEOUT_S, log_path=work / "pcgkit-run.log")
    if done.timed_out:
        raise SystemExit(f"pcgkit matrix timed out: {done.output_tail}")
    return done.duration_s


def tox_run(cells: list[str], work: Path, tox: Path, jobs: int, env: dict, fresh: bool) -> float:
    names = ",".join(f"cell-{factor_of(c)}" for c in cells)
    argv = [str(tox), "-c", str(ROOT / "tox.ini"), "--workdir", str(work / ".tox"), "run-parallel", "-p", str(jobs), "-e", names]
    argv += ["-r"] if fresh else []
    done = proc.run(argv, cwd=ROOT, env=env, timeout=RUN_TIMEOUT_S, log_path=work / "tox-run.log")
    if done.timed_out:
        raise SystemExit(f"tox timed out: {done.output_tail}")
    return done.duration_s


def factor_of(cell_id: str) -> str:
    from pcgkit.matrix.cells import Cell

    return factor(Cell(cell_id))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cell", action="append", help=f"matrix cell id (repeatable; default {', '.join(DEFAULT_CELLS)})")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cells in parallel, both tools")
    parser.add_argument("--work", default=str(ROOT / ".pcgkit" / "bench-tox"), help="scratch folder (envs: GBs)")
    parser.add_argument("--skip-warmup", action="store_true", help="caches already warm from a previous run")
    parser.add_argument("--growth", action="store_true", help="also time fresh pcgkit runs of the first 1, 2, ... cells")
    parser.add_argument("--json", help="write the measurements here")
    args = parser.parse_args()
    cells = list(args.cell or DEFAULT_CELLS)
    from pcgkit.util.interpreters import find_python

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    env = _env(Path(find_python("3.12") or sys.executable).parent)
    tox = ensure_tox(work)
    if not args.skip_warmup:
        print("warm-up (untimed): one pcgkit run and one tox run fill uv's and FlashInfer's caches", flush=True)
        pcgkit_run(cells, work, args.jobs, env, fresh=True)
        tox_run(cells, work, tox, args.jobs, env, fresh=True)
    times = {
        "pcgkit_fresh": pcgkit_run(cells, work, args.jobs, env, fresh=True),
        "tox_fresh": tox_run(cells, work, tox, args.jobs, env, fresh=True),
        "pcgkit_warm": pcgkit_run(cells, work, args.jobs, env, fresh=False),
        "tox_warm": tox_run(cells, work, tox, args.jobs, env, fresh=False),
    }
    differences = {
        c: compare_verdicts(read_verdicts(work / "pcgkit-reports" / "matrix" / "cells" / c / "results.json"),
                            read_verdicts(ROOT / "reports" / "tox" / f"cell-{factor_of(c)}" / "results.json"))
        for c in cells
    }
    growth = {}
    if args.growth:
        for n in range(1, len(cells) + 1):
            growth[n] = round(pcgkit_run(cells[:n], work, args.jobs, env, fresh=True), 1)
    load = os.getloadavg()
    print(f"\n{len(cells)} cells ({', '.join(cells)}), {args.jobs} in parallel; load average {load[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'':<12}{'pcgkit s':>10}{'tox-uv s':>10}{'tox/pcgkit':>12}")
    for kind, target in (("fresh", ">= 1.0x"), ("warm", ">= 20x")):
        p, t = times[f"pcgkit_{kind}"], times[f"tox_{kind}"]
        print(f"{kind:<12}{p:>10.1f}{t:>10.1f}{t / p:>11.2f}x  (target {target})")
    for n, wall in growth.items():
        print(f"  growth: {n} cell(s) fresh: {wall:.1f} s")
    for cell_id, diff in differences.items():
        print(f"  verdicts {cell_id}: " + ("identical in pcgkit and tox" if not diff else "; ".join(diff)))
    if args.json:
        Path(args.json).write_text(json.dumps({"cells": cells, "jobs": args.jobs, "load": load, **times, "growth": growth,
                                               "verdict_differences": differences}, indent=2) + "\n")
    return 1 if any(differences.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
