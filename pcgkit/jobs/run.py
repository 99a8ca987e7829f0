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
from pcgkit.errors import ExitCode, Interrupted, RunAbortedError, UsageError, status_for_results
from pcgkit.harness.hardware import SIMULATED_SM120
from pcgkit.report.summary import SIMULATION_NOTE, markdown_summary
from pcgkit.util import atomic, proc
from pcgkit.util.argtypes import positive_seconds
from pcgkit.values import targets
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.catalog import all_modes
from pcgkit.verdicts.result import CaseResult, read_results, write_results


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


def clear_previous_outputs(plan: RunPlan) -> None:
    """Never let a previous run's files look current beside this one's (an interrupted run included)."""
    for path in (plan.results_path, plan.junit_path, plan.reports_dir / "summary.md", plan.costs_path):
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
            env={**os.environ, "PYTHONUNBUFFERED": "1", **dict(plan.env)},
            progress=f"the cases ({plan.log_path})",
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
    plan = RunPlan(
        python=args.python or sys.executable,
        reports_dir=Path(args.reports),
        timeout_s=args.timeout,
        case_timeout_s=args.case_timeout,
        select=args.select,
        require_hardware=tuple(args.require_hardware),
    )
    check_interpreter(plan.python)  # no such file / a folder / not executable: one line
    atomic.check_writable_dir(plan.reports_dir, "--reports")
    clear_previous_outputs(plan)  # from here on, a stop leaves "interrupted" rows, never the last run's files
    if args.python:
        try:
            problem = preflight(args.python)  # what the interpreter lacks (torch, flashinfer, pytest, the kit)
        except Interrupted as exc:
            interrupted_results(plan, exc)
            raise
        if problem:
            raise UsageError(problem)
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
    run.add_argument("--python", metavar="ENV",
                     help="interpreter of YOUR environment to test, e.g. ~/venvs/sglang/bin/python (default: this one); "
                          "it needs torch, flashinfer-python, pytest and the kit (a one-line error says what is missing)")
    run.add_argument("--reports", default="reports", help="output folder (default: reports/)")
    run.add_argument("-m", dest="select", help="pytest marker expression, e.g. 'cpu_sim' or 'sm120'")
    run.add_argument("--timeout", type=positive_seconds, default=1800, help="seconds for the whole run (default 1800)")
    run.add_argument("--case-timeout", type=positive_seconds, default=600, help="seconds per case (default 600)")
    run.add_argument(
        "--require-hardware", action="append", default=[], choices=targets.HARDWARE_MARKERS,
        help="fail instead of skip when this hardware is missing (GPU runners)",
    )
    run.set_defaults(func=_cmd_run)
