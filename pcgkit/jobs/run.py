"""`pcgkit run`: the four trace-level cases in one environment, then reports/.

plan_pytest_argv (pure) -> proc.run (the edge) -> results read back or synthesized as errors
-> summary written. A pytest that hangs or dies still yields a complete results file: the modes
it did not report are `error` cells with the reason and the log tail.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import sys
from pathlib import Path

from pcgkit import resources
from pcgkit.errors import RunAbortedError, UsageError
from pcgkit.harness import targets
from pcgkit.harness.hardware import SIMULATED_SM120
from pcgkit.report.summary import console_lines, markdown_summary
from pcgkit.util import proc
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
    env: tuple[tuple[str, str], ...] = ()  # added to the run's environment (a cell's FlashInfer JIT cache)

    @property
    def junit_path(self) -> Path:
        return self.reports_dir / "junit.xml"

    @property
    def results_path(self) -> Path:
        return self.reports_dir / "results.json"

    @property
    def log_path(self) -> Path:
        return self.reports_dir / "pytest.log"

    @property
    def costs_path(self) -> Path:
        """Import and pytest seconds, written by pcgkit.jobs.cellmain inside the environment."""
        return self.reports_dir / "run-costs.json"


def plan_pytest_argv(plan: RunPlan) -> list[str]:
    """The command line for a run: pytest inside pcgkit.jobs.cellmain, which imports the stack first. Pure."""
    argv = [
        plan.python, "-m", "pcgkit.jobs.cellmain", str(plan.costs_path), "--", str(resources.cases_dir()),
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


def _import_error(costs_path: Path) -> str | None:
    """The import failure pcgkit.jobs.cellmain recorded (its costs file), None when the stack imported."""
    try:
        return json.loads(costs_path.read_text()).get("import_error")
    except (OSError, ValueError, AttributeError):
        return None


def execute(plan: RunPlan) -> tuple[dict, list[CaseResult], proc.Completed]:
    for stale in (plan.results_path, plan.costs_path):
        if stale.exists():
            stale.unlink()  # never report a previous run's verdicts (or costs) as this run's
    completed = proc.run(
        plan_pytest_argv(plan),
        cwd=resources.workspace_root(),
        timeout=plan.timeout_s,
        log_path=plan.log_path,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **dict(plan.env)},
    )
    environment: dict = {}
    results: list[CaseResult] = []
    if plan.results_path.exists():
        environment, results = read_results(plan.results_path)
    reported = {r.mode for r in results}
    missing = [m for m in all_modes() if m not in reported]
    import_error = _import_error(plan.costs_path)
    # A selection may leave modes out on purpose; an import failure stops every case it would have run.
    if missing and (not plan.select or import_error):
        reason = f"pytest {completed.describe_failure()} before reporting; log tail: {completed.output_tail[-600:]}"
        if import_error:  # pcgkit.jobs.cellmain stopped before pytest: the stack itself does not import
            reason = f"broken install: import failed before any case ran: {import_error}"
        versions = environment.get("versions") or probe_versions(plan.python)
        results += synthesize_errors(missing, reason, versions)
        environment.setdefault("versions", versions)
        write_results(plan.results_path, results, environment)
    return environment, results, completed


def write_summary(plan: RunPlan, environment: dict, results: list[CaseResult]) -> Path:
    path = plan.reports_dir / "summary.md"
    path.write_text(markdown_summary(results, environment))
    return path


def print_console_summary(results: list[CaseResult], environment: dict) -> None:
    print("\npcgkit run: verdicts")
    for line in console_lines(results):
        print("  " + line)
    versions = environment.get("versions", {})
    print("  versions: " + json.dumps({k: v for k, v in versions.items() if v}))


# What `pcgkit run` needs in the environment it tests, by distribution name (the kit's own light
# dependencies are added from its metadata).
RUN_NEEDS = ("torch", "flashinfer-python", "pytest")


def preflight_problem(python: str, report: dict | None, kit_root: str) -> str | None:
    """The one-line reason ENV cannot run the cases (None when it can), from preflight's report. Pure."""
    if report is None:
        return f"--python {python}: not a runnable Python interpreter"
    missing = list(report.get("missing", ()))
    parts = []
    if missing:
        parts.append(f"lacks {', '.join(missing)}: install {'them' if len(missing) > 1 else 'it'} there "
                     f"(`{python} -m pip install {' '.join(missing)}`)")
    if not report.get("kit"):
        source = kit_root or "the pcgkit checkout"
        parts.append(f"cannot import pcgkit: install the kit there (`{python} -m pip install --no-deps -e {source}`)")
    return f"--python {python} (Python {report.get('python')}) " + "; ".join(parts) if parts else None


def preflight(python: str) -> str | None:
    """Ask ENV (by running preflight.py as a file: nothing needed there) whether it can run the cases."""
    from packaging.requirements import Requirement

    from pcgkit.matrix.deps import kit_light_dependencies

    needs = list(dict.fromkeys([*RUN_NEEDS, *(Requirement(r).name for r in kit_light_dependencies())]))
    root = resources.checkout_root()
    kit_root = str(root) if root is not None else ""
    try:
        spec = importlib.util.find_spec("pcgkit.jobs.preflight")  # run as a file: nothing needed in ENV
        assert spec is not None and spec.origin is not None
        done = proc.run([python, spec.origin, kit_root, *needs], timeout=60, echo=False)
    except OSError:
        done = None
    report = None
    if done is not None and done.ok:
        try:
            report = json.loads(done.output_tail.strip().splitlines()[-1])
        except (ValueError, IndexError):
            report = None
    return preflight_problem(python, report, kit_root)


def _cmd_run(args) -> int:
    if args.python:
        problem = preflight(args.python)
        if problem:
            raise UsageError(problem)
    plan = RunPlan(
        python=args.python or sys.executable,
        reports_dir=Path(args.reports),
        timeout_s=args.timeout,
        case_timeout_s=args.case_timeout,
        select=args.select,
        require_hardware=tuple(args.require_hardware),
    )
    plan.reports_dir.mkdir(parents=True, exist_ok=True)
    environment, results, completed = execute(plan)
    if not results:
        raise RunAbortedError(f"no results: pytest {completed.describe_failure()}\n{completed.output_tail[-1500:]}")
    summary = write_summary(plan, environment, results)
    print_console_summary(results, environment)
    print(f"  reports: {plan.junit_path}, {plan.results_path}, {summary}, {plan.log_path}")
    if any(r.verdict is Verdict.ERROR for r in results):
        return 1
    # pytest's own status says whether every verdict matched its baseline (5: nothing selected)
    return 0 if completed.returncode in (0, 5) else 1


def register(subparsers) -> None:
    run = subparsers.add_parser("run", help="run the trace-level cases in one environment and write reports/")
    run.add_argument("--python", metavar="ENV",
                     help="interpreter of YOUR environment to test, e.g. ~/venvs/sglang/bin/python (default: this one); "
                          "it needs torch, flashinfer-python, pytest and the kit (a one-line error says what is missing)")
    run.add_argument("--reports", default="reports", help="output folder (default: reports/)")
    run.add_argument("-m", dest="select", help="pytest marker expression, e.g. 'cpu_sim' or 'sm120'")
    run.add_argument("--timeout", type=float, default=1800, help="seconds for the whole run (default 1800)")
    run.add_argument("--case-timeout", type=float, default=600, help="seconds per case (default 600)")
    run.add_argument(
        "--require-hardware", action="append", default=[], choices=targets.HARDWARE_MARKERS,
        help="fail instead of skip when this hardware is missing (GPU runners)",
    )
    run.set_defaults(func=_cmd_run)
