"""Recording a case result, written once: every case (catalog case, sweep, e2e) is recorded and judged here.

Outcome policy (so a CI dashboard turns red exactly when behaviour changes):
  verdict == baseline "reproduced"  -> XFAIL  (the known bug, still there, as documented)
  verdict == baseline "fixed"       -> PASS
  verdict == baseline "drifted" / "traces-but-fails" -> XFAIL (known, recorded with its reason)
  verdict != baseline               -> FAIL   ("behaviour changed against baseline: ...")
  error                             -> FAIL   ("pcgkit error: ...": the kit or the install broke)
  skipped / not-applicable (as expected) -> SKIP with the reason
The baseline is fixtures/expectations.toml.
"""

from __future__ import annotations

import pytest

from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.expectations import Expectation
from pcgkit.verdicts.result import CaseResult


def judge_against_baseline(result: CaseResult, why: str) -> None:
    """Map verdict vs baseline onto the pytest outcome (see the module docstring). `why`, the baseline's own reason,
    is named in a changed behaviour, so the red cell says what the expectation was based on."""
    verdict, expected = result.verdict, result.expected
    where = f" [{result.device['label']}]"
    if verdict is Verdict.ERROR:
        pytest.fail(f"pcgkit error: {result.reason}{where}", pytrace=False)
    if verdict is Verdict.SKIPPED:
        pytest.skip(result.reason)
    if expected is not None and verdict.value != expected:
        pytest.fail(
            f"behaviour changed against baseline: expected {expected}, got {verdict}: {result.reason}{where}"
            + (f" (baseline: {why})" if why else ""),
            pytrace=False,
        )
    if verdict is Verdict.REPRODUCED:
        pytest.xfail(f"known bug reproduced: {result.reason}{where}")
    if verdict in (Verdict.DRIFTED, Verdict.TRACES_BUT_FAILS) and expected == verdict.value:
        # a drift or a run failure recorded in the baseline with its reason: known behaviour, not news
        known = "drift" if verdict is Verdict.DRIFTED else "run failure (traces-but-fails)"
        pytest.xfail(f"known {known} (baseline: {why or 'recorded'}): {result.reason}{where}")
    if verdict is Verdict.NOT_APPLICABLE:
        pytest.skip(f"not-applicable: {result.reason}")
    if verdict in (Verdict.DRIFTED, Verdict.TRACES_BUT_FAILS):  # no baseline covers these versions: still news
        pytest.fail(f"{verdict}: {result.reason}{where}", pytrace=False)


def record(node: pytest.Item, result: CaseResult, expectation: Expectation | None) -> None:
    """Record a case's result on its test: the JUnit properties the reports read, then the pytest
    outcome judged against the baseline it was compared with (`result.expected`, `expectation.why`)."""
    node.user_properties.extend(result.junit_properties())
    judge_against_baseline(result, expectation.why if expectation else "")
