"""Benchmark: the README's test command (`bin/pcgkit test`) on a fresh clone, timed as a contributor meets it.

A `git clone` of the checkout into a temporary folder (no .venv, no .pytest_cache, no FlashInfer JIT cache of
its own; uv's cache is the machine's, as on any machine that has run uv before), then `bin/pcgkit test` there
with --durations. Prints the wall time (the reference environment's build included, and apart), the CPU time of
the whole tree (the fair figure on a shared machine: compare it with cores x wall), the load average before and
after, the pytest summary line and the slowest tests. Target (issue 35): under 8 minutes on 2 cores.

    .venv/bin/python benchmarks/bench_suite.py [--source .] [--keep] [--json out.json] [-- extra pytest args]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from pcgkit.util import proc

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 8 * 60
# pytest's last line, decorated (`=== 3 passed in 1.0s ===`) or, under -q, bare (`3 passed in 1.0s`)
SUMMARY = re.compile(r"^(?:=+ )?(\d+ (?:passed|failed|errors?|skipped|deselected)\b.*? in [\d.]+s(?: \([\d:]+\))?)(?: =+)?$",
                     re.MULTILINE)
DURATION = re.compile(r"^(\d+\.\d+)s (call|setup|teardown)\s+(\S+)$", re.MULTILINE)


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=str(ROOT), help="the checkout to clone (default: this one)")
    parser.add_argument("--keep", action="store_true", help="keep the clone afterwards")
    parser.add_argument("--json", help="write the measurement here")
    parser.add_argument("pytest_args", nargs="*", help="extra arguments for bin/pcgkit test (after --)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pcgkit-bench-suite-"))
    clone = work / "clone"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    try:
        proc.run(["git", "clone", "-q", args.source, str(clone)], echo=False, timeout=600)
        load_before = os.getloadavg()
        cpu0, start = children_cpu_s(), time.monotonic()
        build = proc.run(["bash", str(clone / "bin" / "pcgkit"), "test", "--version"], cwd=clone, env=env, echo=False,
                         timeout=3600)
        build_s = time.monotonic() - start
        done = proc.run(["bash", str(clone / "bin" / "pcgkit"), "test", "--durations=25", "-q", *args.pytest_args],
                        cwd=clone, env=env, echo=False, timeout=7200, log_path=work / "pytest.log",
                        progress="bin/pcgkit test on a fresh clone")
        wall, cpu = time.monotonic() - start, children_cpu_s() - cpu0
        log = (work / "pytest.log").read_text(errors="replace")
        summary = (SUMMARY.findall(log) or ["no summary line"])[-1]
        slowest = [(float(s), phase, test) for s, phase, test in DURATION.findall(log)][:25]
        load_after = os.getloadavg()
        print(f"bin/pcgkit test on a fresh clone of {args.source}: {wall:.0f} s wall ({wall / 60:.1f} min; target "
              f"{TARGET_S / 60:.0f} min), of which building .venv {build_s:.0f} s (exit {build.returncode}); "
              f"CPU {cpu:.0f} s over {os.cpu_count()} cores; pytest exit {done.returncode}: {summary}")
        print(f"load average before {load_before[0]:.1f}, after {load_after[0]:.1f} (1 min)")
        for seconds, phase, test in slowest:
            print(f"  {seconds:8.2f} s {phase:<8} {test}")
        if args.json:
            Path(args.json).write_text(json.dumps({
                "wall_s": round(wall, 1), "build_s": round(build_s, 1), "cpu_s": round(cpu, 1), "cores": os.cpu_count(),
                "load_before": load_before, "load_after": load_after, "exit": done.returncode, "summary": summary,
                "slowest": slowest, "args": args.pytest_args}, indent=1) + "\n")
        return 0 if done.ok else 1
    finally:
        if args.keep:
            print(f"clone kept in {clone}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
