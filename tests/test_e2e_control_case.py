"""The control case's gating and its place in one session with the NVFP4 case (stand-in servers, no GPU).

Selected by -m "gpu and e2e", skipped naming the missing GPU, a "not run here" row in the results;
with a device reported, the NVFP4 case run after it in the same session records the control's
outcome, and a non-signature NVFP4 failure beside a failed control is an error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pcgkit.harness import hardware
from pcgkit.harness.hardware import Device

CASES = Path(__file__).resolve().parent.parent / "cases"
LOGS = CASES.parent / "tests" / "data" / "e2e_logs"
PLUGIN_ARGS = ("-p", "pcgkit.plugin", "-p", "no:cacheprovider")

DYING_SERVER = """
import sys, time
time.sleep(0.2)
sys.stdout.write(open(sys.argv[1]).read())
sys.exit(1)
"""


@pytest.fixture
def devices(monkeypatch):
    monkeypatch.delenv("PCGKIT_REQUIRE_HARDWARE", raising=False)

    def set_devices(*found: Device) -> None:
        monkeypatch.setattr(hardware, "detect_cuda_devices", lambda: tuple(found))

    set_devices()
    return set_devices


@pytest.fixture(scope="module", autouse=True)
def imported_stack():
    """As in test_e2e_case: import once what the in-process runs import (torch cannot be imported twice)."""
    import importlib

    for name in ("torch", "torch._dynamo", "pcgkit.plugin", "safetensors.torch", "tokenizers", "pcgkit.e2e.checkpoint",
                 "pcgkit.fp4.reference", "pcgkit.sglang.facts", "pcgkit.e2e.launch", "pcgkit.e2e.case",
                 "pcgkit.e2e.server", "pcgkit.e2e.control"):
        importlib.import_module(name)


@pytest.fixture
def both(pytester):
    # Other module names than the real cases' (xdist may have imported those); the control sorts first.
    pytester.makepyfile(test_a_control_under_test=(CASES / "test_e2e_piecewise_control.py").read_text(),
                        test_b_launch_under_test=(CASES / "test_e2e_piecewise_launch.py").read_text())
    return pytester


def test_control_selected_by_gpu_and_e2e_and_skipped_without_a_gpu(both, devices, tmp_path):
    """Without a CUDA device the control skips naming what it needs, and still leaves a row; "gpu and e2e"
    also selects the NVFP4 launch on the hybrid target (any real GPU), skipped the same way."""
    out = tmp_path / "results.json"
    result = both.runpytest_inprocess(*PLUGIN_ARGS, "-m", "gpu and e2e", "-rs", f"--pcgkit-json={out}")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["SKIPPED * requires a real CUDA GPU; found no CUDA device"])
    rows = {r["mode"]: r for r in json.loads(out.read_text())["results"]}
    assert (rows["e2e-piecewise-control"]["variant"], rows["e2e-piecewise-control"]["verdict"]) == ("gpu", "skipped")
    assert (rows["e2e-piecewise-launch"]["variant"], rows["e2e-piecewise-launch"]["verdict"]) == ("gpu-as-sm120", "skipped")
    assert rows["e2e-piecewise-control"]["device"]["label"] == "not run here"


def test_failed_control_turns_a_drifted_nvfp4_failure_into_an_error(both, devices, monkeypatch, tmp_path):
    """Control dies (no exception), NVFP4 dies with a non-signature dynamo failure: the NVFP4 row is an
    error that names the failed control, and carries the control's record as evidence."""
    from pcgkit.e2e import launch as launch_mod
    from pcgkit.sglang import facts as flags_mod

    script = tmp_path / "dying_server.py"
    script.write_text(DYING_SERVER)
    control_log = tmp_path / "control.log"
    control_log.write_text("[x] Load weight begin.\nKilled\n")
    logs = {None: control_log, "modelopt_fp4": LOGS / "seed004_jit_loader_after_patch.log"}
    launched = []

    def stand_in_plan(flags, *, python, model_path, port, quantization=launch_mod.QUANTIZATION, extra_args=(), **kw):
        launched.append(quantization)
        return launch_mod.LaunchPlan((sys.executable, str(script), str(logs[quantization])), "stand-in")

    devices(Device("stand-in SM120 (test)", (12, 0)))
    facts = flags_mod.PiecewiseFlags("0.0.test", "opt-in", None, None, None, (), flags_mod.ARGPARSE_SOURCE,
                                     enable_argv=("--enable-piecewise-cuda-graph",))
    monkeypatch.setattr(flags_mod, "piecewise_flags", lambda: facts)
    monkeypatch.setattr(launch_mod, "build_launch", stand_in_plan)
    out = tmp_path / "results.json"
    result = both.runpytest_inprocess(*PLUGIN_ARGS, f"--pcgkit-json={out}", "-k", "not gpu-as-sm120")
    result.assert_outcomes(failed=2)
    assert launched == [None, "modelopt_fp4"]  # control first, without --quantization
    rows = {r["mode"]: r for r in json.loads(out.read_text())["results"]}
    control, nvfp4 = rows["e2e-piecewise-control"], rows["e2e-piecewise-launch"]
    assert control["verdict"] == "error" and control["reason"].startswith("control failed: server exited (status 1)")
    assert control["evidence"]["group_left_after_stop"] == []
    assert nvfp4["verdict"] == "error" and "bf16 piecewise control also failed" in nvfp4["reason"]
    assert nvfp4["evidence"]["control"]["verdict"] == "error"
    assert nvfp4["signature"]["innermost_library_frame"] == "flashinfer/jit/core.py:169:register"  # evidence kept
