"""Fix modes: the inverted verdicts, the compiled-run check, and the allow_in_graph matcher."""

import pytest

from pcgkit.catalog import all_modes
from pcgkit.values.signature import Signature
from pcgkit.values.trace import TraceOutcome
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.fixmodes import FIX_ALLOW_IN_GRAPH, FIX_CUSTOM_OP, FIX_MODES, FIX_NO_FULLGRAPH, RunCheck
from pcgkit.verdicts.modes import MODES, classify


def _outcome(traced: bool, signature=None, output=None) -> TraceOutcome:
    return TraceOutcome(traced, traced, signature, (), 0, (), 0.1, output)


def _signature(exception_type: str, message: str) -> Signature:
    return Signature(exception_type=exception_type, message_head=message)


def test_fix_mode_ids_do_not_collide_with_failure_modes():
    """Fix modes are separate columns: no id is shared with pcgkit.verdicts.modes.MODES, all are in all_modes()."""
    from pcgkit.e2e.control import CONTROL_MODE
    from pcgkit.e2e.logclass import E2E_MODE
    from pcgkit.sglang.case import SGLANG_COMPILE_OTHER, SGLANG_COMPILE_SM120

    SGLANG_MODES = {SGLANG_COMPILE_SM120.id, SGLANG_COMPILE_OTHER.id}

    assert not set(FIX_MODES) & set(MODES)
    assert not set(SGLANG_MODES) & (set(MODES) | set(FIX_MODES))
    assert E2E_MODE.id not in set(MODES) | set(FIX_MODES) | set(SGLANG_MODES)
    assert set(all_modes()) == set(MODES) | set(FIX_MODES) | set(SGLANG_MODES) | {E2E_MODE.id, CONTROL_MODE.id}


RAN = RunCheck(compared=False, problem=None, ran="argument audit", numbers="numbers not checked: needs SM100+")


def test_clean_trace_whose_call_path_ran_is_fixed_with_the_modes_reason():
    """A clean trace whose call path ran is `fixed`; fix-no-fullgraph says it traced under fullgraph=False."""
    verdict, reason = classify(FIX_CUSTOM_OP, _outcome(True, output=RAN))
    assert verdict is Verdict.FIXED and "argument audit" in reason and "numbers not checked" in reason
    verdict, reason = classify(FIX_NO_FULLGRAPH, _outcome(True, output=RAN))
    assert verdict is Verdict.FIXED and "fullgraph=False" in reason


def test_a_fix_that_only_traced_is_never_fixed():
    """A fix case that traced but brought no run check, or one whose call path did not run, is a kit `error`."""
    assert classify(FIX_CUSTOM_OP, _outcome(True))[0] is Verdict.ERROR
    not_run = RunCheck(compared=False, problem=None)
    assert classify(FIX_CUSTOM_OP, _outcome(True, output=not_run))[0] is Verdict.ERROR


def test_a_run_failure_is_traces_but_fails_and_outranks_a_shape_problem():
    """A call path that fails when run is `traces-but-fails`, naming the failure."""
    failed = RunCheck(compared=False, problem="fake disagrees", ran="argument audit",
                      run_failure="enable_pdl reaches is_global_scale_inversed")
    verdict, reason = classify(FIX_CUSTOM_OP, _outcome(True, output=failed))
    assert verdict is Verdict.TRACES_BUT_FAILS and "is_global_scale_inversed" in reason


def test_compiled_run_disagreeing_with_eager_is_drifted():
    """A RunCheck with a problem turns a clean trace into `drifted`, naming the problem."""
    outcome = _outcome(True, output=RunCheck(compared=True, problem="compiled output is not bit-identical to eager"))
    verdict, reason = classify(FIX_CUSTOM_OP, outcome)
    assert verdict is Verdict.DRIFTED and "bit-identical" in reason


def test_uncompared_run_stays_fixed_and_says_why():
    """A RunCheck that could not compare (empty kernel) keeps `fixed` and carries its note."""
    outcome = _outcome(True, output=RunCheck(compared=False, problem=None, note="kernel empty below sm_100", ran="GPU"))
    verdict, reason = classify(FIX_CUSTOM_OP, outcome)
    assert verdict is Verdict.FIXED and "sm_100" in reason


def test_any_failure_of_a_working_fix_is_drifted():
    """A fix with no known failure reports every exception as `drifted`."""
    sig = _signature("torch._dynamo.exc.Unsupported", "something new")
    assert classify(FIX_CUSTOM_OP, _outcome(False, sig))[0] is Verdict.DRIFTED


@pytest.mark.parametrize(
    "exception_type, message, expected",
    [
        (
            "torch._dynamo.exc.TorchRuntimeError",
            "Dynamo failed to run FX node with fake tensors: call_function <functools._lru_cache_wrapper ...>",
            Verdict.REPRODUCED,
        ),
        ("torch._dynamo.exc.Unsupported", "torch.* op returned non-Tensor", Verdict.REPRODUCED),  # torch 2.11 gb0208
        ("torch._dynamo.exc.Unsupported", "unrelated builtin", Verdict.DRIFTED),
        ("RuntimeError", "get_fp4_quantization_module exploded", Verdict.DRIFTED),
    ],
)
def test_allow_in_graph_matcher(exception_type, message, expected):
    """allow_in_graph is `reproduced` only for a dynamo error at the loader node (or nvcc)."""
    assert classify(FIX_ALLOW_IN_GRAPH, _outcome(False, _signature(exception_type, message)))[0] is expected


def test_run_check_is_frozen():
    """RunCheck is evidence: once recorded it cannot be edited."""
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        RunCheck(compared=True, problem=None).problem = "edited"  # type: ignore[misc]


@pytest.mark.parametrize(("register", "expected"), [
    (lambda name, mutates_args: (lambda fn: fn), False),  # 0.6.1/0.7.4: `lambda x: x`, registers nothing
    (lambda name, mutates_args: (lambda fn: object()), True),  # returns a registered op, not the function
    (lambda name, mutates_args: (_ for _ in ()).throw(RuntimeError("bad schema")), True),  # real, but rejects
], ids=["identity", "wraps", "rejects"])
def test_flashinfer_registers_torch_ops_reads_the_identity(monkeypatch, register, expected):
    """Only a register_custom_op that hands back the function itself counts as 'does not register'."""
    import importlib.util
    import sys
    import types

    from pcgkit import resources

    spec = importlib.util.spec_from_file_location("pcgkit_case_fix_custom_op", resources.cases_dir() / "test_fix_custom_op.py")
    case = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(case)
    # a stand-in package: importing the real flashinfer costs seconds per mutant, and only this function is read
    utils = types.SimpleNamespace(register_custom_op=register)
    monkeypatch.setitem(sys.modules, "flashinfer", types.SimpleNamespace(utils=utils))
    monkeypatch.setitem(sys.modules, "flashinfer.utils", utils)
    assert case.flashinfer_registers_torch_ops() is expected


def test_allow_in_graph_reads_the_explanation_too():
    """The loader named only in dynamo's Explanation: line still counts as the known allow_in_graph failure."""
    sig = Signature(exception_type="torch._dynamo.exc.Unsupported", message_head="unsupported call",
                    explanation="call to get_fp4_quantization_module returned a module")
    assert classify(FIX_ALLOW_IN_GRAPH, _outcome(False, sig))[0] is Verdict.REPRODUCED


@pytest.mark.parametrize("mode", [FIX_CUSTOM_OP, FIX_ALLOW_IN_GRAPH], ids=lambda m: m.id)
def test_drift_reason_quotes_at_most_160_characters_of_the_head(mode):
    """A drift reason quotes the message head cut at 160 characters, so the reason stays one table line."""
    verdict, reason = classify(mode, _outcome(False, _signature("torch._dynamo.exc.Unsupported", "z" * 400)))
    assert verdict is Verdict.DRIFTED
    assert reason.endswith(": " + "z" * 160)


# Dynamo's own words, copied from the matrix run of 2026-12-01 (cells fi-0.6.3 / torch 2.9.1 and fi-0.5.0 /
# torch 2.8.0, simulated SM120; reports/samples/matrix-2026-12-01/compat.json, case fix-nonstrict-trace).
NONSTRICT_OUTPUT_REFUSED = Signature(
    exception_type="torch._dynamo.exc.Unsupported",
    message_head="Unsupported output type for nonstrict_trace-ed function",
    explanation="For `nonstrict_trace`-ed functions, only basic types (e.g., torch.Tensor, int, list) are allowed as "
                "output. The result of this call contains an unsupported type.",
    graph_break_id="gb0251",
)
NONSTRICT_FAKE_RUN_FAILED = Signature(
    exception_type="torch._dynamo.exc.TorchRuntimeError",
    message_head="Dynamo failed to run FX node with fake tensors: call_function flat_apply(*(TreeSpec(_ConstantFunction, "
                 "ConstantNode(value=_ConstantFunction(func=<function TorchInGraphFunctionVariable.call_function.<l",
)


def test_nonstrict_trace_refused_output_is_the_known_failure():
    """gb0251 (torch >= 2.9 refuses what the marked fp4_quantize returned) is `reproduced`: not a fix."""
    from pcgkit.verdicts.fixmodes import FIX_NONSTRICT_TRACE

    assert classify(FIX_NONSTRICT_TRACE, _outcome(False, NONSTRICT_OUTPUT_REFUSED))[0] is Verdict.REPRODUCED


def test_nonstrict_trace_other_failures_are_news_and_a_clean_trace_is_fixed():
    """torch 2.8's fake-tensor run failing inside FlashInfer is `drifted`; a clean fullgraph trace would be `fixed`."""
    from pcgkit.verdicts.fixmodes import FIX_NONSTRICT_TRACE

    assert classify(FIX_NONSTRICT_TRACE, _outcome(False, NONSTRICT_FAKE_RUN_FAILED))[0] is Verdict.DRIFTED
    assert classify(FIX_NONSTRICT_TRACE, _outcome(False, _signature("RuntimeError", "nonstrict_trace")))[0] is Verdict.DRIFTED
    assert classify(FIX_NONSTRICT_TRACE, _outcome(True, output=RAN))[0] is Verdict.FIXED


def test_junit_properties_say_what_fixed_rests_on():
    """A result with an argument audit and a numbers record carries both as flat JUnit properties."""
    from pcgkit.verdicts.result import CaseResult

    result = CaseResult("fix-upstream-op", "sim-sm120", Verdict.TRACES_BUT_FAILS, "r", {"label": "sim"}, {}, 0.1,
                        evidence={"argument_audit": {"passed": False, "findings": ["enable_pdl lands in x"]},
                                  "numbers": {"checked": False, "status": "not run: needs SM100+", "found": "no GPU"}})
    props = dict(result.junit_properties())
    assert props["pcgkit.verdict"] == "traces-but-fails"
    assert props["pcgkit.argument_audit"] == "enable_pdl lands in x"
    assert props["pcgkit.numbers"] == "not run: needs SM100+ (found no GPU)"
