"""The end-to-end log classifier on the logs in tests/data/e2e_logs (provenance in its INDEX.toml)."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

from pcgkit.e2e.logclass import classify_run
from pcgkit.e2e.server import Generation, Readiness, ServerRun
from pcgkit.verdicts.verdict import Verdict

LOGS = Path(__file__).resolve().parent / "data" / "e2e_logs"
INDEX = tomllib.loads((LOGS / "INDEX.toml").read_text())["log"]


def _run(readiness: str, exit_status=None, generation_ok=None, log_path=Path("server.log")) -> ServerRun:
    generation = None
    if generation_ok is not None:
        generation = Generation(generation_ok, "fox jumps over" if generation_ok else "HTTP 500: b'oops'", 0.2)
    return ServerRun(("python", "-m", "sglang.launch_server"), log_path, Readiness(readiness), 42.0, exit_status, generation)


@pytest.mark.parametrize("entry", INDEX, ids=[f"{e['file']}-{e['readiness']}-{e['expect']}" for e in INDEX])
def test_fixture_logs_classify_as_indexed(entry):
    """Each indexed log, with the lifecycle it came with, gets the verdict its index entry states."""
    log = (LOGS / entry["file"]).read_text()
    run = _run(entry["readiness"], entry.get("exit_status"), entry.get("generation_ok"))
    result = classify_run(run, log)
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
