"""Benchmark: the same N matrix cells through `pcgkit matrix` (uv) and through plain tox (virtualenv + pip).

Both build every cell's environment from scratch on each timed run (pcgkit: an empty --envs folder;
tox: -r, recreate) with their package caches warm: one untimed warm-up run of each comes first, so
uv's cache holds every wheel. pip's HTTP cache cannot be warmed on machines whose PyPI proxy strips
Cache-Control/ETag/Last-Modified (pip then stores nothing: measured here, 2026-11-29), so pip's
warm-up downloads every wheel the cells need into a local wheelhouse, and the timed tox run installs
from it with no index at all (PIP_NO_INDEX, PIP_FIND_LINKS): at least as fast as a warm pip cache.
Both then run the same cases (`pcgkit run` inside the cell) with the same parallelism. The tox configuration is `pcgkit matrix --tox`'s, rendered for
the pip runner (pcgkit.matrix.tox_export.render_tox(installer="pip")). Target: pcgkit >= 5x faster.

After the timed runs the verdicts of both are compared case by case (same cell, same case, same
verdict), so the speed is not bought with different answers.

    .venv/bin/python benchmarks/bench_matrix_vs_tox.py [--cell seed --cell fi-0.5.3] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import tomllib

from pcgkit.matrix import pins as pins_mod
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.deps import kit_light_dependencies
from pcgkit.matrix.plan import DEFAULT_MATRIX_FILE, load_matrix, plan
from pcgkit.matrix.tox_export import PIP, factor, render_tox
from pcgkit.util import proc
from pcgkit.util.interpreters import find_python
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
    # tox's base_python is "python3.12": put the real interpreter ahead of pyenv's shims.
    env["PATH"] = f"{python_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


def ensure_tox(work: Path) -> Path:
    """A venv holding plain tox (no tox-uv): the baseline runner, virtualenv + pip."""
    tox = work / "tox-venv" / "bin" / "tox"
    if not tox.exists():
        venv = work / "tox-venv"
        for argv in ([*uv_command(), "venv", "--python", sys.executable, str(venv)],
                     [*uv_command(), "pip", "install", "--python", str(venv / "bin" / "python"), "tox>=4.2"]):
            done = proc.run(argv, timeout=600)
            if not done.ok:
                raise SystemExit(f"could not install tox: {done.describe_failure()}\n{done.output_tail}")
    return tox


def wheelhouse_commands(cells: list[Cell], python: str, wheelhouse: Path) -> list[list[str]]:
    """pip download commands that fetch every wheel the tox environments install. Pure."""
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    download = [python, "-m", "pip", "download", "--dest", str(wheelhouse)]
    commands = [[*download, *build, "pip", "wheel"]]  # the kit's editable build, and a seeded pip
    for cell in cells:
        commands.append([*download, *cell.requirements(), *cell.constraints, *kit_light_dependencies()])
        if cell.sglang:
            commands.append([*download, "--no-deps", f"sglang=={cell.sglang}"])
    return commands


def warm_pip(cells: list[Cell], python: str, work: Path, env: dict) -> dict:
    """Fill the wheelhouse; the environment in which tox's pip then installs from it alone."""
    wheelhouse = work / "wheelhouse"
    for argv in wheelhouse_commands(cells, python, wheelhouse):
        done = proc.run(argv, env=env, timeout=RUN_TIMEOUT_S, log_path=work / "wheelhouse.log")
        if not done.ok:
            raise SystemExit(f"pip download failed: {done.describe_failure()}\n{done.output_tail}")
    return {**env, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse)}


def pcgkit_run(cells: list[Cell], work: Path, jobs: int, env: dict) -> float:
    """One `pcgkit matrix` over the cells from an empty environments folder; wall seconds."""
    envs, reports = work / "pcgkit-envs", work / "pcgkit-reports"
    shutil.rmtree(envs, ignore_errors=True)
    shutil.rmtree(reports, ignore_errors=True)
    argv = [sys.executable, "-m", "pcgkit.cli", "matrix", "--envs", str(envs), "--reports", str(reports),
            "--jobs", str(jobs), "--force"]
    for cell in cells:
        argv += ["--cell", cell.id]
    done = proc.run(argv, cwd=ROOT, env=env, timeout=RUN_TIMEOUT_S, log_path=work / "pcgkit-run.log")
    if done.timed_out:
        raise SystemExit(f"pcgkit matrix timed out: {done.output_tail}")
    return done.duration_s


def tox_run(cells: list[Cell], work: Path, tox: Path, jobs: int, env: dict) -> float:
    """One plain-tox run over the same cells, every environment recreated (-r); wall seconds."""
    shutil.rmtree(work / "reports", ignore_errors=True)
    names = ",".join(f"cell-{factor(c)}" for c in cells)
    argv = [str(tox), "-c", str(work / "tox.ini"), "--workdir", str(work / ".tox")]
    argv += ["run", "-r", "-e", names] if jobs <= 1 else ["run-parallel", "-p", str(jobs), "-r", "-e", names]
    done = proc.run(argv, cwd=work, env=env, timeout=RUN_TIMEOUT_S, log_path=work / "tox-run.log")
    if done.timed_out:
        raise SystemExit(f"tox timed out: {done.output_tail}")
    return done.duration_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cell", action="append", help=f"matrix cell id (repeatable; default {', '.join(DEFAULT_CELLS)})")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cells in parallel, both tools")
    parser.add_argument("--work", default=str(ROOT / ".pcgkit" / "bench-tox"), help="scratch folder (envs: GBs)")
    parser.add_argument("--skip-warmup", action="store_true", help="caches already warm from a previous run")
    parser.add_argument("--warmup-only", action="store_true", help="only the untimed warm-up runs, then stop")
    parser.add_argument("--json", help="write the measurements here")
    parser.add_argument("--clean", action="store_true", help="delete the scratch environments at the end")
    args = parser.parse_args()

    cells = plan(load_matrix(DEFAULT_MATRIX_FILE), pins_mod.load_pins(pins_mod.DEFAULT_PINS_FILE),
                 only=tuple(args.cell or DEFAULT_CELLS))
    base_python = find_python(cells[0].python)
    if base_python is None:
        raise SystemExit(f"no Python {cells[0].python} on this machine")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    (work / "tox.ini").write_text(render_tox(cells, installer=PIP, kit_dir=str(ROOT)))
    env = _env(Path(base_python).parent)
    tox = ensure_tox(work)

    if not args.skip_warmup:
        print("warm-up (untimed): one pcgkit run (uv's cache), pip's wheelhouse, one tox run", flush=True)
        pcgkit_run(cells, work, args.jobs, env)
    tox_env = warm_pip(cells, base_python, work, env)
    if not args.skip_warmup:
        tox_run(cells, work, tox, args.jobs, tox_env)
        if args.warmup_only:
            return 0
    pcgkit_s = pcgkit_run(cells, work, args.jobs, env)
    tox_s = tox_run(cells, work, tox, args.jobs, tox_env)

    differences = {}
    for cell in cells:
        ours = read_verdicts(work / "pcgkit-reports" / "matrix" / "cells" / cell.id / "results.json")
        theirs = read_verdicts(work / "reports" / "tox" / f"cell-{factor(cell)}" / "results.json")
        differences[cell.id] = compare_verdicts(ours, theirs)

    ids = ", ".join(c.id for c in cells)
    print(f"\n{len(cells)} cells ({ids}), {args.jobs} in parallel, fresh environments, warm caches")
    print(f"  pcgkit matrix (uv):       {pcgkit_s:8.1f} s")
    print(f"  tox (virtualenv + pip):   {tox_s:8.1f} s   (pip from a local wheelhouse, no index)")
    print(f"  ratio tox/pcgkit:         {tox_s / pcgkit_s:8.2f}x (target >= 5x)")
    for cell_id, diff in differences.items():
        print(f"  verdicts {cell_id}: " + ("identical in pcgkit and tox" if not diff else "; ".join(diff)))
    if args.json:
        Path(args.json).write_text(json.dumps({
            "cells": [c.id for c in cells], "jobs": args.jobs, "pcgkit_s": round(pcgkit_s, 1),
            "tox_pip_s": round(tox_s, 1), "ratio": round(tox_s / pcgkit_s, 2), "verdict_differences": differences,
        }, indent=2) + "\n")
    if args.clean:
        for sub in ("pcgkit-envs", ".tox"):
            shutil.rmtree(work / sub, ignore_errors=True)
    return 1 if any(differences.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
