"""The hybrid target gpu-as-sm120: the shim answers by caller and skips the warm-up in a real subprocess
(real torch, real dynamo), the plan and its judge are pure, and the NVFP4 case runs on it end to end
with a stand-in server that loads the shim (no GPU here)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pcgkit.e2e import hybrid
from pcgkit.e2e.logclass import Classification
from pcgkit.harness import hardware
from pcgkit.harness.hardware import Device
from pcgkit.values import targets
from pcgkit.values.verdict import Verdict

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "cases" / "test_e2e_piecewise_launch.py"
STAND_IN = ROOT / "tests" / "data" / "stand_in" / "hybrid_dying_server.py"
SEED000 = ROOT / "tests" / "data" / "e2e_logs" / "seed000_capture_nvcc_subprocess.log"
PLUGIN_ARGS = ("-p", "pcgkit.plugin", "-p", "no:cacheprovider")

PROBE_MODULES = {
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/probe.py": """
import torch


def traced(x):
    major, minor = torch.cuda.get_device_capability()
    return x + major * 10 + minor


class Runner:
    def warmup_compile(self, num_tokens):
        return num_tokens
""",
    "otherprobe.py": """
import torch


def ask():
    try:
        return torch.cuda.get_device_capability()
    except Exception as exc:  # no GPU here: the real query raises
        return type(exc).__name__
""",
}
PROBE = textwrap.dedent('''
    import torch
    import otherprobe
    from sglang.srt import probe
    runner = probe.Runner()
    print({"dynamo": torch.compile(probe.traced, fullgraph=True, backend="eager")(torch.zeros(1)).item(),
           "other": otherprobe.ask(), "warmups": [runner.warmup_compile(num_tokens=4), runner.warmup_compile(num_tokens=8)]})
''')


def _plan_for_probe() -> hybrid.HybridPlan:
    return hybrid.HybridPlan(hybrid.HYBRID_SM120.answer, hybrid.HYBRID_SM120.callers,
                             (hybrid.SkippedStep("sglang.srt.probe:Runner.warmup_compile:first", "test"),), (), "")


def test_shim_answers_sglang_and_dynamo_not_others_and_skips_the_first_warmup(tmp_path):
    """In a fresh interpreter with the shim on PYTHONPATH: dynamo's trace of SGLang-like code gets 12.0 (the
    graph computes 120), any other caller gets the real answer (here: no GPU, an error), the first
    warm-up call is skipped and the second runs; the evidence says all of it."""
    import os

    shim = hybrid.write_shim(tmp_path / "shim")
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    for name, text in PROBE_MODULES.items():
        (tmp_path / "pkg" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pkg" / name).write_text(text)
    env = hybrid.server_env(_plan_for_probe(), {**os.environ, "PYTHONPATH": f"{tmp_path / 'pkg'}:{ROOT}"}, shim, evidence)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300, check=True)
    result = eval(out.stdout.strip().splitlines()[-1])  # the probe prints one dict literal
    assert result["dynamo"] == 120.0 and result["other"] == "RuntimeError" and result["warmups"] == [None, 8]
    seen = hybrid.read_evidence(evidence)
    assert seen.processes == 1
    answered = {q["caller"].split(":")[0] for q in seen.queries if q["answered"]}
    assert answered <= {"torch._dynamo.utils", "torch._dynamo.variables.torch", hybrid.FX_GENERATED} and answered
    assert [s["step"] for s in seen.skipped] == ["sglang.srt.probe:Runner.warmup_compile:first"]
    assert hybrid.took(hybrid.HYBRID_SM120, seen) == "no SGLang or FlashInfer architecture query was answered as 12.0"


def test_shim_does_nothing_without_its_variables(tmp_path):
    """Without PCGKIT_HYBRID_ANSWER the shim is inert: no patch, no evidence, the real query."""
    shim = hybrid.write_shim(tmp_path / "shim")
    out = subprocess.run([sys.executable, "-c", "import torch; print(getattr(torch.cuda.get_device_capability, 'pcgkit_hybrid', False))"],
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(shim)}, capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "False"


def test_server_env_puts_the_shim_first_and_states_the_plan():
    """The shim's folder leads PYTHONPATH and the plan travels as variables; nothing else changes."""
    env = hybrid.server_env(hybrid.HYBRID_SM120, {"PYTHONPATH": "/site:/kit", "X": "1"}, Path("/shim"), Path("/ev"))
    assert env["PYTHONPATH"] == "/shim:/site:/kit" and env["X"] == "1"
    assert env[hybrid.ENV_ANSWER] == "12.0" and env[hybrid.ENV_EVIDENCE] == "/ev"
    assert env[hybrid.ENV_CALLERS].split(",") == ["sglang.srt.", "flashinfer.", "torch._dynamo.", "<fx-generated>"]
    assert env[hybrid.ENV_SKIP].endswith("PiecewiseCudaGraphRunner.warmup_compile:first")


def _evidence(*callers: str, processes: int = 3) -> hybrid.HybridEvidence:
    lines = [json.dumps({"event": "loaded", "pid": p}) for p in range(processes)]
    lines += [json.dumps({"event": "query", "caller": c, "answered": not c.startswith("triton"),
                          "answer": [12, 0] if not c.startswith("triton") else [9, 0], "pid": 0}) for c in callers]
    return hybrid.parse_evidence(lines + ['{"torn'])


def test_hybrid_that_did_not_take_is_an_error_whatever_the_log():
    """No process loaded the shim, or no SGLang/FlashInfer caller got 12.0: the run tested nothing (error)."""
    reproduced = Classification(Verdict.REPRODUCED, "crashed with the known signature", capture_began=True)
    judged = hybrid.judge_hybrid(reproduced, "", hybrid.HYBRID_SM120, _evidence(processes=0))
    assert judged.verdict is Verdict.ERROR and "loaded in no server process" in judged.reason
    judged = hybrid.judge_hybrid(reproduced, "", hybrid.HYBRID_SM120, _evidence("triton.backends.nvidia.driver:x"))
    assert judged.verdict is Verdict.ERROR and "no SGLang or FlashInfer" in judged.reason


def test_clean_trace_then_a_kernel_the_gpu_cannot_run_is_skipped_not_fixed():
    """SGLang logged the finished compile, then a CUDA 'no kernel image' error: skipped (needs a real SM120)."""
    log = ("Capture piecewise CUDA graph begin. avail mem=70.00 GB\nCompiling a graph for dynamic shape takes 2.10 s\n"
           "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device\n")
    error = Classification(Verdict.ERROR, "server exited with torch.AcceleratorError (not a compile failure)", capture_began=True)
    judged = hybrid.judge_hybrid(error, log, hybrid.HYBRID_SM120, _evidence("sglang.srt.utils:f"))
    assert judged.verdict is Verdict.SKIPPED and judged.reason.startswith("hybrid limit: the piecewise trace ran without")
    no_compile = log.replace("Compiling a graph for dynamic shape takes 2.10 s\n", "")
    assert hybrid.judge_hybrid(error, no_compile, hybrid.HYBRID_SM120, _evidence("sglang.srt.utils:f")).verdict is Verdict.ERROR


def test_hybrid_device_label_says_what_is_real_and_never_counts_as_sm120():
    """The label names the real GPU and its CC and what was answered; family stays 9: not SM120 hardware."""
    device = hybrid.hybrid_device(Device("NVIDIA H200", (9, 0)))
    assert device.label == ("real NVIDIA H200 (CC 9.0) with SGLang/FlashInfer/dynamo architecture queries answered as 12.0")
    assert device.to_dict()["compute_capability"] == "9.0" and device.to_dict()["answered_as"] == "12.0"
    assert hardware.missing_hardware_reason("sm120", (device,)) is not None
    assert targets.GPU_AS_SM120.marker == "gpu" and not targets.GPU_AS_SM120.simulated
    assert targets.GPU_AS_SM120.id not in targets.REAL_TARGET_IDS and targets.BY_ID["gpu-as-sm120"].hybrid


@pytest.fixture(scope="module")
def imported_stack():
    """What the in-process run imports, imported once before it (pytester restores sys.modules after
    each test, and torch cannot be imported twice in one process); see tests/test_e2e_case.py."""
    import importlib

    for name in ("torch", "torch._dynamo", "safetensors.torch", "tokenizers", "pcgkit.plugin",
                 "pcgkit.e2e.checkpoint", "pcgkit.sglang.facts", "pcgkit.e2e.launch", "pcgkit.e2e.case",
                 "pcgkit.e2e.server", "pcgkit.e2e.hybrid"):
        importlib.import_module(name)


@pytest.fixture
def devices(monkeypatch):
    monkeypatch.delenv("PCGKIT_REQUIRE_HARDWARE", raising=False)

    def set_devices(*found: Device) -> None:
        monkeypatch.setattr(hardware, "detect_cuda_devices", lambda: tuple(found))

    set_devices()
    return set_devices


def test_nvfp4_case_on_the_hybrid_target_end_to_end(imported_stack, pytester, devices, monkeypatch, tmp_path):
    """On an H200 stand-in, the case launches a stand-in server with the shim on its path: the server's
    SGLang-like query gets 12.0 and its other caller the real answer; the seed-000 log it prints is
    `reproduced` on variant gpu-as-sm120, the device label is the hybrid's, the evidence lists the answers."""
    from pcgkit.e2e import launch as launch_mod
    from pcgkit.sglang import facts as flags_mod

    def stand_in(flags, **kwargs):
        return launch_mod.LaunchPlan((sys.executable, str(STAND_IN), str(SEED000)), "stand-in")

    devices(Device("NVIDIA H200", (9, 0)))
    monkeypatch.setattr(flags_mod, "piecewise_flags", lambda: flags_mod.PiecewiseFlags(
        "0.0.test", "opt-in", None, None, None, (), flags_mod.ARGPARSE_SOURCE, enable_argv=("--enable-piecewise-cuda-graph",)))
    monkeypatch.setattr(launch_mod, "build_launch", stand_in)
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("PCGKIT_E2E_ARTIFACTS", str(tmp_path / "e2e"))
    pytester.makepyfile(test_e2e_hybrid_case_under_test=CASE.read_text())
    out = tmp_path / "results.json"
    result = pytester.runpytest_inprocess(*PLUGIN_ARGS, f"--pcgkit-json={out}", "-rxs", "-k", "gpu-as-sm120")
    result.assert_outcomes(xfailed=1)
    (row,) = json.loads(out.read_text())["results"]
    assert (row["variant"], row["verdict"]) == ("gpu-as-sm120", "reproduced")
    assert row["device"]["label"].startswith("real NVIDIA H200 (CC 9.0) with SGLang/FlashInfer/dynamo")
    seen = row["evidence"]["hybrid"]["seen"]
    assert {"caller": "sglang.srt.stand_in:capability", "answered": True, "answer": "12.0"} in seen["queries"]
    assert {"caller": "triton.stand_in:capability", "answered": False, "answer": "raised RuntimeError"} in seen["queries"]
    assert row["evidence"]["derived_port_offsets"][-1] >= 10000 and row["evidence"]["port"] + 10000 <= 65535


SAMPLE = ROOT / "reports" / "samples" / "e2e-h200-mode5-2026-12-01"
LOGS = ROOT / "tests" / "data" / "e2e_logs"


@pytest.mark.parametrize(("release", "log", "verdict", "reason_starts"), [
    ("0.5.11", "h200_sglang0511_hybrid_nvfp4_mode5_capture_crash.log", Verdict.REPRODUCED, "on the hybrid target: server exited"),
    ("0.5.12", "h200_sglang0512_hybrid_nvfp4_no_kernel_image.log", Verdict.SKIPPED,
     "hybrid limit: the piecewise trace ran without a dynamo failure (SGLang: 'Compiling a graph for dynamic shape takes 0.10 s')"),
])
def test_real_h200_hybrid_runs_are_judged_from_their_log_and_evidence(release, log, verdict, reason_starts):
    """The real H200 runs (issue 26 sample): 0.5.11 dies in capture with mode 1's signature (reproduced);
    0.5.12 traces cleanly, then cannot run its sm_120 kernels (skipped, never fixed); both took."""
    from pcgkit.e2e.logclass import classify_run
    from pcgkit.e2e.server import Readiness, ServerRun

    text = (LOGS / log).read_text()
    (evidence_dir,) = (SAMPLE / f"sglang-{release}" / "e2e").glob("*.hybrid/evidence")
    seen = hybrid.read_evidence(evidence_dir)
    assert hybrid.took(hybrid.HYBRID_SM120, seen) is None and seen.processes >= 3
    assert [s["step"].split(":")[1] for s in seen.skipped] == ["PiecewiseCudaGraphRunner.warmup_compile"]
    real = {q["caller"] for q in seen.queries if not q["answered"]}
    assert "triton.backends.nvidia.driver:get_current_target" in real  # Triton compiled for the real GPU
    run = ServerRun(("x",), Path(log), Readiness.DIED, 50.0, -9, None, ())
    judged = hybrid.judge_hybrid(classify_run(run, text), text, hybrid.HYBRID_SM120, seen)
    assert judged.verdict is verdict and judged.reason.startswith(reason_starts)


def test_shim_still_runs_the_sitecustomize_it_shadows(tmp_path):
    """A sitecustomize further down the path (an image's own) still runs after the shim, as Python would have run it."""
    shim = hybrid.write_shim(tmp_path / "shim")
    other = tmp_path / "image"
    other.mkdir()
    (other / "sitecustomize.py").write_text("print('image sitecustomize ran')\n")
    out = subprocess.run([sys.executable, "-c", "pass"], env={"PATH": "/usr/bin:/bin", "PYTHONPATH": f"{shim}:{other}"},
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "image sitecustomize ran" and out.returncode == 0
