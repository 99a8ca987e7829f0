"""Run one sweep case inside pytest and record it like every other case: the engine does what the plugin's
CaseRunner does for a trace-level case (target, simulation, deadline); this adds a CaseResult whose verdict comes
from the sweep class, the class and its `where` as evidence, the baseline (expected_for, like any case) and the
pytest outcome (pcgkit.harness.judging.record). Imports torch/flashinfer only when run.
"""

from __future__ import annotations

import os
from unittest import mock

import pytest

from pcgkit.harness import hardware
from pcgkit.harness.casekit import cuda_toolkit_root
from pcgkit.harness.judging import record
from pcgkit.harness.versions import collect_versions
from pcgkit.sweep.cases import case_id
from pcgkit.sweep.classify import SweepClass
from pcgkit.sweep.specs import EntrySpec
from pcgkit.values.targets import Target
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.expectations import expected_for, load_expectations
from pcgkit.verdicts.result import CaseResult


def evidence_of(result) -> dict:
    """The sweep's finer classification, kept beside the verdict (report: pcgkit.report.sweep_section)."""
    return {
        "sweep": {
            "arch": result.arch, "entry": result.entry_id, "family": result.family, "target": result.target,
            **result.classification.to_dict(),
            "expected": result.expected, "expectation_link": result.expectation_link,
            "installed_signature": result.installed_signature, "refused": [list(r) for r in result.refused],
        },
        "simulated_queries": list(result.simulation_replaced),
    }


def to_case_result(result, variant: str, nodeid: str = "") -> CaseResult:
    """A SweepResult as the kit's CaseResult (verdict, reason = class + where, evidence). Pure."""
    from pcgkit.values.runcheck import NOT_RUN_TRACE_ONLY
    from pcgkit.values.signature import Signature

    cls = result.classification
    return CaseResult(
        mode=case_id(result.arch, result.entry_id),
        variant=variant,
        verdict=Verdict(result.verdict),
        reason=cls.where if cls.cls is SweepClass.NOT_APPLICABLE else (
            f"{cls.cls.value}: {cls.where}" + (f"; {NOT_RUN_TRACE_ONLY}" if cls.cls.traced else "")),
        device=result.device,
        versions=collect_versions(),
        duration_s=result.duration_s,
        signature=Signature.from_dict(result.signature) if result.signature else None,
        evidence=evidence_of(result),
        nodeid=nodeid,
    )


def run_case(request: pytest.FixtureRequest, target: Target, arch: str, spec: EntrySpec) -> CaseResult:
    """One (target, arch, entry) case: simulated on CPU, or on the real device when its family is `arch`."""
    from pcgkit.sweep.engine import arch_of, installed_versions, sweep_entry

    if target.simulated:
        device, real = hardware.SIMULATED_ARCHES[arch], False
    else:
        device, real = hardware.first_device(target.marker, hardware.detect_cuda_devices()), True
        if arch_of(device) != arch:  # the real device answers its own family only
            pytest.skip(f"needs a {arch} device; this is {device.label}")
    toolkit = cuda_toolkit_root()
    env = {"CUDA_HOME": toolkit} if toolkit and not os.environ.get("CUDA_HOME") else {}
    with mock.patch.dict(os.environ, env):
        swept = sweep_entry(spec, arch, device, installed_versions(), real=real)
    result = to_case_result(swept, target.id, request.node.nodeid)
    expectation = expected_for(result.mode, result.versions, load_expectations(), target.id)
    if expectation is not None:
        result = CaseResult(**{**result.__dict__, "expected": expectation.expect.value})
    record(request.node, result, expectation)
    return result
