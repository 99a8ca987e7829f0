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

Two targets, never simulated:
- `sm120`: a real SM120 GPU (marker sm120, gated by pcgkit.harness.hardware);
- `gpu-as-sm120`: any real GPU with SGLang's, FlashInfer's and dynamo's architecture queries
  answered as 12.0 in every server process (pcgkit.e2e.hybrid; marker gpu). Its evidence lists
  every answered query by caller and the skipped eager warm-up; it never counts as SM120 hardware,
  and a clean trace followed by a kernel the real GPU cannot run is `skipped`, never `fixed`.
Runner command: docs/gpu-and-ci.md, "End-to-end piecewise launch".
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

pytestmark = [pytest.mark.e2e]
TARGETS = (targets.SM120, targets.GPU_AS_SM120)  # the plugin parametrizes `target` over these
ARTIFACTS = Path(os.environ.get("PCGKIT_E2E_ARTIFACTS", "reports/e2e"))


def test_e2e_piecewise_launch(request, tmp_path, target):
    """A real SGLang server with piecewise CUDA graphs on the tiny NVFP4 checkpoint: capture crash or served."""
    import sys

    from pcgkit.e2e import hybrid
    from pcgkit.e2e.case import (
        broken_install_reason,
        launch_and_classify,
        launch_port,
        not_applicable_result,
        plan_for_checkpoint,
        to_case_result,
    )
    from pcgkit.e2e.checkpoint import NVFP4, write_checkpoint
    from pcgkit.e2e.control import control_of_session, judge_with_control
    from pcgkit.e2e.launch import LaunchPlanError
    from pcgkit.harness.judging import record
    from pcgkit.verdicts.expectations import expected_for, load_expectations

    start = time.perf_counter()
    device = hardware.first_device(target.marker, hardware.detect_cuda_devices())
    assert not device.simulated, "the end-to-end launch never runs under simulation"
    plan_hybrid = hybrid.HYBRID_SM120 if target.hybrid else None
    if plan_hybrid:
        device = hybrid.hybrid_device(device, plan_hybrid)
    from pcgkit.sglang import facts as sglang_facts

    try:
        flags = sglang_facts.piecewise_flags()
    except (ImportError, LookupError) as exc:
        pytest.fail(f"pcgkit error: broken install: {type(exc).__name__}: {exc}", pytrace=False)
    broken = broken_install_reason(flags)
    if broken:
        pytest.fail(f"pcgkit error: broken install: {broken}", pytrace=False)
    versions = collect_versions()
    expectation = expected_for(MODE.id, versions, load_expectations(), target.id)
    checkpoint = write_checkpoint(tmp_path / "tiny-nvfp4")
    port, port_evidence = launch_port()
    env = dict(os.environ)
    toolkit = cuda_toolkit_root()
    if toolkit and not env.get("CUDA_HOME"):
        env["CUDA_HOME"] = toolkit  # as on a CUDA machine; without it FlashInfer fails one frame earlier
    try:
        plan = plan_for_checkpoint(flags, python=sys.executable, fmt=NVFP4, model_path=str(checkpoint), port=port, env=env,
                                   target_args=plan_hybrid.server_args if plan_hybrid else ())
    except LaunchPlanError as exc:  # e.g. 0.5.22+: torch.compile piecewise (tc_piecewise) was removed
        result = not_applicable_result(str(exc), device=device.to_dict(), versions=versions, nodeid=request.node.nodeid,
                                       evidence={"flags": flags.to_dict()},
                                       expected=expectation.expect.value if expectation else None, variant=target.id)
        record(request.node, result, expectation)
        return
    log_path = (request.config.rootpath / ARTIFACTS / f"server-{target.id}-{int(time.time())}-{port}.log").resolve()
    if plan_hybrid:
        shim_dir = hybrid.write_shim(log_path.with_suffix(".hybrid"))
        evidence_dir = shim_dir / "evidence"
        evidence_dir.mkdir(exist_ok=True)
        env = hybrid.server_env(plan_hybrid, env, shim_dir, evidence_dir)
    outcome = launch_and_classify(
        plan.argv,
        port=port,
        log_path=log_path,
        env=env,
        ready_timeout_s=request.config.getoption("--pcgkit-case-timeout"),
    )
    control = control_of_session(request.config)
    classification = judge_with_control(outcome.classification, control)
    extra: dict = {}
    if plan_hybrid:
        seen = hybrid.read_evidence(evidence_dir)
        classification = hybrid.judge_hybrid(classification, log_path.read_text(errors="replace"), plan_hybrid, seen)
        extra["hybrid"] = {**hybrid.plan_evidence(plan_hybrid), "seen": seen.to_dict(), "shim": str(shim_dir / "sitecustomize.py")}
    result = to_case_result(
        outcome,
        device=device.to_dict(),
        versions=versions,
        duration_s=time.perf_counter() - start,
        nodeid=request.node.nodeid,
        evidence={"flags": flags.to_dict(), "launch": list(plan.argv), "piecewise_how": plan.how, "CUDA_HOME": env.get("CUDA_HOME"),
                  "control": control.to_dict() if control else "not run in this session", **port_evidence, **extra},
        expected=expectation.expect.value if expectation else None,
        classification=classification,
        variant=target.id,
    )
    record(request.node, result, expectation)
