"""Benchmark: `pcgkit run` (all four modes, one pytest process) against its floor, side by side.

The floor is `python -c "import torch, flashinfer"` plus the four bare traces
(benchmarks/floor_traces.py). Both run in the same environment, alternating, N times each;
medians are compared. Target: pcgkit run within 1.5x of the floor.

    .venv/bin/python benchmarks/bench_run_vs_floor.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from pcgkit.util import proc

ROOT = Path(__file__).resolve().parent.parent


def timed(argv: list[str]) -> float:
    completed = proc.run(argv, cwd=ROOT, echo=False, timeout=1200)
    if completed.returncode not in (0,) and "pcgkit" not in argv[1]:
        raise SystemExit(f"{argv} failed: {completed.describe_failure()}\n{completed.output_tail}")
    return completed.duration_s


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    python = sys.executable
    floor_cmd = [python, str(ROOT / "benchmarks" / "floor_traces.py")]
    with tempfile.TemporaryDirectory() as reports:
        run_cmd = [python, "-m", "pcgkit.cli", "run", "--reports", reports]
        timed(floor_cmd)  # warm the OS page cache and .pyc files for both
        floor, run = [], []
        for _ in range(args.repeats):
            floor.append(timed(floor_cmd))
            run.append(timed(run_cmd))
    f, r = statistics.median(floor), statistics.median(run)
    print(f"{'':<28}{'median s':>10}  runs")
    print(f"{'floor (import + 4 traces)':<28}{f:>10.2f}  {', '.join(f'{t:.2f}' for t in floor)}")
    print(f"{'pcgkit run (4 modes)':<28}{r:>10.2f}  {', '.join(f'{t:.2f}' for t in run)}")
    print(f"ratio pcgkit/floor: {r / f:.2f}x (target <= 1.50x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
