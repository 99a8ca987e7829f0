"""The piecewise control's verdicts and how the NVFP4 case judges itself against it (pcgkit.e2e.control)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pcgkit.e2e.control import ControlRecord, classify_control, judge_with_control
from pcgkit.e2e.logclass import Classification
from pcgkit.e2e.server import Readiness, ServerRun
from pcgkit.values.verdict import Verdict

LOGS = Path(__file__).resolve().parent / "data" / "e2e_logs"


def _died() -> ServerRun:
    return ServerRun(("python",), Path("x.log"), Readiness.DIED, 5.0, 1, None, ())


def test_a_dynamo_failure_in_the_control_is_an_error_not_a_verdict_on_the_bug():
    """Even the known nvcc-subprocess crash, seen in the control, is an error: the control has no FP4 path."""
    result = classify_control(_died(), (LOGS / "seed000_capture_nvcc_subprocess.log").read_text())
    assert result.verdict is Verdict.ERROR
    assert result.reason.startswith("control failed with a dynamo failure (no FP4 path)")


def test_a_control_that_died_without_an_exception_is_an_error():
    """A control crash with nothing in the log says which it was and that it was the control."""
    result = classify_control(_died(), "loading...\n")
    assert result.verdict is Verdict.ERROR and result.reason.startswith("control failed: server exited (status 1)")


def _nvfp4(verdict: Verdict) -> Classification:
    return Classification(verdict, f"nvfp4 {verdict}")


HEALTHY = ControlRecord(Verdict.FIXED, "control healthy", "c::t", "NVIDIA H200")
FAILED = ControlRecord(Verdict.ERROR, "control failed: server exited", "c::t", "NVIDIA H200")


@pytest.mark.parametrize(("nvfp4", "control", "expected"), [
    (Verdict.DRIFTED, FAILED, Verdict.ERROR),
    (Verdict.ERROR, FAILED, Verdict.ERROR),
    (Verdict.REPRODUCED, FAILED, Verdict.REPRODUCED),  # the known signature is FP4 quantize's own
    (Verdict.FIXED, FAILED, Verdict.FIXED),
    (Verdict.DRIFTED, HEALTHY, Verdict.DRIFTED),
    (Verdict.DRIFTED, None, Verdict.DRIFTED),  # no control in this session: nothing to weigh
    (Verdict.SKIPPED, FAILED, Verdict.SKIPPED),
])
def test_judge_with_control(nvfp4, control, expected):
    """Only a non-signature failure beside a failed control becomes an error; everything else stands."""
    assert judge_with_control(_nvfp4(nvfp4), control).verdict is expected


def test_the_error_names_the_control_and_keeps_the_nvfp4_run():
    """The reason says the control failed here too, quotes it, and still shows what the NVFP4 run saw."""
    reason = judge_with_control(_nvfp4(Verdict.DRIFTED), FAILED).reason
    assert "bf16 piecewise control also failed" in reason and "control failed: server exited" in reason
    assert reason.endswith("NVFP4 run: drifted: nvfp4 drifted")
