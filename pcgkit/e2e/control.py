"""The piecewise control (issue 13): the same launch with a bf16 checkpoint, and what it means for the NVFP4 case.

On SM120 the control separates "piecewise CUDA graphs are broken here at all" from "FP4 quantize
breaks them": the NVFP4 case reads the control's outcome from the same pytest session
(config.stash) and records it as evidence; an NVFP4 failure without the known signature while the
control also failed is an `error`, never a verdict about the bug. Pure but for the stash helpers.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING

from pcgkit.e2e.logclass import E2E_MODE, Classification, classify_run
from pcgkit.e2e.server import ServerRun
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.modes import MODE_WORDS, Mode

if TYPE_CHECKING:  # pytest is imported only inside a pytest session: the CLI's catalog imports this module
    import pytest


def _never_the_bug(signature) -> str:
    return "the control has no FP4 path: any failure of it is about piecewise capture itself"


CONTROL_MODE = Mode("e2e-piecewise-control", *MODE_WORDS["e2e-piecewise-control"], matches=_never_the_bug)


@dataclasses.dataclass(frozen=True)
class ControlRecord:
    """What the NVFP4 case needs of the control run in the same session."""

    verdict: Verdict
    reason: str
    nodeid: str
    device: str

    def to_dict(self) -> dict:
        return {"verdict": self.verdict.value, "reason": self.reason, "nodeid": self.nodeid, "device": self.device}


def classify_control(run: ServerRun, log: str) -> Classification:
    """The control's verdict: `fixed` (piecewise works here without FP4) or `error` with what failed; a dynamo
    failure in it has no FP4 quantize in it, so it says piecewise capture is broken here, nothing about the bug."""
    result = classify_run(run, log, CONTROL_MODE)
    if result.verdict is Verdict.FIXED:
        return dataclasses.replace(result, reason=f"control healthy: {result.reason}")
    if result.verdict in (Verdict.REPRODUCED, Verdict.DRIFTED):
        return dataclasses.replace(
            result, verdict=Verdict.ERROR, reason=f"control failed with a dynamo failure (no FP4 path): {result.reason}"
        )
    if result.verdict is Verdict.SKIPPED:
        return result
    return dataclasses.replace(result, reason=f"control failed: {result.reason}")


def judge_with_control(nvfp4: Classification, control: ControlRecord | None) -> Classification:
    """The NVFP4 verdict in the light of the control run in the same environment (None: not run). Only a failure
    without the known signature while the control failed too changes: `error` (a `reproduced` signature is FP4's own)."""
    if control is None or control.verdict in (Verdict.FIXED, Verdict.SKIPPED):
        return nvfp4
    if nvfp4.verdict in (Verdict.DRIFTED, Verdict.ERROR):
        return dataclasses.replace(
            nvfp4,
            verdict=Verdict.ERROR,
            reason=f"failed without {E2E_MODE.known_signature!r} while the bf16 piecewise control also failed here "
            f"(control: {control.verdict}: {control.reason[:200]}); piecewise capture is broken in this environment, "
            f"this says nothing about FP4 quantize. NVFP4 run: {nvfp4.verdict}: {nvfp4.reason}",
        )
    return nvfp4


@functools.cache
def _control_key() -> pytest.StashKey[ControlRecord]:
    import pytest

    return pytest.StashKey[ControlRecord]()


def remember_control(config: pytest.Config, record: ControlRecord) -> None:
    config.stash[_control_key()] = record


def control_of_session(config: pytest.Config) -> ControlRecord | None:
    """The control's record when it ran earlier in this pytest session (it sorts before the NVFP4 case)."""
    return config.stash.get(_control_key(), None)
