"""pcgkit parity's pure comparison and report, on hand-built results."""

from pcgkit.jobs.parity import compare, render_markdown, to_json
from pcgkit.values.signature import Frame, Signature
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import CaseResult

SIM = {"name": "simulated SM120", "simulated": True, "label": "simulated SM120"}
H200 = {"name": "NVIDIA H200", "simulated": False, "label": "NVIDIA H200 (compute capability 9.0)"}


def _result(mode, variant, verdict, gb=None, frame=None, device=SIM, reason="r"):
    sig = Signature("torch._dynamo.exc.Unsupported", "msg", gb, innermost_library_frame=frame) if gb or frame else None
    return CaseResult(mode, variant, Verdict(verdict), reason, device, {"torch": "2.11.0"}, 0.1, sig)


NVCC = Frame("flashinfer/jit/cpp_ext.py", 69, "get_cuda_version")


def test_identical_observations_match():
    """Same verdict, graph-break id and innermost frame: `match`, no differences."""
    rows = compare([_result("mode1", "sim-sm120", "reproduced", "gb0007", NVCC),
                    _result("mode1", "gpu", "reproduced", "gb0007", NVCC, device=H200)])
    assert [(r.mode, r.status, r.differences) for r in rows] == [("mode1", "match", ())]


def test_a_different_frame_is_reported_not_hidden():
    """A moved innermost frame is a DIFFERENT row naming both frames."""
    moved = Frame("flashinfer/utils.py", 261, "get_compute_capability")
    rows = compare([_result("mode1", "sim-sm120", "reproduced", "gb0007", NVCC),
                    _result("mode1", "gpu", "drifted", "gb0007", moved, device=H200)])
    assert rows[0].status == "DIFFERENT"
    assert any("utils.py:261" in d for d in rows[0].differences) and any("verdict" in d for d in rows[0].differences)
    assert "DIFFERENT" in render_markdown(rows, {"date": "2026-11-29"})


def test_sm120_result_preferred_and_skips_not_compared():
    """A real SM120 result beats the generic gpu one; a skipped real run is `not compared`."""
    rows = compare([
        _result("mode1", "sim-sm120", "reproduced", "gb0007", NVCC),
        _result("mode1", "gpu", "drifted", device=H200),
        _result("mode1", "sm120", "reproduced", "gb0007", NVCC, device=H200),
        _result("mode4", "sim-sm120", "reproduced", "gb0098"),
        _result("mode4", "gpu", "skipped", device=H200, reason="no GPU"),
    ])
    by_mode = {r.mode: r for r in rows}
    assert by_mode["mode1"].real_variant == "sm120" and by_mode["mode1"].status == "match"
    assert by_mode["mode4"].status == "not compared" and "no GPU" in by_mode["mode4"].differences[0]


def test_json_is_versioned_and_carries_status():
    """parity.json names its schema and each row's status."""
    rows = compare([_result("mode2", "gpu", "reproduced", device=H200)])
    data = to_json(rows, {"date": "2026-11-29"})
    assert data["schema"] == "pcgkit.parity/1" and data["rows"][0]["status"] == "real only"


def _with_path(result, key, path):
    result.evidence[key] = {"arch_path": list(path)}
    return result


def test_a_different_arch_path_is_a_difference():
    """Same verdict and frame but another generator chosen: DIFFERENT, naming both paths."""
    rows = compare([
        _with_path(_result("mode1", "sim-sm90", "reproduced", "gb0007", NVCC), "simulation",
                   ["gen_fp4_quantization_sm120_module"]),
        _with_path(_result("mode1", "gpu", "reproduced", "gb0007", NVCC, device=H200), "device_path",
                   ["gen_fp4_quantization_sm90_module"]),
    ])
    assert rows[0].status == "DIFFERENT"
    assert rows[0].differences == (
        "arch_path: simulated gen_fp4_quantization_sm120_module vs real gen_fp4_quantization_sm90_module",)


def test_same_arch_path_matches_and_is_shown():
    """Simulated SM90 vs the real H200 on the same generator: match, the path in the table."""
    rows = compare([
        _with_path(_result("mode1", "sim-sm90", "reproduced", "gb0007", NVCC), "simulation",
                   ["gen_fp4_quantization_sm90_module"]),
        _with_path(_result("mode1", "gpu", "reproduced", "gb0007", NVCC, device=H200), "device_path",
                   ["gen_fp4_quantization_sm90_module"]),
    ])
    assert rows[0].status == "match"
    text = render_markdown(rows, {"simulated_arch": "sm90"})
    assert "Simulated SM90 vs real GPU" in text and "path `gen_fp4_quantization_sm90_module`" in text


def test_simulated_arch_follows_the_real_device():
    """An H200 (9.0) is compared with simulated SM90; a 12.x part with SM120; no GPU falls back to SM120."""
    from pcgkit.harness.hardware import Device
    from pcgkit.jobs.parity import simulated_arch_for

    assert simulated_arch_for((Device("NVIDIA H200", (9, 0)),)) == "sm90"
    assert simulated_arch_for((Device("RTX PRO 6000", (12, 0)),)) == "sm120"
    assert simulated_arch_for(()) == "sm120"
