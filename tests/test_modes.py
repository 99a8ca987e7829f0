"""classify(): the pure rule from a trace outcome to a verdict, on real captured messages."""

from __future__ import annotations

import dataclasses

import pytest

from pcgkit.values.signature import Frame, Signature, parse_message
from pcgkit.values.trace import TraceOutcome
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.modes import MODE1, MODE2, MODE3, MODE4, MODES, classify

TORCH_VERSIONS = ("2.8.0", "2.9.1", "2.10.0", "2.15.0")


def _outcome(signature: Signature | None, *, traced: bool = False) -> TraceOutcome:
    return TraceOutcome(
        traced=traced,
        executed=False,
        signature=signature,
        lru_cache_warnings=signature.lru_cache_warnings if signature else (),
        graph_breaks=0,
        graph_break_reasons=(),
        duration_s=0.1,
    )


def _signature(captured, *, with_lru_warnings: bool = True) -> Signature:
    warnings = captured.lru_cache_warnings if with_lru_warnings else ()
    return parse_message(captured.exception_type, captured.message, warnings)


@pytest.mark.parametrize("torch_version", TORCH_VERSIONS)
@pytest.mark.parametrize("mode", [MODE1, MODE3, MODE4], ids=lambda m: m.id)
def test_modes_1_3_4_reproduce_on_every_torch(captured_messages, mode, torch_version):
    """Modes 1, 3 and 4 match their known signature on every captured torch version."""
    captured = captured_messages[(torch_version, mode.id)]
    verdict, reason = classify(mode, _outcome(_signature(captured)))
    assert verdict is Verdict.REPRODUCED, reason
    assert reason.startswith(mode.known_signature)


@pytest.mark.parametrize("torch_version", ["2.9.1", "2.10.0", "2.15.0"])
def test_mode2_reproduces_from_torch_2_9(captured_messages, torch_version):
    """Mode 2 reproduces (failure inside flashinfer/jit/core.py) on torch 2.9.1 and later."""
    verdict, reason = classify(MODE2, _outcome(_signature(captured_messages[(torch_version, "mode2")])))
    assert verdict is Verdict.REPRODUCED
    assert reason.endswith("at flashinfer/jit/core.py:169:register")


def test_mode2_drifts_on_torch_2_8(captured_messages):
    """On torch 2.8.0 mode 2 is an InternalTorchDynamoError, not Unsupported: a drift."""
    verdict, reason = classify(MODE2, _outcome(_signature(captured_messages[("2.8.0", "mode2")])))
    assert verdict is Verdict.DRIFTED
    assert "InternalTorchDynamoError" in reason
    assert "not torch._dynamo.exc.Unsupported" in reason


@pytest.mark.parametrize("torch_version", TORCH_VERSIONS)
def test_mode3_without_lru_cache_warning_drifts(captured_messages, torch_version):
    """Mode 3's evidence is the lru_cache warning: the same failure without it is a drift."""
    captured = captured_messages[(torch_version, "mode3")]
    verdict, reason = classify(MODE3, _outcome(_signature(captured, with_lru_warnings=False)))
    assert verdict is Verdict.DRIFTED
    assert "lru_cache" in reason


@pytest.mark.parametrize("mode", list(MODES.values()), ids=list(MODES))
def test_traced_outcome_is_fixed(mode):
    """A clean trace is 'fixed' for every mode."""
    assert classify(mode, _outcome(None, traced=True))[0] is Verdict.FIXED


def test_neither_traced_nor_raised_is_a_kit_error():
    """An outcome with no trace and no signature is the kit's fault, not a statement about the bug."""
    assert classify(MODE1, _outcome(None))[0] is Verdict.ERROR


def test_mode1_elsewhere_drifts_naming_the_frame(captured_messages):
    """A failure whose innermost flashinfer frame moved is drifted, and the reason names that frame."""
    sig = _signature(captured_messages[("2.9.1", "mode1")])
    moved = Frame("flashinfer/jit/env.py", 42, "get_workspace_dir")
    elsewhere = dataclasses.replace(sig, innermost_library_frame=moved)
    verdict, reason = classify(MODE1, _outcome(elsewhere))
    assert verdict is Verdict.DRIFTED
    assert "flashinfer/jit/env.py:42:get_workspace_dir" in reason


def test_mode1_signature_is_a_drift_for_mode2(captured_messages):
    """If the get_cuda_version patch did not take effect, mode 2 says so instead of reproducing."""
    verdict, reason = classify(MODE2, _outcome(_signature(captured_messages[("2.9.1", "mode1")])))
    assert verdict is Verdict.DRIFTED
    assert "get_cuda_version" in reason


def test_mode4_with_another_message_drifts(captured_messages):
    """Mode 4 requires the message to name torch.compiler.disable."""
    verdict, reason = classify(MODE4, _outcome(_signature(captured_messages[("2.9.1", "mode1")])))
    assert verdict is Verdict.DRIFTED
    assert "torch.compiler.disable" in reason


def test_mode1_without_a_flashinfer_frame_drifts(captured_messages):
    """A mode-1 failure with no FlashInfer frame at all is a drift naming the missing frame, not a crash."""
    sig = dataclasses.replace(_signature(captured_messages[("2.9.1", "mode1")]), innermost_library_frame=None)
    verdict, reason = classify(MODE1, _outcome(sig))
    assert verdict is Verdict.DRIFTED
    assert reason.startswith("innermost FlashInfer frame is None")


def test_mode4_accepts_disable_named_only_in_the_explanation(captured_messages):
    """Mode 4 also reads dynamo's Explanation: line, so a head without the phrase still reproduces."""
    sig = _signature(captured_messages[("2.9.1", "mode4")])
    moved = dataclasses.replace(sig, message_head="Skip calling a disabled function",
                                explanation="Dynamo does not know how to trace torch.compiler.disable()d functions")
    assert classify(MODE4, _outcome(moved))[0] is Verdict.REPRODUCED


@pytest.mark.parametrize("moved", [Frame("flashinfer/jit/cpp_ext.py", 80, "build_and_load"),
                                   Frame("flashinfer/jit/env.py", 12, "get_cuda_version")], ids=str)
def test_mode1_needs_both_the_file_and_the_function(captured_messages, moved):
    """Mode 1 needs jit/cpp_ext.py AND get_cuda_version/get_cuda_path: the right file or name alone drifts."""
    sig = dataclasses.replace(_signature(captured_messages[("2.9.1", "mode1")]), innermost_library_frame=moved)
    assert classify(MODE1, _outcome(sig))[0] is Verdict.DRIFTED


def test_mode2_reproduces_in_build_and_load(captured_messages):
    """Mode 2 accepts any JIT-loader function other than get_cuda_version (seed 001: build_and_load)."""
    sig = _signature(captured_messages[("2.9.1", "mode2")])
    moved = dataclasses.replace(sig, innermost_library_frame=Frame("flashinfer/jit/cpp_ext.py", 80, "build_and_load"))
    assert classify(MODE2, _outcome(moved))[0] is Verdict.REPRODUCED


def test_mode_is_frozen():
    """A Mode is a declared judging rule: it cannot be edited at run time."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        MODE1.title = "edited"  # type: ignore[misc]


def test_mode1_verdict_names_the_frame_reached_get_cuda_path_without_cuda_home(captured_messages):
    """Without CUDA_HOME the trace dies in get_cuda_path (`which nvcc`): the verdict says so, never get_cuda_version."""
    sig = _signature(captured_messages[("2.9.1", "mode1")])
    at_path = dataclasses.replace(sig, innermost_library_frame=Frame("flashinfer/jit/cpp_ext.py", 49, "get_cuda_path"))
    verdict, reason = classify(MODE1, _outcome(at_path))
    assert verdict is Verdict.REPRODUCED and "get_cuda_path -> subprocess (which nvcc" in reason
    assert "get_cuda_version" not in reason
    assert "get_cuda_version -> subprocess (nvcc --version)" in classify(MODE1, _outcome(sig))[1]
