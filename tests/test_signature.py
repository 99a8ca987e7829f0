"""The signature parser against real dynamo messages captured from torch 2.8.0 to 2.15.0."""

from __future__ import annotations

from pathlib import Path

import pytest

from pcgkit.values.logread import parse_log
from pcgkit.values.signature import (
    Frame,
    Signature,
    innermost_library_frame,
    package_relative,
    parse_exception,
    parse_frame_str,
    parse_message,
)

CPP_EXT_GET_CUDA_VERSION = "flashinfer/jit/cpp_ext.py:69:get_cuda_version"
CORE_REGISTER = "flashinfer/jit/core.py:169:register"

# (torch, mode) -> (exception type, graph-break id, message head starts with, innermost flashinfer frame,
#                   skipped callable). Read off the fixture files themselves.
_UNSUPPORTED = "torch._dynamo.exc.Unsupported"
_SKIPPED = "Attempted to call function marked as skipped"
_DISABLE = "Skip calling `torch.compiler.disable()`d function"
EXPECTED = {
    ("2.8.0", "mode1"): (_UNSUPPORTED, None, _SKIPPED, CPP_EXT_GET_CUDA_VERSION, "_thread.allocate_lock"),
    ("2.8.0", "mode2"): (
        "torch._dynamo.exc.InternalTorchDynamoError",
        None,
        "AttributeError: 'UserDefinedExceptionObjectVariable' object has no attribute 'call_setattr'",
        "flashinfer/jit/cpp_ext.py:87:is_cuda_version_at_least",
        None,
    ),
    ("2.8.0", "mode3"): (_UNSUPPORTED, None, _SKIPPED, CPP_EXT_GET_CUDA_VERSION, "_thread.allocate_lock"),
    ("2.8.0", "mode4"): (_UNSUPPORTED, None, _DISABLE, None, None),
    **{
        (torch, mode): expected
        for torch in ("2.9.1", "2.10.0")
        for mode, expected in {
            "mode1": (_UNSUPPORTED, "gb0007", _SKIPPED, CPP_EXT_GET_CUDA_VERSION, "_thread.allocate_lock"),
            "mode2": (_UNSUPPORTED, "gb0007", _SKIPPED, CORE_REGISTER, "datetime.now"),
            "mode3": (_UNSUPPORTED, "gb0007", _SKIPPED, CPP_EXT_GET_CUDA_VERSION, "_thread.allocate_lock"),
            "mode4": (_UNSUPPORTED, "gb0098", _DISABLE, None, None),
        }.items()
    },
    ("2.15.0", "mode1"): (_UNSUPPORTED, "gb0007", _SKIPPED, CPP_EXT_GET_CUDA_VERSION, "_thread.allocate_lock"),
    ("2.15.0", "mode2"): (_UNSUPPORTED, "gb0156", "Unsupported method call", CORE_REGISTER, None),
    ("2.15.0", "mode3"): (_UNSUPPORTED, "gb0007", _SKIPPED, CPP_EXT_GET_CUDA_VERSION, "_thread.allocate_lock"),
    ("2.15.0", "mode4"): (_UNSUPPORTED, "gb0098", _DISABLE, None, None),
}


def _parse(captured) -> Signature:
    return parse_message(captured.exception_type, captured.message)


def test_every_fixture_has_an_expectation(captured_messages):
    """The expectation table covers exactly the captured files (a new capture needs a row)."""
    assert set(captured_messages) == set(EXPECTED)


def test_exception_type_and_graph_break_id(captured):
    """Exception type comes from the header; the gb id is parsed (None on torch 2.8, which prints none)."""
    exception_type, graph_break_id, *_ = EXPECTED[(captured.torch, captured.mode)]
    sig = _parse(captured)
    assert sig.exception_type == exception_type
    assert sig.graph_break_id == graph_break_id


def test_message_head(captured):
    """The message head is the first non-blank line of str(exc)."""
    head = EXPECTED[(captured.torch, captured.mode)][2]
    assert _parse(captured).message_head.startswith(head)


def test_innermost_flashinfer_frame(captured):
    """The innermost flashinfer frame of the 'from user code:' chain, package-relative."""
    inner = EXPECTED[(captured.torch, captured.mode)][3]
    sig = _parse(captured)
    assert (str(sig.innermost_library_frame) if sig.innermost_library_frame else None) == inner


def test_frame_chain_is_user_code_outermost_first(captured):
    """The frame chain is non-empty and starts at the user's function (cap.py:fn)."""
    sig = _parse(captured)
    assert sig.frame_chain
    assert sig.frame_chain[0].function == "fn"
    assert sig.frame_chain[0].file.endswith("cap.py")


def test_skipped_callable_where_printed(captured):
    """The builtin dynamo refused is named when the message's debug context prints it."""
    assert _parse(captured).skipped_callable == EXPECTED[(captured.torch, captured.mode)][4]


def test_mode1_chain_reaches_subprocess(captured_messages):
    """Mode 1's chain goes through subprocess.py below get_cuda_version (the nvcc call)."""
    sig = _parse(captured_messages[("2.9.1", "mode1")])
    assert [f.function for f in sig.frames_in("subprocess.py")] == ["check_output", "run", "__init__"]


def test_explanation_is_parsed():
    """The 'Explanation:' line is kept as evidence (mode 4 relies on it naming torch.compiler.disable)."""
    sig = parse_message(_UNSUPPORTED, "Skip calling x\n  Explanation: wrapped with `torch.compiler.disable`\n")
    assert sig.explanation == "wrapped with `torch.compiler.disable`"


def test_lru_cache_warnings_from_header_reach_the_signature(captured_messages):
    """Warnings passed alongside the message (three of them on torch 2.15.0) are kept, in order."""
    captured = captured_messages[("2.15.0", "mode3")]
    assert len(captured.lru_cache_warnings) == 3
    sig = parse_message(captured.exception_type, captured.message, captured.lru_cache_warnings)
    assert sig.lru_cache_warnings == captured.lru_cache_warnings
    assert all("functools.lru_cache" in w for w in sig.lru_cache_warnings)
    assert parse_message(captured.exception_type, captured.message).lru_cache_warnings == ()


def test_to_dict_from_dict_round_trip(captured):
    """A signature survives to_dict -> from_dict unchanged (it travels through JSON and JUnit)."""
    sig = parse_message(captured.exception_type, captured.message, captured.lru_cache_warnings)
    assert Signature.from_dict(sig.to_dict()) == sig


@pytest.mark.parametrize(
    ("path", "relative"),
    [
        ("/v/lib/python3.12/site-packages/flashinfer/jit/cpp_ext.py", "flashinfer/jit/cpp_ext.py"),
        ("/usr/lib/python3/dist-packages/torch/_dynamo/polyfills/__init__.py", "torch/_dynamo/polyfills/__init__.py"),
        ("/root/sglang/python/sglang/srt/managers/scheduler.py", "sglang/srt/managers/scheduler.py"),
        ("/src/flashinfer/flashinfer/jit/core.py", "flashinfer/jit/core.py"),
        ("/opt/python3.12/lib/python3.12/subprocess.py", "/opt/python3.12/lib/python3.12/subprocess.py"),
    ],
    ids=["site-packages", "dist-packages", "sglang-checkout", "flashinfer-checkout", "stdlib-unchanged"],
)
def test_package_relative(path, relative):
    """Paths inside an install or a checkout become package-relative; others stay as they are."""
    assert package_relative(path) == relative


def test_innermost_library_frame_ignores_torch_frames():
    """The innermost *flashinfer* frame is chosen even when torch/stdlib frames lie below it."""
    frames = (
        Frame("flashinfer/fp4_quantization.py", 123, "gen_fp4_quantization_module"),
        Frame("flashinfer/jit/cpp_ext.py", 69, "get_cuda_version"),
        Frame("torch/_dynamo/polyfills/__init__.py", 264, "getattr_and_trace"),
        Frame("/usr/lib/python3.12/subprocess.py", 466, "check_output"),
    )
    assert innermost_library_frame(frames) == frames[1]
    assert innermost_library_frame(frames[2:]) is None


# Seed 000 quotes the server log: the scheduler's traceback, then the dynamo exception.
SEED_000_LOG = """\
[2026-01-12 10:00:01] WARNING Dynamo detected a call to a `functools.lru_cache`-wrapped function. Dynamo ignores the cache wrapper and directly traces the wrapped function.
[2026-01-12 10:00:02] Scheduler hit an exception: Traceback (most recent call last):
  File "/root/sglang/python/sglang/srt/managers/scheduler.py", line 360, in __init__
    self.init_model_worker()
  File "/usr/lib/python3/dist-packages/torch/_dynamo/eval_frame.py", line 841, in compile_wrapper
    raise e.with_traceback(None) from e.__cause__  # User compiler error
torch._dynamo.exc.Unsupported: Attempted to call function marked as skipped
  Explanation: Dynamo does not know how to trace the builtin `_thread.allocate_lock.` This function is either a Python builtin (e.g. _warnings.warn) or a third-party C/C++ Python extension (perhaps created with pybind).

  Developer debug context: module: _thread, qualname: allocate_lock, skip reason: <missing reason>

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0007.html

from user code:
  File "/root/sglang/python/sglang/srt/layers/quantization/modelopt_quant.py", line 1021, in apply
    x_fp4, x_scale_interleaved = fp4_quantize(x, layer.input_scale_inv)
  File "/usr/local/lib/python3.12/dist-packages/flashinfer/fp4_quantization.py", line 123, in gen_fp4_quantization_module
    "-DENABLE_FP4" if is_cuda_version_at_least("12.8") else "",
  File "/usr/local/lib/python3.12/dist-packages/flashinfer/jit/cpp_ext.py", line 69, in get_cuda_version
    txt = subprocess.check_output([nvcc, "--version"], text=True)
  File "/usr/lib/python3.12/subprocess.py", line 466, in check_output
    return run(*popenargs, stdout=PIPE, timeout=timeout, check=True,

[2026-01-12 10:00:03] Received sigquit from a child process. It usually means the child failed.
"""


def test_parse_log_finds_the_dynamo_exception_of_seed_000():
    """parse_log turns seed 000's server log into the mode 1 signature, with its lru_cache warning."""
    sig = parse_log(SEED_000_LOG)
    assert sig is not None
    assert sig.exception_type == _UNSUPPORTED
    assert sig.message_head == _SKIPPED
    assert sig.graph_break_id == "gb0007"
    assert sig.skipped_callable == "_thread.allocate_lock"
    assert str(sig.innermost_library_frame) == CPP_EXT_GET_CUDA_VERSION
    assert sig.frame_chain[0].file == "sglang/srt/layers/quantization/modelopt_quant.py"
    assert len(sig.lru_cache_warnings) == 1


def test_parse_log_without_an_exception_is_none():
    """A log with no exception line yields no signature (not an empty one)."""
    assert parse_log("[2026-01-12] server started\nall good\n") is None


TRIAGE_LOGS = Path(__file__).resolve().parent / "data" / "triage_logs"


@pytest.mark.parametrize(("log", "exception_type"), [
    ("04_dgxarley_glm47_spark_posix_stat.log", "torch._dynamo.exc.Unsupported"),  # "Piecewise CUDA Graph failed"
    ("19_sglang1058_t4_no_kernel_image.log", "CUDA Error"),  # a native CUDA error line
])
def test_parse_log_reads_piecewise_and_native_failures(log, exception_type):
    """parse_log returns a signature for piecewise-error and native-error failures, not only for exceptions."""
    sig = parse_log((TRIAGE_LOGS / log).read_text())
    assert sig is not None
    assert sig.exception_type == exception_type


def test_parse_log_of_frames_without_an_exception_is_none():
    """A paste with frames but no exception line (triage log 01) has no signature."""
    assert parse_log((TRIAGE_LOGS / "01_sglang23386_dgxspark_nvcc_threading_lock.log").read_text()) is None


@pytest.mark.parametrize(("path", "relative"), [
    ("/tox/site-packages/x/.venv/lib/python3.12/site-packages/packaging/version.py", "packaging/version.py"),
    ("/usr/lib/python3/dist-packages/packaging/version.py", "packaging/version.py"),
])
def test_package_relative_cuts_at_the_innermost_install(path, relative):
    """Any installed package is cut at its (last) site-/dist-packages/, also inside a nested venv."""
    assert package_relative(path) == relative


def test_frame_short_and_signature_short_forms():
    """Frame.short is basename:line:function; Signature.short is gb-id + frame, else the head's first 80 chars."""
    frame = Frame("flashinfer/jit/cpp_ext.py", 69, "get_cuda_version")
    assert frame.short == "cpp_ext.py:69:get_cuda_version"
    with_gb = Signature(exception_type="E", message_head="m", graph_break_id="gb0007", innermost_library_frame=frame)
    assert with_gb.short() == "gb0007 cpp_ext.py:69:get_cuda_version"
    assert Signature(exception_type="E", message_head="x" * 100).short() == "x" * 80


def test_head_and_explanation_are_cut_at_200_and_300_characters():
    """A runaway head or Explanation: line is kept to 200 / 300 characters in the signature."""
    sig = parse_message(_UNSUPPORTED, f"{'h' * 250}\n  Explanation: {'y' * 400}\n")
    assert sig.message_head == "h" * 200
    assert sig.explanation == "y" * 300


@pytest.mark.parametrize("value", [Frame("a.py", 1, "f"), Signature(exception_type="E", message_head="m")], ids=repr)
def test_frame_and_signature_are_frozen(value):
    """Signatures are evidence: a parsed Frame or Signature cannot be edited afterwards."""
    import dataclasses

    field = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, "edited")


def test_parse_frame_str_keeps_colons_in_the_path():
    """file:line:function splits from the right, so a Windows path's drive colon stays in the file."""
    assert parse_frame_str("C:/src/flashinfer/jit/core.py:169:register") == Frame(
        "C:/src/flashinfer/jit/core.py", 169, "register")


def test_parse_exception_reads_frames_from_the_traceback():
    """A live exception without dynamo's real_stack gets its frames from its own traceback."""
    def _raising_helper():
        raise ValueError("boom")

    try:
        _raising_helper()
    except ValueError as exc:
        sig = parse_exception(exc)
    assert sig.exception_type == "builtins.ValueError"
    assert sig.frame_chain[-1].function == "_raising_helper"
