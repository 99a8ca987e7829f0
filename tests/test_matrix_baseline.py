"""The default matrix at its baseline: the 21-cell run of 2026-11-29's 2 failures and 2 errors are each
recorded (a drift with its reason, two cannot-run cells with the upstream link), so the
same results make no red cell; a cell that contradicts an expectation still does."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from junitparser import Error, JUnitXml, Skipped

from pcgkit.commands import matrix as cli
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import ERROR, RAN, STAGE_INSTALL, CellOutcome, write_outcome
from pcgkit.matrix.uninstallable import expected_failure, load_uninstallable, unexpectedly_installed
from pcgkit.report.junit_merge import merge
from pcgkit.verdicts.expectations import expected_for, load_expectations

# The last run before the baseline recorded its failures (tests/data/matrix_baseline/PROVENANCE.md).
SAMPLE = Path(__file__).parent / "data" / "matrix_baseline" / "matrix-2026-11-29-final-junit.xml.gz"


def _sample_problems() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(failures, errors) of the committed sample JUnit: (suite name, message)."""
    xml = JUnitXml.fromstring(gzip.decompress(SAMPLE.read_bytes()))
    failures, errors = [], []
    for suite in xml:
        for case in suite:
            for result in case.result:
                (errors if isinstance(result, Error) else failures).append((suite.name, result.message or ""))
    return [f for f in failures if "behaviour changed" in f[1]], errors


def test_sample_failures_are_the_torch_2_8_mode2_drift_now_recorded():
    """Both sample failures are mode2 drifting on torch 2.8.0; the baseline now expects `drifted` there, and only there."""
    failures, _ = _sample_problems()
    assert len(failures) == 2 and all("expected reproduced, got drifted" in m for _, m in failures)
    rules = load_expectations()
    for fi in ("0.5.0", "0.5.2"):  # fi-0.5.0 and sglang-0.5.5.post3, both torch 2.8.0
        rule = expected_for("mode2", {"flashinfer-python": fi, "torch": "2.8.0"}, rules)
        assert rule.expect.value == "drifted" and "InternalTorchDynamoError" in rule.why
    assert expected_for("mode2", {"flashinfer-python": "0.6.1", "torch": "2.9.1"}, rules).expect.value == "reproduced"


def _error_cell(cell_id: str, fi: str, message: str) -> CellOutcome:
    cell = Cell(cell_id, sglang="0.5.4", flashinfer=fi, torch="2.8.0")
    return CellOutcome(cell, ERROR, 4.3, STAGE_INSTALL, message, "log tail")


def test_sample_install_errors_are_expected_uninstallable_with_link():
    """The sample's two install errors (apache-tvm-ffi==0.1.0b15 gone) match the recorded expectation and its link."""
    _, errors = _sample_problems()
    assert len(errors) == 2
    rules = load_uninstallable()
    for suite, message in errors:
        fi = re.search(r"flashinfer-python==(\S+) depends", message).group(1)
        rule = expected_failure(_error_cell(suite, fi, message.split(": ", 1)[1]), rules)
        assert rule is not None and rule.link.startswith("https://github.com/flashinfer-ai/flashinfer/issues/")


def test_other_install_failures_and_contradicting_cells_stay_red(capsys):
    """A network failure of the same cell is still an error; a covered cell that installs is a change."""
    rules = load_uninstallable()
    assert expected_failure(_error_cell("x", "0.4.1", "network: failed to fetch torch"), rules) is None
    ran = CellOutcome(Cell("y", flashinfer="0.4.1", torch="2.8.0"), RAN, 9.0)
    assert unexpectedly_installed(ran, rules) is not None
    problems = cli.cell_problems([_error_cell("z", "0.4.1", "unknown version: apache-tvm-ffi==0.1.0b15 missing"), ran])
    assert len(problems) == 1 and "installed although cannot-run" in problems[0]
    assert "z: cannot-run" in capsys.readouterr().out


def test_merged_junit_reports_expected_uninstallable_as_skipped(tmp_path: Path):
    """In the merged JUnit a cannot-run cell is a skip carrying the reason; another error stays an error."""
    known = _error_cell("known", "0.4.0", "unknown version: flashinfer-python==0.4.0 depends on apache-tvm-ffi==0.1.0b15")
    other = _error_cell("other", "0.6.1", "network: failed to fetch")
    for o in (known, other):
        write_outcome(tmp_path / o.cell.id / "cell.json", o)
    suites = {s.name: s for s in merge([known, other], tmp_path)}
    (case_known,) = list(suites["pcgkit-matrix[cell=known]"])
    (case_other,) = list(suites["pcgkit-matrix[cell=other]"])
    assert isinstance(case_known.result[0], Skipped) and "cannot-run" in case_known.result[0].message
    assert isinstance(case_other.result[0], Error)


@pytest.mark.parametrize("field", ["when", "match", "why", "link", "tried", "retry-days"])
def test_uninstallable_entry_without_reason_or_link_is_rejected(field):
    """Every cannot-run entry must say when, what failure, why, where upstream, when last tried and how often to retry."""
    from pcgkit.matrix.uninstallable import parse_uninstallable

    entry = {"when": '{ "torch" = "<1" }', "match": '"x"', "why": '"w"', "link": '"l"', "tried": "2026-12-05",
             "retry-days": "7"}
    del entry[field]
    from pcgkit.errors import UsageError

    with pytest.raises(UsageError, match=f"no '{field}'"):
        parse_uninstallable("[[cannot-run]]\n" + "\n".join(f"{k} = {v}" for k, v in entry.items()))


def test_a_drift_the_baseline_records_is_xfail_an_unrecorded_one_fails():
    """judge_against_baseline: `drifted` expected -> XFAIL naming the baseline; `drifted` unexpected -> FAIL."""
    from pcgkit.harness.judging import judge_against_baseline
    from pcgkit.values.verdict import Verdict
    from pcgkit.verdicts.result import CaseResult

    def drift(expected):
        return CaseResult(mode="mode2", variant="sim-sm120", verdict=Verdict.DRIFTED, reason="InternalTorchDynamoError",
                          device={"label": "simulated SM120"}, versions={}, duration_s=0.1, expected=expected)

    with pytest.raises(pytest.xfail.Exception, match="known drift .*torch 2.8"):
        judge_against_baseline(drift("drifted"), "torch 2.8 crashes")
    with pytest.raises(pytest.fail.Exception, match="expected reproduced, got drifted"):
        judge_against_baseline(drift("reproduced"), "")
