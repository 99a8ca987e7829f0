"""A cell's cost breakdown adds up: stages, the run's own import/pytest seconds, and each case."""

from __future__ import annotations

from lab.matrix.costs_table import render_breakdown
from pcgkit.matrix.costs import breakdown
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import CaseResult


def _case(mode: str, seconds: float) -> CaseResult:
    return CaseResult(mode=mode, variant="sim-sm120", verdict=Verdict.REPRODUCED, reason="r", device={}, versions={},
                      duration_s=seconds)


def test_breakdown_splits_the_run_into_interpreter_import_pytest_and_cases():
    """pytest's share excludes the cases, the interpreter's excludes import and pytest, and the stages sum to the total."""
    costs = breakdown({"env": 0.1, "install": 2.0, "check": 0.3, "report": 0.05}, {"import_s": 4.0, "pytest_s": 10.0},
                      15.0, [_case("mode1", 3.0), _case("fix-allow-in-graph", 5.0)], total_s=18.0)
    assert costs["cases"] == 8.0 and costs["pytest"] == 2.0 and costs["interpreter"] == 1.0 and costs["import"] == 4.0
    assert costs["case:fix-allow-in-graph[sim-sm120]"] == 5.0
    stages = ("env", "install", "check", "interpreter", "import", "pytest", "cases", "report", "other")
    assert abs(sum(costs[s] for s in stages) - costs["total"]) < 1e-6
    lines = render_breakdown(costs)
    assert lines[0].split()[0] == "env" and any("fix-allow-in-graph" in line for line in lines)


def test_merged_junit_is_validated_again_only_when_its_bytes_change(monkeypatch, tmp_path):
    """A re-run whose merged JUnit is byte-identical skips the xunit2 check; a changed file is checked again."""
    from pcgkit.report import junit_merge

    calls = []
    monkeypatch.setattr(junit_merge, "validate", lambda path: calls.append(path) or [])
    junit = tmp_path / "matrix-junit.xml"
    junit.write_text("<testsuites/>")
    assert junit_merge.validated(junit) == [] and junit_merge.validated(junit) == [] and len(calls) == 1
    junit.write_text("<testsuites name='x'/>")
    assert junit_merge.validated(junit) == [] and len(calls) == 2
