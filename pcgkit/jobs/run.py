"""`pcgkit run`: the four trace-level cases in one environment, then reports/.

plan_pytest_argv (pure) -> proc.run (the edge) -> results read back or synthesized as errors
-> summary written. A pytest that hangs or dies still yields a complete results file: the modes
it did not report are `error` cells with the reason and the log tail.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

from pcgkit import resources
from pcgkit.errors import ExitCode, Interrupted, RunAbortedError, UsageError, status_for_results
from pcgkit.harness import targets
from pcgkit.harness.hardware import SIMULATED_SM120
from pcgkit.report.summary import SIMULATION_NOTE, markdown_summary
from pcgkit.util import atomic, proc
from pcgkit.util.argtypes import positive_seconds
from pcgkit.verdicts.catalog import all_modes
from pcgkit.verdicts.result import CaseResult, read_results, write_results
from pcgkit.verdicts.verdict import Verdict


@dataclasses.dataclass(frozen=True)
class RunPlan:
    python: str
    reports_dir: Path
    timeout_s: float
    case_timeout_s: float
    select: str | None = None  # pytest -m expression
    require_hardware: tuple[str, ...] = ()

    @property
    def junit_path(self) -> Path:
        return self.reports_dir / "junit.xml"

    @property
    def results_path(self) -> Path:
        return self.reports_dir / "results.json"

    @property
    def log_path(self) -> Path:
        return self.reports_dir / "pytest.log"


def plan_pytest_argv(plan: RunPlan) -> list[str]:
    """The pytest command line for a run. Pure."""
    argv = [
        plan.python, "-m", "pytest", str(resources.cases_dir()),
        "--rootdir", str(resources.cases_dir()), "-c", str(resources.cases_pytest_ini()),
        "-p", "pcgkit.harness.plugin", "-p", "no:cacheprovider", "-q",
        f"--junitxml={plan.junit_path}",
        f"--pcgkit-json={plan.results_path}",
        f"--pcgkit-case-timeout={plan.case_timeout_s:g}",
    ]
    if plan.select:
        argv += ["-m", plan.select]
    for hw in plan.require_hardware:
        argv.append(f"--pcgkit-require-hardware={hw}")
    return argv


def synthesize_errors(missing_modes: list[str], reason: str, versions: dict) -> list[CaseResult]:
    """Error results for the modes a dead or hung pytest never reported."""
    return [
        CaseResult(
            mode=mode,
            variant=targets.SIM_SM120.id,
            verdict=Verdict.ERROR,
            reason=reason,
            device=SIMULATED_SM120.to_dict(),
            versions=versions,
            duration_s=0.0,
        )
        for mode in missing_modes
    ]


def probe_versions(python: str) -> dict:
    """The environment's versions, asked of its own interpreter (for rows pytest never wrote).
    Empty when that interpreter cannot even start: the error reason then says why."""
    completed = proc.run(
        [python, "-c", "import json; from pcgkit.harness.versions import collect_versions; print(json.dumps(collect_versions()))"],
        cwd=resources.workspace_root(), timeout=120, echo=False,
    )
    if not completed.ok:
        return {}
    try:
        return json.loads(completed.output_tail.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {}


def clear_previous_outputs(plan: RunPlan) -> None:
    """Never let a previous run's files look current beside this one's (an interrupted run included)."""
    for path in (plan.results_path, plan.junit_path, plan.reports_dir / "summary.md"):
        if path.is_file() or path.is_symlink():
            path.unlink()


def interrupted_results(plan: RunPlan, exc: Interrupted) -> None:
    """What an interrupted run leaves: every mode an `error` row "interrupted", and a summary saying so."""
    versions: dict = {}  # after a stop signal no child may start: the rows say the versions are unknown
    reason = f"interrupted ({exc}) before pytest reported: no verdict"
    results = synthesize_errors(list(all_modes()), reason, versions)
    environment = {"versions": versions, "interrupted": str(exc)}
    write_results(plan.results_path, results, environment)
    write_summary(plan, environment, results)


def execute(plan: RunPlan) -> tuple[dict, list[CaseResult], proc.Completed]:
    clear_previous_outputs(plan)
    try:
        completed = proc.run(
            plan_pytest_argv(plan),
            cwd=resources.workspace_root(),
            timeout=plan.timeout_s,
            log_path=plan.log_path,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    except Interrupted as exc:
        interrupted_results(plan, exc)
        raise
    environment: dict = {}
    results: list[CaseResult] = []
    if plan.results_path.exists():
        environment, results = read_results(plan.results_path)
    reported = {r.mode for r in results}
    missing = [m for m in all_modes() if m not in reported]
    if missing and not plan.select:
        reason = f"pytest {completed.describe_failure()} before reporting; log tail: {completed.output_tail[-600:]}"
        versions = environment.get("versions") or probe_versions(plan.python)
        results += synthesize_errors(missing, reason, versions)
        environment.setdefault("versions", versions)
        write_results(plan.results_path, results, environment)
    return environment, results, completed


def write_summary(plan: RunPlan, environment: dict, results: list[CaseResult]) -> Path:
    text = markdown_summary(results, environment)
    if environment.get("interrupted"):
        text = f"> **Interrupted ({environment['interrupted']})**: this run did not finish; no verdict below is a measurement.\n\n" + text
    return atomic.write_text(plan.reports_dir / "summary.md", text)


def check_interpreter(python: str) -> None:
    """`--python` must name an interpreter that exists and can run (a one-line error otherwise)."""
    path = Path(python)
    if os.sep in python and not path.exists():
        raise UsageError(f"--python {python}: no such file")
    if path.is_dir():
        raise UsageError(f"--python {python}: is a folder; give the interpreter, e.g. {path / 'bin' / 'python'}")
    if os.sep in python and not os.access(path, os.X_OK):
        raise UsageError(f"--python {python}: not executable")


def print_console_summary(results: list[CaseResult], environment: dict) -> None:
    from pcgkit.report.terminal import print_run_table

    print("\npcgkit run: verdicts")
    print_run_table(results)
    if any(r.simulated for r in results):
        print(SIMULATION_NOTE)
    versions = environment.get("versions", {})
    print("  versions: " + json.dumps({k: v for k, v in versions.items() if v}))


def _cmd_run(args) -> int:
    plan = RunPlan(
        python=args.python or sys.executable,
        reports_dir=Path(args.reports),
        timeout_s=args.timeout,
        case_timeout_s=args.case_timeout,
        select=args.select,
        require_hardware=tuple(args.require_hardware),
    )
    check_interpreter(plan.python)
    atomic.check_writable_dir(plan.reports_dir, "--reports")
    environment, results, completed = execute(plan)
    if not results:
        last = completed.output_tail.strip().splitlines()[-1:] or [""]
        raise RunAbortedError(f"no results: pytest {completed.describe_failure()}: {last[0][:300]}")
    summary = write_summary(plan, environment, results)
    print_console_summary(results, environment)
    print(f"  reports: {plan.junit_path}, {plan.results_path}, {summary}, {plan.log_path}")
    status = status_for_results(results)
    if status is ExitCode.SUCCESS and completed.returncode not in (0, 5):
        # pytest's own status also says whether every verdict matched its baseline (5: nothing selected)
        status = ExitCode.CHANGED
    return int(status)


def register(subparsers) -> None:
    run = subparsers.add_parser("run", help="run the trace-level cases in one environment and write reports/",
                             description="Run the trace-level cases in one Python environment and write reports/ (junit.xml, results.json, summary.md).",
                             epilog="examples:\n  %(prog)s                                   # this environment, simulated SM120\n  %(prog)s --python ~/sglang-env/bin/python  # the environment that crashed\n  %(prog)s -m sm120 --require-hardware sm120 # a GPU runner: missing SM120 fails, never skips")
    run.add_argument("--python", help="interpreter of the environment to test (default: this one)")
    run.add_argument("--reports", default="reports", help="output folder (default: reports/)")
    run.add_argument("-m", dest="select", help="pytest marker expression, e.g. 'cpu_sim' or 'sm120'")
    run.add_argument("--timeout", type=positive_seconds, default=1800, help="seconds for the whole run (default 1800)")
    run.add_argument("--case-timeout", type=positive_seconds, default=600, help="seconds per case (default 600)")
    run.add_argument(
        "--require-hardware", action="append", default=[], choices=targets.HARDWARE_MARKERS,
        help="fail instead of skip when this hardware is missing (GPU runners)",
    )
    run.set_defaults(func=_cmd_run)
