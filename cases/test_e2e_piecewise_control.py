"""End to end, the control -- the same SGLang launch with piecewise CUDA graphs on a tiny bf16 model (no FP4).

The kit writes the bf16 twin of the NVFP4 checkpoint (same seeded weights, same locally trained
tokenizer, no quantization config) into tmp_path and launches the installed SGLang exactly as the
NVFP4 case does (pcgkit.e2e.case.plan_for_checkpoint), minus --quantization. `fixed` means: the
server came up, its log shows piecewise capture, one /generate answered, and after the stop no
process of its session/process group is alive (read from /proc). Anything else is an `error`:
the control never says anything about the FP4 bug; it says whether piecewise works here at all,
and the NVFP4 case in the same session records that (pcgkit.e2e.control).

Any real CUDA GPU (markers gpu and e2e); never simulated. On SM120 it runs before the NVFP4 case
(module order). Runner command: README, "End-to-end piecewise launch".
"""

import os
import sys
import time
from pathlib import Path

import pytest

from pcgkit.e2e.control import CONTROL_MODE as MODE
from pcgkit.harness import hardware
from pcgkit.harness.casekit import Target, cuda_toolkit_root

pytestmark = [pytest.mark.gpu, pytest.mark.e2e]
# The plugin records a "not run here" row for this case when it is stopped in setup (no GPU).
TARGET = Target("gpu", "gpu", simulated=False)
ARTIFACTS = Path(os.environ.get("PCGKIT_E2E_ARTIFACTS", "reports/e2e"))


def test_e2e_piecewise_control(request, tmp_path):
    """A real SGLang server with piecewise CUDA graphs on the tiny bf16 checkpoint: up, captured, answered, gone."""
    from pcgkit.e2e.case import broken_install_reason, launch_and_classify, plan_for_checkpoint, to_case_result
    from pcgkit.e2e.checkpoint import BF16, write_checkpoint
    from pcgkit.e2e.control import ControlRecord, classify_control, remember_control
    from pcgkit.e2e.launch import LaunchPlanError
    from pcgkit.e2e.server import free_loopback_port
    from pcgkit.harness.judging import record
    from pcgkit.harness.versions import collect_versions
    from pcgkit.sglang import facts as sglang_facts
    from pcgkit.verdicts.expectations import expected_for, load_expectations

    start = time.perf_counter()
    device = hardware.first_device("gpu", hardware.detect_cuda_devices())
    assert not device.simulated, "the end-to-end launch never runs under simulation"
    try:
        flags = sglang_facts.piecewise_flags()
    except (ImportError, LookupError) as exc:
        pytest.fail(f"pcgkit error: broken install: {type(exc).__name__}: {exc}", pytrace=False)
    broken = broken_install_reason(flags)
    if broken:
        pytest.fail(f"pcgkit error: broken install: {broken}", pytrace=False)
    versions = collect_versions()
    expectation = expected_for(MODE.id, versions, load_expectations(), TARGET.id)
    checkpoint = write_checkpoint(tmp_path / "tiny-bf16", fmt=BF16)
    port = free_loopback_port()
    env = dict(os.environ)
    toolkit = cuda_toolkit_root()
    if toolkit and not env.get("CUDA_HOME"):
        env["CUDA_HOME"] = toolkit
    try:
        plan = plan_for_checkpoint(flags, python=sys.executable, fmt=BF16, model_path=str(checkpoint), port=port, env=env)
    except LaunchPlanError as exc:
        pytest.skip(f"not-applicable: {exc}")
    log_path = (request.config.rootpath / ARTIFACTS / f"control-{int(time.time())}-{port}.log").resolve()
    outcome = launch_and_classify(
        plan.argv,
        port=port,
        log_path=log_path,
        env=env,
        ready_timeout_s=request.config.getoption("--pcgkit-case-timeout"),
        classify=classify_control,
    )
    result = to_case_result(
        outcome,
        device=device.to_dict(),
        versions=versions,
        duration_s=time.perf_counter() - start,
        nodeid=request.node.nodeid,
        evidence={"flags": flags.to_dict(), "launch": list(plan.argv), "piecewise_how": plan.how,
                  "CUDA_HOME": env.get("CUDA_HOME"), "checkpoint": "bf16"},
        expected=expectation.expect.value if expectation else None,
        mode_id=MODE.id,
        variant=TARGET.id,
    )
    remember_control(request.config, ControlRecord(result.verdict, result.reason, result.nodeid, device.label))
    record(request.node, result, expectation)
