"""`pcgkit run`: the trace-level cases in one environment (yours, or this one) through pcgkit.jobs.run, then
reports/ and the verdicts; the exit status follows from the verdicts and pytest's own status."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import sys
from pathlib import Path

from pcgkit import resources
from pcgkit.catalog import modes_in_scope
from pcgkit.commands import add_command
from pcgkit.errors import ExitCode, Interrupted, RunAbortedError, UsageError, status_for_results
from pcgkit.jobs.run import RunPlan, execute, interrupted_results
from pcgkit.report.summary import SIMULATION_NOTE, markdown_summary
from pcgkit.util import atomic, proc
from pcgkit.util.argtypes import marker_expression, positive_seconds
from pcgkit.values import targets
from pcgkit.values.scopes import SCOPE_ALL, SCOPES
from pcgkit.verdicts.result import CaseResult


def write_summary(plan: RunPlan, environment: dict, results: list[CaseResult]) -> Path:
    text = markdown_summary(results, environment)
    if environment.get("interrupted"):
        text = f"> **Interrupted ({environment['interrupted']})**: this run did not finish; no verdict below is a measurement.\n\n" + text
    return atomic.write_text(plan.files.summary_path, text)


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
    from pcgkit.report.terminal import print_table, run_table

    print("\npcgkit run: verdicts")
    print_table(run_table(results))
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
        with contextlib.suppress(ValueError, IndexError):
            report = json.loads(done.output_tail.strip().splitlines()[-1])
    return preflight_problem(python, report, kit_root)


def _cmd_run(args) -> int:
    plan = RunPlan(
        python=args.python or sys.executable,
        reports_dir=Path(args.reports),
        timeout_s=args.timeout,
        case_timeout_s=args.case_timeout,
        select=args.select,
        require_hardware=tuple(args.require_hardware),
        expected_modes=tuple(modes_in_scope(args.scope)),
        scope=args.scope,
    )
    check_interpreter(plan.python)  # no such file / a folder / not executable: one line
    atomic.check_writable_dir(plan.reports_dir, "--reports")
    plan.files.clear()  # from here on, a stop leaves "interrupted" rows, never the last run's files
    try:
        if args.python:
            problem = preflight(args.python)  # what the interpreter lacks (torch, flashinfer, pytest, the kit)
            if problem:
                raise UsageError(problem)
        environment, results, completed = execute(plan)
    except Interrupted as exc:  # every expected mode an `error` row "interrupted", and a summary saying so
        environment, results = interrupted_results(plan, exc)
        write_summary(plan, environment, results)
        raise
    if not results:
        last = completed.output_tail.strip().splitlines()[-1:] or [""]
        raise RunAbortedError(f"no results: pytest {completed.describe_failure()}: {last[0][:300]}")
    summary = write_summary(plan, environment, results)
    print_console_summary(results, environment)
    print(f"  reports: {plan.files.junit_path}, {plan.files.results_path}, {summary}, {plan.files.log_path}")
    status = status_for_results(results)
    if status is ExitCode.SUCCESS and completed.returncode not in (0, 5):
        # pytest's own status also says whether every verdict matched its baseline (5: nothing selected)
        status = ExitCode.CHANGED
    return int(status)


def register(subparsers) -> None:
    run = add_command(subparsers, "run", "run the trace-level cases in one environment and write reports/",
                      "Run the trace-level cases in one Python environment and write reports/ (junit.xml, "
                      "results.json, summary.md).", "                                  # this environment, simulated SM120",
                      "--python ~/sglang-env/bin/python  # the environment that crashed",
                      "-m sm120 --require-hardware sm120 # a GPU runner: missing SM120 fails, never skips")
    run.add_argument("--python", metavar="ENV",
                     help="interpreter of YOUR environment to test, e.g. ~/venvs/sglang/bin/python (default: this one); "
                          "it needs torch, flashinfer-python, pytest and the kit (a one-line error says what is missing)")
    run.add_argument("--reports", default="reports", help="output folder (default: reports/)")
    run.add_argument("-m", dest="select", type=marker_expression(tuple(targets.PYTEST_MARKERS)), help="pytest marker expression, e.g. 'cpu_sim' or 'sm120'")
    run.add_argument("--scope", choices=SCOPES, default=SCOPE_ALL,
                     help="which cases: all (default), or only the SGLang-level ones (a matrix cell for one SGLang release)")
    run.add_argument("--timeout", type=positive_seconds, default=1800, help="seconds for the whole run (default 1800)")
    run.add_argument("--case-timeout", type=positive_seconds, default=600, help="seconds per case (default 600)")
    run.add_argument(
        "--require-hardware", action="append", default=[], choices=targets.HARDWARE_MARKERS,
        help="fail instead of skip when this hardware is missing (GPU runners)",
    )
    run.set_defaults(func=_cmd_run)
