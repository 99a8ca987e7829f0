"""Where a cell's time went: one breakdown per cell (recorded in cell.json, printed by the benchmarks).

Stages, in the order a cell pays them: `env` (uv venv), `resolve` (uv pip compile, only for a cell
without a committed lock), `install` (uv pip sync), `check` (installed set + file-overlap scan),
`interpreter` (the run's process start and exit), `import` (torch + flashinfer, once), `pytest`
(collection, plugin, evidence, JUnit: pytest's wall minus the cases), `cases` (their sum; each case
also as `case:<mode>[<target>]`), `report` (reading the run's files back), `other` (the rest).
Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pcgkit.verdicts.result import CaseResult

STAGES = ("env", "resolve", "install", "check", "interpreter", "import", "pytest", "cases", "report", "other")
CASE_PREFIX = "case:"


def breakdown(stages: Mapping[str, float], run_costs: Mapping[str, float], run_wall_s: float | None,
              results: Iterable[CaseResult], total_s: float) -> dict[str, float]:
    """The cell's breakdown from the parent's stage timers, the run's own costs file and the cases."""
    costs = {k: float(v) for k, v in stages.items()}
    cases = {f"{CASE_PREFIX}{r.mode}[{r.variant}]": float(r.duration_s or 0.0) for r in results}
    case_sum = sum(cases.values())
    if run_wall_s is not None:
        imported = float(run_costs.get("import_s", 0.0))
        pytest_s = run_costs.get("pytest_s")
        costs["import"] = imported
        if pytest_s is not None:
            costs["pytest"] = max(0.0, float(pytest_s) - case_sum)
            costs["interpreter"] = max(0.0, run_wall_s - imported - float(pytest_s))
        else:  # the run died or hung inside pytest: its wall after the imports is all we know
            costs["pytest"] = max(0.0, run_wall_s - imported - case_sum)
        costs["cases"] = case_sum
    accounted = sum(v for k, v in costs.items() if k in STAGES)
    costs["other"] = max(0.0, total_s - accounted)
    costs["total"] = total_s
    costs.update(cases)
    return {k: round(v, 3) for k, v in costs.items()}

