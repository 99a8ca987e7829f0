"""The end-to-end log classifier on the logs in tests/data/e2e_logs (provenance in its INDEX.toml)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from pcgkit.e2e.control import classify_control
from pcgkit.e2e.logclass import classify_run, log_timings
from pcgkit.e2e.server import Generation, Readiness, ServerRun
from pcgkit.values.verdict import Verdict

LOGS = Path(__file__).resolve().parent / "data" / "e2e_logs"
INDEX = tomllib.loads((LOGS / "INDEX.toml").read_text())["log"]


CLASSIFIERS = {None: classify_run, "control": classify_control}
H200_HEALTHY = LOGS / "h200_sglang0512_control_bf16_healthy.log"
H200_NVFP4_REFUSED = LOGS / "h200_sglang0512_nvfp4_sm90_refused.log"


def _run(readiness: str, exit_status=None, generation_ok=None, log_path=Path("server.log"), group_left=None) -> ServerRun:
    generation = None
    if generation_ok is not None:
        generation = Generation(generation_ok, "fox jumps over" if generation_ok else "HTTP 500: b'oops'", 0.2)
    return ServerRun(("python", "-m", "sglang.launch_server"), log_path, Readiness(readiness), 42.0, exit_status, generation,
                     tuple(group_left) if group_left is not None else None)


@pytest.mark.parametrize("entry", INDEX, ids=[f"{e['file']}-{e.get('classifier', 'run')}-{e['readiness']}-"
                                             f"{'leak-' if e.get('group_left') else ''}{e['expect']}" for e in INDEX])
def test_fixture_logs_classify_as_indexed(entry):
    """Each indexed log, with the lifecycle it came with, gets the verdict its index entry states."""
    log = (LOGS / entry["file"]).read_text()
    run = _run(entry["readiness"], entry.get("exit_status"), entry.get("generation_ok"), group_left=entry.get("group_left"))
    result = CLASSIFIERS[entry.get("classifier")](run, log)
    assert result.verdict is Verdict(entry["expect"]), result.reason
    if result.verdict in (Verdict.REPRODUCED, Verdict.DRIFTED):
        assert result.signature is not None and result.signature.exception_type == "torch._dynamo.exc.Unsupported"


def test_seed_000_crash_carries_its_signature_and_capture_state():
    """The seed 000 crash is reproduced with the nvcc frame, inside a capture that began and never ended."""
    result = classify_run(_run("died", 1), (LOGS / "seed000_capture_nvcc_subprocess.log").read_text())
    assert result.verdict is Verdict.REPRODUCED
    assert str(result.signature.innermost_library_frame) == "flashinfer/jit/cpp_ext.py:69:get_cuda_version"
    assert result.capture_began and not result.capture_ended
    assert "during piecewise capture" in result.reason and "status 1" in result.reason


def test_drift_names_where_the_failure_moved():
    """The JIT-loader crash after the get_cuda_version patch is a drift that names the new frame."""
    result = classify_run(_run("died", 1), (LOGS / "seed004_jit_loader_after_patch.log").read_text())
    assert result.verdict is Verdict.DRIFTED
    assert "flashinfer/jit/core.py:169:register" in result.reason


def test_non_compile_crash_is_an_error_not_a_verdict_on_the_bug():
    """A server that dies of something else (here: CUDA OOM) is an error naming the exception."""
    log = "[x] Capture piecewise CUDA graph begin.\nTraceback (most recent call last):\ntorch.OutOfMemoryError: CUDA out of memory.\n"
    result = classify_run(_run("died", 1), log)
    assert result.verdict is Verdict.ERROR
    assert "torch.OutOfMemoryError" in result.reason and "not a compile failure" in result.reason


@pytest.mark.parametrize(("readiness", "words"), [("died", "exited (status 137)"), ("timed-out", "not ready after 42 s")])
def test_crash_without_exception_is_an_error(readiness, words):
    """Death or a hang with nothing in the log is an error that says which of the two it was."""
    result = classify_run(_run(readiness, 137 if readiness == "died" else None), "loading...\n")
    assert result.verdict is Verdict.ERROR
    assert words in result.reason and "no exception" in result.reason


def test_ready_without_capture_is_an_error():
    """A healthy server whose log never shows piecewise capture did not test the path: error."""
    result = classify_run(_run("ready", generation_ok=True), "The server is fired up and ready to roll!\n")
    assert result.verdict is Verdict.ERROR
    assert "no piecewise CUDA graph capture" in result.reason


def test_fixed_reports_the_generation():
    """A fixed verdict says the capture ran and how much the one /generate answered."""
    result = classify_run(_run("ready", generation_ok=True), (LOGS / "sglang_format_healthy.log").read_text())
    assert result.verdict is Verdict.FIXED
    assert result.capture_began and result.capture_ended
    assert "/generate answered 14 chars" in result.reason


def test_index_names_every_fixture_log_and_each_real_run_says_where_it_came_from():
    """Every .log in tests/data/e2e_logs is indexed, and each device-run entry carries its provenance."""
    assert {p.name for p in LOGS.glob("*.log")} == {e["file"] for e in INDEX}
    for entry in INDEX:
        if entry["source"] == "device-run":
            assert entry["provenance"].startswith(("pcgkit run on lent H200, 2026-12-01, command: ", "as above"))


def test_real_h200_control_log_is_a_healthy_piecewise_capture():
    """The real SGLang 0.5.12 control log (H200): capture began and ended, timings read, fixed under both classifiers."""
    log = H200_HEALTHY.read_text()
    for classify in (classify_run, classify_control):
        result = classify(_run("ready", generation_ok=True, group_left=()), log)
        assert result.verdict is Verdict.FIXED, result.reason
        assert result.capture_began and result.capture_ended
    assert log_timings(log) == {"piecewise_capture_s": 3.45, "cuda_graph_capture_s": 65.11}


def test_real_h200_control_log_without_an_answer_is_a_control_error():
    """The healthy log with a failed /generate: the control reports an error that says it failed."""
    result = classify_control(_run("ready", generation_ok=False, group_left=()), H200_HEALTHY.read_text())
    assert result.verdict is Verdict.ERROR
    assert result.reason.startswith("control failed: server ready but /generate failed")


@pytest.mark.parametrize("readiness", ["died", "timed-out"])
def test_real_sm90_nvfp4_refusal_is_skipped_never_reproduced(readiness):
    """SGLang 0.5.12 refusing modelopt_fp4 on the H200 (SM90) is a hardware skip naming both capabilities."""
    result = classify_run(_run(readiness, -9 if readiness == "died" else None), H200_NVFP4_REFUSED.read_text())
    assert result.verdict is Verdict.SKIPPED
    assert "minimum capability 100, current 90" in result.reason and "modelopt_fp4" in result.reason
    assert result.signature is not None and result.signature.exception_type == "ValueError"
    assert not result.capture_began


def test_refusal_after_a_capture_began_is_not_taken_for_a_hardware_skip():
    """The refusal text only means 'hardware' before any capture; later in a log it is judged as a crash."""
    log = "[x] Capture piecewise CUDA graph begin.\n" + H200_NVFP4_REFUSED.read_text()
    result = classify_run(_run("died", 1), log)
    assert result.verdict is Verdict.ERROR and "not a compile failure" in result.reason


def test_leftover_processes_turn_any_verdict_into_an_error():
    """A reproduced crash whose server group outlived the stop is reported as the kit's error, signature kept."""
    result = classify_run(_run("died", 1, group_left=["77:sglang::scheduler:S"]),
                          (LOGS / "seed000_capture_nvcc_subprocess.log").read_text())
    assert result.verdict is Verdict.ERROR
    assert "77:sglang::scheduler:S" in result.reason and "reproduced" in result.reason
    assert result.signature is not None


def test_log_timings_reads_only_what_is_there():
    """Timings absent from a log are absent from the result, not zero."""
    assert log_timings("Capture piecewise CUDA graph end. Time elapsed: 25.10 s. mem usage=0.20 GB.") == {
        "piecewise_capture_s": 25.1}
    assert log_timings("nothing captured") == {}
