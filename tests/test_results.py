"""CaseResult and the versioned results file (pcgkit.results/1)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from pcgkit.harness.hardware import SIMULATED_SM120, Device
from pcgkit.values.signature import Frame, Signature
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import (
    JUNIT_RESULT_PROPERTY,
    RESULTS_SCHEMA,
    CaseResult,
    ResultsFileError,
    read_results,
    write_results,
)

SIGNATURE = Signature(
    exception_type="torch._dynamo.exc.Unsupported",
    message_head="Attempted to call function marked as skipped",
    graph_break_id="gb0007",
    explanation="Dynamo does not know how to trace the builtin `_thread.allocate_lock.`",
    skipped_callable="_thread.allocate_lock",
    innermost_library_frame=Frame("flashinfer/jit/cpp_ext.py", 69, "get_cuda_version"),
    frame_chain=(
        Frame("/tmp/cap.py", 21, "fn"),
        Frame("flashinfer/jit/cpp_ext.py", 69, "get_cuda_version"),
        Frame("/usr/lib/python3.12/subprocess.py", 466, "check_output"),
    ),
    lru_cache_warnings=("Dynamo detected a call to a `functools.lru_cache`-wrapped function.",),
)
VERSIONS = {"torch": "2.9.1+cu128", "flashinfer-python": "0.6.1", "sglang": None, "python": "3.12.1"}


def _result(mode="mode1", variant="sim-sm120", verdict=Verdict.REPRODUCED, device: Device = SIMULATED_SM120, **kw):
    return CaseResult(
        mode=mode,
        variant=variant,
        verdict=verdict,
        reason=kw.pop("reason", "known signature"),
        device=device.to_dict(),
        versions=VERSIONS,
        duration_s=1.25,
        signature=kw.pop("signature", SIGNATURE),
        expected="reproduced",
        evidence={"CUDA_HOME": "/usr/local/cuda", "simulated_queries": ["torch.cuda.get_device_capability"]},
        nodeid="cases/test_mode1_nvcc_subprocess.py::test_nvcc_subprocess[sim-sm120]",
        **kw,
    )


@pytest.mark.parametrize("signature", [SIGNATURE, None], ids=["with-signature", "without-signature"])
def test_json_round_trip(signature):
    """to_dict -> JSON text -> from_dict gives back an equal CaseResult."""
    result = _result(signature=signature)
    assert CaseResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_to_dict_is_labelled_simulated():
    """The JSON of a simulated result says so at top level, and a real device's does not."""
    assert _result().to_dict()["simulated"] is True
    assert _result(device=Device("NVIDIA H200", (9, 0)), variant="gpu").to_dict()["simulated"] is False


def test_write_then_read_results(tmp_path):
    """write_results/read_results keep every result and the environment; results come sorted."""
    path = tmp_path / "deep" / "results.json"
    results = [_result(mode="mode2"), _result(verdict=Verdict.SKIPPED, variant="sm120", signature=None)]
    write_results(path, results, {"versions": VERSIONS})
    data = json.loads(path.read_text())
    assert data["schema"] == RESULTS_SCHEMA
    environment, read = read_results(path)
    assert environment == {"versions": VERSIONS}
    assert read == sorted(results, key=lambda r: (r.mode, r.variant))


def test_read_results_rejects_other_schema(tmp_path):
    """A results file of another schema version is refused with ResultsFileError, naming both."""
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema": "pcgkit.results/2", "results": []}))
    with pytest.raises(ResultsFileError, match=r"pcgkit\.results/2.*pcgkit\.results/1"):
        read_results(path)


def test_junit_properties_carry_flat_evidence_and_full_json():
    """JUnit properties: flat verdict/device/signature fields plus the whole result as JSON."""
    result = _result()
    props = result.junit_properties()
    flat = dict(props)
    assert flat["pcgkit.verdict"] == "reproduced"
    assert flat["pcgkit.simulated"] == "true"
    assert "simulated" in flat["pcgkit.device"]
    assert flat["pcgkit.version.sglang"] == "not installed"
    assert flat["pcgkit.signature.innermost_library_frame"] == "flashinfer/jit/cpp_ext.py:69:get_cuda_version"
    assert flat["pcgkit.signature.graph_break_id"] == "gb0007"
    assert props[-1][0] == JUNIT_RESULT_PROPERTY
    assert CaseResult.from_dict(json.loads(flat[JUNIT_RESULT_PROPERTY])) == result


def test_junit_properties_without_signature():
    """A result without a signature (a skip, an error) has no signature properties, but still the JSON."""
    flat = dict(_result(verdict=Verdict.ERROR, signature=None).junit_properties())
    assert not any(name.startswith("pcgkit.values.signature.") for name in flat)
    assert json.loads(flat[JUNIT_RESULT_PROPERTY])["verdict"] == "error"


def test_result_dicts_written_once_give_the_file_write_results_gives(tmp_path, monkeypatch):
    """write_result_dicts of result_dict()s (the plugin's per-case rewrite) holds what write_results holds, secret redacted."""
    from pcgkit.verdicts.result import result_dict, sort_results, write_result_dicts, write_results

    monkeypatch.setenv("HF_TOKEN", "hf_abcdefghijklmnopqrstuvwx123")
    results = [_result(mode="mode2"), _result(mode="mode1")]
    results[0] = dataclasses.replace(results[0], reason="token hf_abcdefghijklmnopqrstuvwx123 leaked")
    env = {"versions": {"torch": "2.9.1"}, "note": "hf_abcdefghijklmnopqrstuvwx123"}
    write_results(tmp_path / "a.json", results, env)
    write_result_dicts(tmp_path / "b.json", [result_dict(r) for r in sort_results(results)], env)
    a, b = (json.loads((tmp_path / name).read_text()) for name in ("a.json", "b.json"))
    a.pop("created"), b.pop("created")
    assert a == b and [r["mode"] for r in a["results"]] == ["mode1", "mode2"]
    assert "hf_abcdefghijklmnopqrstuvwx123" not in (tmp_path / "b.json").read_text()
