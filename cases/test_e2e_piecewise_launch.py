"""End to end -- `python -m sglang.launch_server` with piecewise CUDA graphs on a tiny NVFP4 model.

The kit writes a 2-layer Llama-style ModelOpt NVFP4 checkpoint into tmp_path, launches the
installed SGLang with that version's own piecewise flags, waits for readiness or death, and reads
the verdict from the server log: a crash in capture with FlashInfer's nvcc-subprocess failure is
`reproduced` (seeds 000/001: the server died during piecewise CUDA graph capture); a server that
captures, comes up and answers one /generate is `fixed`. The whole process group is killed at the
end and the log is kept under reports/e2e/. Where the bf16 piecewise control
(test_e2e_piecewise_control.py) ran earlier in the same session, its outcome is evidence here, and
a failure without the known signature while the control also failed is an `error`
(pcgkit.e2e.control.judge_with_control).

Real SM120 only (marker sm120, gated by pcgkit.harness.hardware): nothing here is ever simulated.
Runner command: README, "End-to-end piecewise launch".
"""

import os
import time
from pathlib import Path

import pytest

from pcgkit.e2e.logclass import E2E_MODE as MODE
from pcgkit.harness import hardware
from pcgkit.harness.casekit import cuda_toolkit_root
from pcgkit.harness.versions import collect_versions
from pcgkit.values import targets

pytestmark = [pytest.mark.sm120, pytest.mark.e2e]
# The plugin records a "not run here" row for this case when it is stopped in setup (no SM120).
TARGET = targets.SM120
ARTIFACTS = Path(os.environ.get("PCGKIT_E2E_ARTIFACTS", "reports/e2e"))


def test_e2e_piecewise_launch(request, tmp_path):
    """A real SGLang server with piecewise CUDA graphs on the tiny NVFP4 checkpoint: capture crash or served."""
    import sys

    from pcgkit.e2e.case import (
        broken_install_reason,
        launch_and_classify,
        not_applicable_result,
        plan_for_checkpoint,
        to_case_result,
    )
    from pcgkit.e2e.checkpoint import NVFP4, write_checkpoint
    from pcgkit.e2e.control import control_of_session, judge_with_control
    from pcgkit.e2e.launch import LaunchPlanError
    from pcgkit.e2e.server import free_loopback_port
    from pcgkit.harness.judging import record
    from pcgkit.verdicts.expectations import expected_for, load_expectations

    start = time.perf_counter()
    device = hardware.first_device("sm120", hardware.detect_cuda_devices())
    assert not device.simulated, "the end-to-end launch never runs under simulation"
    from pcgkit.sglang import facts as sglang_facts

    try:
        flags = sglang_facts.piecewise_flags()
    except (ImportError, LookupError) as exc:
        pytest.fail(f"pcgkit error: broken install: {type(exc).__name__}: {exc}", pytrace=False)
    broken = broken_install_reason(flags)
    if broken:
        pytest.fail(f"pcgkit error: broken install: {broken}", pytrace=False)
    versions = collect_versions()
    expectation = expected_for(MODE.id, versions, load_expectations())
    checkpoint = write_checkpoint(tmp_path / "tiny-nvfp4")
    port = free_loopback_port()
    env = dict(os.environ)
    toolkit = cuda_toolkit_root()
    if toolkit and not env.get("CUDA_HOME"):
        env["CUDA_HOME"] = toolkit  # as on a CUDA machine; without it FlashInfer fails one frame earlier
    try:
        plan = plan_for_checkpoint(flags, python=sys.executable, fmt=NVFP4, model_path=str(checkpoint), port=port, env=env)
    except LaunchPlanError as exc:  # e.g. 0.5.22+: torch.compile piecewise (tc_piecewise) was removed
        result = not_applicable_result(str(exc), device=device.to_dict(), versions=versions, nodeid=request.node.nodeid,
                                       evidence={"flags": flags.to_dict()},
                                       expected=expectation.expect.value if expectation else None)
        record(request.node, result, expectation)
        return
    log_path = (request.config.rootpath / ARTIFACTS / f"server-{int(time.time())}-{port}.log").resolve()
    outcome = launch_and_classify(
        plan.argv,
        port=port,
        log_path=log_path,
        env=env,
        ready_timeout_s=request.config.getoption("--pcgkit-case-timeout"),
    )
    control = control_of_session(request.config)
    result = to_case_result(
        outcome,
        device=device.to_dict(),
        versions=versions,
        duration_s=time.perf_counter() - start,
        nodeid=request.node.nodeid,
        evidence={"flags": flags.to_dict(), "launch": list(plan.argv), "piecewise_how": plan.how, "CUDA_HOME": env.get("CUDA_HOME"),
                  "control": control.to_dict() if control else "not run in this session"},
        expected=expectation.expect.value if expectation else None,
        classification=judge_with_control(outcome.classification, control),
    )
    record(request.node, result, expectation)
