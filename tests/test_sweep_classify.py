"""Sweep classification on synthetic outcomes: each class, the order of the rules, verdicts, agreement."""

from __future__ import annotations

import pytest

from pcgkit.sweep.classify import Observation, SweepClass, classify, custom_ops, verdict_for
from pcgkit.sweep.report import agrees, readiness
from pcgkit.values.signature import Frame, Signature
from pcgkit.values.verdict import Verdict


def _sig(*frames: Frame, head="Attempted to call function marked as skipped", explanation=None) -> Signature:
    return Signature("torch._dynamo.exc.Unsupported", head, "gb0007", explanation, "posix.stat",
                     frames[-1] if frames else None, tuple(frames))


LOADER = _sig(Frame("flashinfer/norm.py", 30, "get_norm_module"), Frame("flashinfer/jit/core.py", 259, "is_aot"))
NAMED_LOADER = _sig(Frame("flashinfer/activation.py", 108, "gen_act_and_mul_module"))
ELSEWHERE = _sig(Frame("flashinfer/gemm/gemm_base.py", 1602, "_check_cudnn_fp4_availability"))


@pytest.mark.parametrize(
    "obs, expected",
    [
        (Observation("missing", "no attribute"), SweepClass.NOT_APPLICABLE),
        (Observation("build-error", "construct failed"), SweepClass.ERROR),
        (Observation("traced", graph_ops=("flashinfer::fp4_quantize", "aten::view")), SweepClass.OPAQUE_OP),
        (Observation("traced", graph_ops=("aten::mul.Tensor", "_operator.getitem")), SweepClass.TRACES_THROUGH),
        (Observation("traced"), SweepClass.TRACES_THROUGH),
        (Observation("raised", signature=LOADER), SweepClass.BREAKS_JIT_LOADER),
        (Observation("raised", signature=NAMED_LOADER), SweepClass.BREAKS_JIT_LOADER),
        (Observation("raised", signature=ELSEWHERE), SweepClass.BREAKS_ELSEWHERE),
        (Observation("raised", signature=_sig(head="Cannot access data pointer of Tensor that doesn't have storage")),
         SweepClass.FAKE_REACHES_KERNEL),
        (Observation("raised"), SweepClass.ERROR),
    ],
)
def test_each_class(obs, expected):
    """Every class of the issue's vocabulary is reachable from the outcome it describes."""
    assert classify(obs).cls is expected


def test_a_refusal_inside_fake_dispatch_wins_over_a_clean_trace():
    """A kernel load attempted from FakeTensor dispatch is fake-reaches-kernel even if the trace finished."""
    obs = Observation("traced", graph_ops=("flashinfer::op",), refused=(("tvm_ffi.load_module", "x.so", True),))
    assert classify(obs).cls is SweepClass.FAKE_REACHES_KERNEL
    outside = Observation("traced", graph_ops=("flashinfer::op",), refused=(("subprocess.Popen", "nvcc", False),))
    assert classify(outside).cls is SweepClass.OPAQUE_OP


def test_where_names_the_loader_frame():
    """The JIT-loader class says where: graph-break id, innermost frame, skipped builtin."""
    assert classify(Observation("raised", signature=LOADER)).where == "gb0007 core.py:259:is_aot posix.stat"


def test_custom_ops_ignore_torch_namespaces():
    """aten/prims/higher_order ops are not 'opaque library ops'."""
    assert custom_ops(("aten::add.Tensor", "prims::convert", "trtllm::reswizzle_sf", "flashinfer::x")) == (
        "flashinfer::x", "trtllm::reswizzle_sf")


def test_verdicts():
    """Traced -> fixed; the bug family's shapes -> reproduced; elsewhere -> drifted unless the public
    expectation names it; needs-gpu -> skipped."""
    loader = classify(Observation("raised", signature=LOADER))
    assert verdict_for(loader, "breaks-in-jit-loader") is Verdict.REPRODUCED
    assert verdict_for(loader, None) is Verdict.REPRODUCED
    elsewhere = classify(Observation("raised", signature=ELSEWHERE))
    assert verdict_for(elsewhere, None) is Verdict.DRIFTED
    assert verdict_for(elsewhere, "breaks-in-jit-loader") is Verdict.DRIFTED
    assert verdict_for(elsewhere, "not-an-opaque-op") is Verdict.REPRODUCED
    assert verdict_for(classify(Observation("needs-gpu", "construct needs a driver")), None) is Verdict.SKIPPED
    assert verdict_for(classify(Observation("traced", graph_ops=("flashinfer::x",))), "breaks-in-jit-loader") is Verdict.FIXED
    assert verdict_for(classify(Observation("missing")), None) is Verdict.NOT_APPLICABLE
    assert verdict_for(classify(Observation("build-error", "x")), None) is Verdict.ERROR


def test_agreement_with_public_threads():
    """'not-an-opaque-op' agrees with any failure or traced-through; errors never agree."""
    assert agrees("not-an-opaque-op", "breaks-elsewhere") and not agrees("not-an-opaque-op", "opaque-op")
    assert agrees("breaks-in-jit-loader", "breaks-in-jit-loader") and not agrees("opaque-op", "error")
    assert agrees(None, "error") is None


def test_readiness_counts_traced_over_applicable():
    """The readiness row counts traced entry points over those the release has."""
    rows = [{"flashinfer": "0.7.4", "torch": "2.14.1", "arch": "sm120", "classification": {"class": c}}
            for c in ("opaque-op", "breaks-in-jit-loader", "not-applicable", "traces-through")]
    table = readiness(rows)
    assert "| 0.7.4 | 2.14.1 | sm120 | 2/3 | 1 | 1 | 1 | 0 | 0 | 0 | 1 | 0 |" in table


def test_a_missing_cuda_runtime_is_a_simulation_gap_not_a_break():
    """'Found no NVIDIA driver' under a simulated arch is an error (simulation gap), never breaks-elsewhere."""
    sig = _sig(Frame("flashinfer/utils.py", 298, "_get_stream_cache_buf"),
               head="RuntimeError: Found no NVIDIA driver on your system.")
    result = classify(Observation("raised", signature=sig))
    assert result.cls is SweepClass.ERROR and result.where.startswith("simulation gap")


def test_the_cute_dsl_bootstrap_is_a_jit_loader():
    """flashinfer/cute_dsl frames and _get_compiled_kernel (0.6.x fp4 norms, 0.7.4's arch probe) are a JIT loader."""
    probe = _sig(Frame("flashinfer/norm/__init__.py", 260, "rmsnorm"),
                 Frame("flashinfer/cute_dsl/availability.py", 189, "_dsl_captured_arch"))
    compiled = _sig(Frame("flashinfer/norm/rmsnorm_fp4quant.py", 757, "_get_compiled_kernel"))
    for sig in (probe, compiled):
        result = classify(Observation("raised", signature=sig))
        assert (result.cls, result.loader) == (SweepClass.BREAKS_JIT_LOADER, "cute-dsl")
    assert classify(Observation("raised", signature=LOADER)).loader == "flashinfer-jit"


def test_set_up_that_needs_a_driver_is_needs_gpu_not_error():
    """A wrapper constructor that needs the CUDA driver is needs-gpu (skipped), a bad spec stays error."""
    assert classify(Observation("needs-gpu", "construct failed eagerly")).cls is SweepClass.NEEDS_GPU
    assert classify(Observation("build-error", "spec cannot build inputs")).cls is SweepClass.ERROR
