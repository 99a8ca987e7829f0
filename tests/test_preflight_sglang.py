"""`pcgkit preflight` against real SGLang releases (issue 30's evidence), simulated SM120 on this CPU machine.

Each release runs in a uv venv built from the pins that release declares (fixtures/sglang_requires.toml) plus
the light packages its modules need to import on CPU (pcgkit.preflight.envs.sweep_import_dependencies),
cached under ${PCGKIT_CACHE:-~/.cache/pcgkit}/preflight-envs so only the first run pays. The checkpoint is
config files only (the kit's ModelOpt NVFP4 export forms, or bf16), written into tmp_path: no weights.
A build failure fails the test (PyPI is reachable on CI): it never skips.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pcgkit.preflight.envs import release_env

pytestmark = pytest.mark.slow  # real release environments (~7 GB each, cached) and a probe that imports SGLang: minutes


def sglang_env(version: str) -> str:
    """The kit's own environment for that release (pcgkit.preflight.envs), built once and cached."""
    return str(release_env(version).python)


def checkpoint(folder: Path, quantized: bool) -> Path:
    """config.json (+ hf_quant_config.json when quantized) as a ModelOpt NVFP4 export writes them; no weights."""
    from pcgkit.e2e import checkpoint as ck

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(ck.model_config(ck.TinyLlamaShape(), 1, 2, quantized=quantized)))
    if quantized:
        (folder / "hf_quant_config.json").write_text(json.dumps(ck.hf_quant_config()))
    return folder


def preflight(python: str, *launch: str, arch: str = "sm120", env: dict | None = None) -> tuple[int, dict]:
    """`pcgkit preflight --json --python ENV -- LAUNCH` as a user runs it: (exit status, its JSON)."""
    done = subprocess.run([sys.executable, "-m", "pcgkit.cli", "preflight", "--json", "--arch", arch,
                           "--python", python, "--", *launch], capture_output=True, text=True, timeout=1800, env=env)
    assert done.stdout.strip(), done.stderr[-2000:]
    return done.returncode, json.loads(done.stdout)


@pytest.fixture(scope="module")
def sglang_058() -> str:
    return sglang_env("0.5.8")


@pytest.fixture(scope="module")
def sglang_0512() -> str:
    return sglang_env("0.5.12")


def test_seed_stack_nvfp4_with_piecewise_on_will_crash_with_mode_1(sglang_058, tmp_path):
    """SGLang 0.5.8 + ModelOpt NVFP4 + --enable-piecewise-cuda-graph, simulated SM120: will crash, mode1, exit 10."""
    status, answer = preflight(sglang_058, "--model-path", str(checkpoint(tmp_path / "ckpt", True)),
                               "--quantization", "modelopt_fp4", "--enable-piecewise-cuda-graph")
    assert (status, answer["answer"], answer["mode"]) == (10, "will crash", "mode1"), answer["reason"]
    assert answer["signature"]["innermost_library_frame"].startswith("flashinfer/jit/cpp_ext.py")
    assert answer["probe"]["dense"]["linear_method"].endswith("ModelOptFp4LinearMethod")
    assert answer["simulated"] and answer["device"]["compute_capability"] == "12.0"
    load_check = answer["probe"]["load_check"]  # the loader's own minimum, read from the release: SM120 passes it
    assert (load_check["min_capability"], load_check["device_capability"], load_check["refusal"]) == (100, [12, 0], None)


def test_a_simulation_on_a_host_with_a_real_sgl_kernel_is_the_same_simulation(sglang_058, tmp_path):
    """A real sgl_kernel that cannot load for the answered architecture (the H200 run: "No module named
    'common_ops'", exit 4) is not used under a simulation: the stand-in is, and the answer is mode 1 as on CPU."""
    package = tmp_path / "site" / "sgl_kernel"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'common_ops'\")\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(package.parent), os.environ.get("PYTHONPATH"))))}
    status, answer = preflight(sglang_058, "--model-path", str(checkpoint(tmp_path / "ckpt", True)),
                               "--quantization", "modelopt_fp4", "--enable-piecewise-cuda-graph", env=env)
    assert (status, answer["answer"], answer["mode"]) == (10, "will crash", "mode1"), answer["reason"]
    assert answer["probe"]["sgl_kernel"] == "stubbed (import only)"


def test_nvfp4_on_sm90_is_refused_at_model_load_as_the_server_refuses_it(sglang_058, tmp_path):
    """Simulated SM90: the release's loader refuses NVFP4 before any capture ("Minimum capability: 100. Current
    capability: 90.", the words the real server said on the H200): unknown, exit 11, never `ok`."""
    status, answer = preflight(sglang_058, "--model-path", str(checkpoint(tmp_path / "ckpt", True)),
                               "--quantization", "modelopt_fp4", "--enable-piecewise-cuda-graph", arch="sm90")
    assert (status, answer["answer"]) == (11, "unknown"), answer["reason"]
    assert "refuses this launch at model load" in answer["reason"]
    assert answer["reason"].count("Minimum capability: 100. Current capability: 90.") == 1
    assert "dense" not in answer["probe"]  # nothing traced: the server would never reach piecewise capture


def test_seed_stack_with_the_release_switch_off_is_ok(sglang_058, tmp_path):
    """The same launch without 0.5.8's opt-in switch: ok (piecewise capture is off), exit 0."""
    status, answer = preflight(sglang_058, "--model-path", str(checkpoint(tmp_path / "ckpt", True)),
                               "--quantization", "modelopt_fp4")
    assert (status, answer["answer"]) == (0, "ok"), answer["reason"]
    assert "--enable-piecewise-cuda-graph" in answer["reason"]


def test_seed_stack_bf16_with_piecewise_on_is_ok(sglang_058, tmp_path):
    """A bf16 checkpoint with piecewise on: the unquantized linear method traces: ok."""
    status, answer = preflight(sglang_058, "--model-path", str(checkpoint(tmp_path / "ckpt", False)),
                               "--enable-piecewise-cuda-graph")
    assert (status, answer["answer"]) == (0, "ok"), answer["reason"]
    assert answer["probe"]["dense"]["linear_method"].endswith("UnquantizedLinearMethod")


def test_sglang_0512_nvfp4_with_piecewise_on_by_default_is_ok(sglang_0512, tmp_path):
    """SGLang 0.5.12 (its own custom op for the FP4 quantize; piecewise on by default), NVFP4: ok."""
    status, answer = preflight(sglang_0512, "--model-path", str(checkpoint(tmp_path / "ckpt", True)),
                               "--quantization", "modelopt_fp4")
    assert answer["probe"]["piecewise"]["on"] is True, answer["probe"]["piecewise"]
    assert (status, answer["answer"]) == (0, "ok"), answer["reason"]


def test_a_hub_id_is_unknown_and_nothing_is_downloaded(sglang_058):
    """A model path that is not a local folder: unknown (exit 11), saying preflight never downloads."""
    status, answer = preflight(sglang_058, "--model-path", "nvidia/Llama-3.1-8B-Instruct-FP4",
                               "--enable-piecewise-cuda-graph")
    assert (status, answer["answer"]) == (11, "unknown") and "never downloads" in answer["reason"]


def test_an_unknown_architecture_is_unknown(sglang_058, tmp_path):
    """config.json naming a class the release does not register: unknown with that reason, no guess."""
    folder = checkpoint(tmp_path / "ckpt", True)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "architectures": ["NoSuchModelForCausalLM"]}))
    status, answer = preflight(sglang_058, "--model-path", str(folder), "--quantization", "modelopt_fp4",
                               "--enable-piecewise-cuda-graph")
    assert (status, answer["answer"]) == (11, "unknown") and "NoSuchModelForCausalLM" in answer["reason"]


def test_preflight_names_the_mode_triage_reads_in_the_real_crash_of_the_same_launch(tmp_path):
    """SGLang 0.5.11 + NVFP4, piecewise on: preflight's mode equals triage's on the real H200 mode-5 server log.

    The log (tests/data/triage_logs/32_*, with provenance) is SGLang 0.5.11 dying in piecewise capture on the
    lent H200 with its architecture queries answered as 12.0 (issue 26's hybrid target); preflight answers the
    same launch on this CPU, simulated SM120, before any weight: the same failure mode, in the same FlashInfer
    file (cpp_ext.py's nvcc subprocess: get_cuda_version, or get_cuda_path one frame earlier where CUDA_HOME is unset).
    """
    log = Path(__file__).parent / "data" / "triage_logs" / "32_h200_sglang0511_hybrid_nvfp4_mode5_capture_crash.log"
    triaged = subprocess.run([sys.executable, "-m", "pcgkit.cli", "triage", "--json", str(log)],
                             capture_output=True, text=True, timeout=300)
    diagnosis = json.loads(triaged.stdout)["logs"][0]
    status, answer = preflight(sglang_env("0.5.11"), "--model-path", str(checkpoint(tmp_path / "ckpt", True)),
                               "--quantization", "modelopt_fp4", "--enforce-piecewise-cuda-graph")
    assert (diagnosis["diagnosis"], status, answer["answer"]) == ("known-bug", 10, "will crash"), answer["reason"]
    assert answer["mode"] == diagnosis["mode"] == "mode1"
    frame = answer["signature"]["innermost_library_frame"]
    assert frame.startswith("flashinfer/jit/cpp_ext.py:") and frame.endswith((":get_cuda_version", ":get_cuda_path"))


@pytest.fixture(scope="module")
def sglang_0511() -> str:
    return sglang_env("0.5.11")


def _nvfp4(tmp_path: Path) -> tuple[str, ...]:
    return ("--model-path", str(checkpoint(tmp_path / "ckpt", True)), "--quantization", "modelopt_fp4")


@pytest.mark.parametrize("flags, status, verdict, runner", [
    (("--enable-breakable-cuda-graph",), 0, "ok", "breakable"),  # issue 44: was WILL CRASH (exit 10) before
    ((), 10, "will crash", "torch.compile"),  # piecewise on by default, torch.compile runner
    (("--disable-piecewise-cuda-graph",), 0, "ok", None),
])
def test_sglang_0511_nvfp4_follows_the_runner_its_own_code_builds(sglang_0511, tmp_path, flags, status, verdict, runner):
    """SGLang 0.5.11 + NVFP4, simulated SM120: the breakable switch is ok and says multi-request prefills run eagerly
    (its BreakableCudaGraphRunner.can_run refuses batch_size > 1); the default launch still will crash; off is ok."""
    got, answer = preflight(sglang_0511, *_nvfp4(tmp_path), *flags)
    piecewise = answer["probe"]["piecewise"]
    assert (got, answer["answer"], piecewise["runner"]) == (status, verdict, runner), answer["reason"]
    if runner == "breakable":
        assert "will not hit this bug" in answer["reason"] and "more than one request run eagerly" in answer["reason"]
        assert piecewise["runner_source"].startswith("the installed sglang 0.5.11's own code (sglang/srt/model_executor/")


@pytest.mark.parametrize("flag", ["--cuda-graph-backend-prefill=breakable", "--enable-breakable-cuda-graph"])
def test_sglang_0514_breakable_backend_and_its_alias_are_ok_without_a_one_request_limit(tmp_path, flag):
    """SGLang 0.5.14 + NVFP4: the breakable prefill backend (or the deprecated alias), resolved by the release's own
    ServerArgs._handle_cuda_graph_config: ok, no one-request note (its can_run_graph takes many requests)."""
    status, answer = preflight(sglang_env("0.5.14"), *_nvfp4(tmp_path), flag)
    piecewise = answer["probe"]["piecewise"]
    assert (status, answer["answer"], piecewise["runner"]) == (0, "ok", "breakable"), answer["reason"]
    assert "prefill.backend=breakable" in piecewise["prefill_backend_resolution"]
    assert "eagerly" not in answer["reason"]
