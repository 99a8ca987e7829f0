"""`pcgkit parity`: the cases simulated and on the real GPU here, compared mode by mode (pcgkit.jobs.parity)."""

from __future__ import annotations

import datetime as _dt
import os
import sys
import time
from pathlib import Path
from unittest import mock

from pcgkit.catalog import all_modes
from pcgkit.errors import UsageError
from pcgkit.harness import hardware
from pcgkit.jobs import run as runjob
from pcgkit.jobs.parity import SIMULATED_VARIANTS, compare, render_markdown, simulated_arch_for, to_json
from pcgkit.util import atomic
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import CaseResult, read_results


def _run(python: str, reports_dir: Path, select: str, require: tuple[str, ...], timeout_s: float):
    plan = runjob.RunPlan(
        python=python, reports_dir=reports_dir, timeout_s=timeout_s, case_timeout_s=min(600.0, timeout_s),
        select=select, require_hardware=require, expected_modes=tuple(all_modes()),
    )
    reports_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    environment, results, _ = runjob.execute(plan)
    return environment, results, round(time.monotonic() - start, 1)


def _cmd_parity(args) -> int:
    out = Path(args.reports)
    if args.from_results:
        results: list[CaseResult] = []
        environment: dict = {}
        for path in args.from_results:
            env, found = read_results(Path(path))
            environment = environment or env
            results += found
        walls = {"simulated_wall_s": "n/a (from files)", "real_wall_s": "n/a (from files)"}
        command = "pcgkit parity --from-results " + " ".join(args.from_results)
        simulated_arch = next((r.variant.removeprefix("sim-") for r in results if r.variant in SIMULATED_VARIANTS),
                              "sm120")
    else:
        python = args.python or sys.executable
        simulated_arch = args.simulate_arch
        if simulated_arch == "auto":
            simulated_arch = simulated_arch_for(hardware.detect_cuda_devices())
        # The cases' plugin reads the arch from the environment (--pcgkit-simulate-arch's variable).
        with mock.patch.dict(os.environ, {"PCGKIT_SIMULATE_ARCH": simulated_arch}):
            environment, simulated, sim_wall = _run(python, out / "simulated", "cpu_sim", (), args.timeout)
        _, real, real_wall = _run(python, out / "real", "gpu or sm120", ("gpu",), args.timeout)
        results = simulated + real
        walls = {"simulated_wall_s": sim_wall, "real_wall_s": real_wall}
        command = f"pcgkit parity --simulate-arch {simulated_arch}"
    if not results:
        raise UsageError("no results to compare (did pytest run? see the logs under the reports folder)")
    rows = compare(results)
    real_device = next((r.real.device for r in rows if r.real and r.real.verdict != Verdict.SKIPPED.value), "none (all skipped)")
    meta = {
        "date": _dt.datetime.now(_dt.timezone.utc).date().isoformat(),
        "real_device": real_device,
        "versions": environment.get("versions", {}),
        "command": command,
        "simulated_arch": simulated_arch,
        **walls,
    }
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_text(out / "parity.md", render_markdown(rows, meta))
    atomic.write_json(out / "parity.json", to_json(rows, meta), indent=2)
    print(render_markdown(rows, meta))
    print(f"reports: {out / 'parity.md'}, {out / 'parity.json'}")
    compared = [r for r in rows if r.status in ("match", "DIFFERENT")]
    if not compared:
        print("pcgkit parity: nothing was compared: no real-GPU result (see the reasons above)", file=sys.stderr)
        return 1
    return 0 if all(r.status in ("match", "not compared", "real only") for r in rows) else 1


def register(subparsers) -> None:
    parity = subparsers.add_parser(
        "parity", help="run the cases simulated and on the real GPU here, and compare them mode by mode",
        description="Run the cases simulated and on this machine's real GPU, and compare verdict, graph-break id and innermost frame per mode.",
        epilog="examples:\n  %(prog)s                      # on a GPU machine\n  %(prog)s --from-results sim/results.json gpu/results.json",
    )
    parity.add_argument("--python", help="interpreter of the environment to test (default: this one)")
    parity.add_argument("--reports", default="reports/parity", help="output folder (default: reports/parity)")
    parity.add_argument("--timeout", type=float, default=1800, help="seconds per run (default 1800)")
    parity.add_argument(
        "--simulate-arch", default="auto", choices=["auto", *sorted(hardware.SIMULATED_ARCHES)],
        help="arch the simulated run answers as (default auto: the real GPU's family, e.g. sm90 on an H200)",
    )
    parity.add_argument(
        "--from-results", nargs="+", metavar="RESULTS_JSON",
        help="compare existing results files (pcgkit.results/1) instead of running",
    )
    parity.set_defaults(func=_cmd_parity)
