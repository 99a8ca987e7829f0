"""Run the cases in one environment: what `pcgkit run`, parity and each venv matrix cell share.

plan_pytest_argv (pure) -> proc.run (the edge) -> results read back or synthesized as errors. A pytest that hangs or
dies still yields a complete results file: the modes it did not report (of those the caller says the run must account
for, RunPlan.expected_modes) are `error` cells with the reason and the log tail.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from pcgkit import resources
from pcgkit.errors import Interrupted
from pcgkit.harness.hardware import SIMULATED_SM120
from pcgkit.util import proc
from pcgkit.values import targets
from pcgkit.values.scopes import SCOPE_ALL
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import CaseResult, read_results, write_results


@dataclasses.dataclass(frozen=True)
class RunFiles:
    """The files a case run leaves in its reports folder, wherever it ran (`pcgkit run`, a venv cell, a
    container's /out copied out): the one place their names are declared."""

    reports_dir: Path

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

    @property
    def summary_path(self) -> Path:
        return self.reports_dir / "summary.md"

    def clear(self) -> None:
        """Never let a previous run's files look current beside this one's (an interrupted run included)."""
        for path in (self.results_path, self.junit_path, self.log_path, self.costs_path, self.summary_path):
            if path.is_file() or path.is_symlink():
                path.unlink()


@dataclasses.dataclass(frozen=True)
class RunPlan:
    python: str
    reports_dir: Path
    timeout_s: float
    case_timeout_s: float
    select: str | None = None  # pytest -m expression
    require_hardware: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # added to the run's environment (a cell's FlashInfer JIT cache)
    # The case ids the run must account for (the catalog's default cases, handed down by the
    # command): one pytest never reported becomes an `error` row.
    expected_modes: tuple[str, ...] = ()
    scope: str = SCOPE_ALL  # pcgkit.values.scopes: which families of cases run (expected_modes are that scope's)

    @property
    def files(self) -> RunFiles:
        return RunFiles(self.reports_dir)


def plan_pytest_argv(plan: RunPlan) -> list[str]:
    """The command line for a run: pytest inside pcgkit.jobs.cellmain, which imports the stack first. Pure."""
    argv = [
        plan.python, "-m", "pcgkit.jobs.cellmain", str(plan.files.costs_path), "--", str(resources.cases_dir()),
        "--rootdir", str(resources.cases_dir()), "-c", str(resources.cases_pytest_ini()),
        # no:unraisableexception: that plugin's end-of-session gc.collect passes cost ~1 s with torch loaded, for
        # warnings about exceptions in finalizers that no verdict reads (docs/lab-notes.md)
        "-p", "pcgkit.plugin", "-p", "no:cacheprovider", "-p", "no:unraisableexception", "-q",
        f"--junitxml={plan.files.junit_path}",
        f"--pcgkit-json={plan.files.results_path}",
        f"--pcgkit-case-timeout={plan.case_timeout_s:g}",
    ]
    if plan.select:
        argv += ["-m", plan.select]
    if plan.scope != SCOPE_ALL:
        argv.append(f"--pcgkit-scope={plan.scope}")
    for hw in plan.require_hardware:
        argv.append(f"--pcgkit-require-hardware={hw}")
    return argv


def synthesize_errors(missing_modes: list[str], reason: str, versions: dict) -> list[CaseResult]:
    """Error results for the modes a dead or hung pytest never reported."""
    return [CaseResult(mode=mode, variant=targets.SIM_SM120.id, verdict=Verdict.ERROR, reason=reason,
                       device=SIMULATED_SM120.to_dict(), versions=versions, duration_s=0.0) for mode in missing_modes]


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


def interrupted_results(plan: RunPlan, exc: Interrupted) -> tuple[dict, list[CaseResult]]:
    """What an interrupted run leaves: every expected mode an `error` row "interrupted" (written, and returned)."""
    versions: dict = {}  # after a stop signal no child may start: the rows say the versions are unknown
    reason = f"interrupted ({exc}) before pytest reported: no verdict"
    results = synthesize_errors(list(plan.expected_modes), reason, versions)
    environment = {"versions": versions, "interrupted": str(exc)}
    write_results(plan.files.results_path, results, environment)
    return environment, results


def execute(plan: RunPlan) -> tuple[dict, list[CaseResult], proc.Completed]:
    plan.files.clear()
    try:
        completed = proc.run(
            plan_pytest_argv(plan),
            cwd=resources.workspace_root(),
            timeout=plan.timeout_s,
            log_path=plan.files.log_path,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **dict(plan.env)},
            progress=f"the cases ({plan.files.log_path})",
        )
    except Interrupted as exc:
        interrupted_results(plan, exc)
        raise
    environment: dict = {}
    results: list[CaseResult] = []
    if plan.files.results_path.exists():
        environment, results = read_results(plan.files.results_path)
    reported = {r.mode for r in results}
    # The plugin records the modes it collected before running any: with a selection (-m) those are
    # the ones owed a row; without that record (pytest died before collecting) every expected mode is.
    selected = environment.get("selected_modes")
    expected = list(selected) if isinstance(selected, list) else list(plan.expected_modes)
    missing = [m for m in expected if m not in reported]
    import_error = _import_error(plan.files.costs_path)
    # A selection may leave modes out on purpose; an import failure stops every case it would have run.
    if missing and (not plan.select or import_error or isinstance(selected, list)):
        reason = f"pytest {completed.describe_failure()} before reporting; log tail: {completed.output_tail[-600:]}"
        if import_error:  # pcgkit.jobs.cellmain stopped before pytest: the stack itself does not import
            reason = f"broken install: import failed before any case ran: {import_error}"
        versions = environment.get("versions") or probe_versions(plan.python)
        results += synthesize_errors(missing, reason, versions)
        environment.setdefault("versions", versions)
        write_results(plan.files.results_path, results, environment)
    elif not plan.files.results_path.exists():  # never silently no file: what ran (nothing) and why
        environment = {"versions": probe_versions(plan.python), "complete": False,
                       "note": f"pytest {completed.describe_failure()} before collecting any case"}
        write_results(plan.files.results_path, results, environment)
    return environment, results, completed
