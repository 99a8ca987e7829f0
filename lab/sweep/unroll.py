"""Unroll a breaking callable's whole failure stack (the edge; the rules are lab.sweep.unroll_rules).

Trace; at a failure, read which FlashInfer functions were on the failing stack and with which
arguments (pcgkit.harness.pathrecord records what dynamo inlined), take the first candidate patch
that works, patch it in every FlashInfer module that binds it (pcgkit.util.patching), trace again.
A patch is a stand-in that returns what the real function returned when it was called for real,
outside the trace, with the same arguments: the traced code stays the real library code.

Simulated runs (CPU): inside the sweep's simulation and no-kernel guard. A query may run
`<toolchain> --version` (version_query, through pcgkit.sweep.guard.allowing); a pre-built loader's JIT build is
simulated: JitSpec.build_and_load returns an unbuilt module whose functions are tvm_ffi Functions
that refuse to run (the type the real build returns, so dynamo meets the same kind of object).
`real=True` (a GPU host): nothing simulated, no guard; the pre-build really builds.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable
from typing import Any

from lab.sweep.certificate_build import scrub
from lab.sweep.unroll_rules import (
    ANSWER_QUERY,
    MAX_ROUNDS,
    PRE_BUILD,
    STOP,
    Candidate,
    Site,
    StackCall,
    candidates,
)
from pcgkit.sweep.setupsim import simulated_build as _simulated_build

PLAIN_TYPES = (bool, int, float, str, bytes, type(None), tuple)
CAPPED = "unroll capped (the certificate's time budget; later sites not looked for) at"


class _PatchFailed(Exception):
    """The candidate could not be answered for real (it raised, or returned no plain value)."""


def failing_stack(recording) -> list[StackCall]:
    """FlashInfer functions dynamo was inside when the trace failed, innermost first."""
    return [StackCall(c.function, c.short_file, c.line, c.arguments)
            for c in recording.calls if not c.completed and c.short_file.startswith("flashinfer/")]


def function_object(call: StackCall) -> tuple[Any, Any]:
    """(the module-level function, the object to call for real): the cache wrapper's __wrapped__ is
    called so the real cache is never filled with a simulated answer."""
    module_name = call.file.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
    module = sys.modules.get(module_name) or importlib.import_module(module_name)
    for value in vars(module).values():
        code = getattr(getattr(value, "__wrapped__", value), "__code__", None)
        if code is not None and code.co_name == call.function and code.co_firstlineno == call.line:
            return value, getattr(value, "__wrapped__", value)
    raise _PatchFailed(f"{call.where} is not a module-level function (a method or a closure): cannot stand in for it")


def version_query(event: str, args: tuple) -> bool:
    """`<tool> --version` (a subprocess audit event): a question to the toolchain, not a kernel build."""
    argv = args[1] if event == "subprocess.Popen" and len(args) > 1 else None
    return isinstance(argv, (list, tuple)) and len(argv) == 2 and str(argv[1]) == "--version"


def answer_for_real(candidate: Candidate, real: bool) -> tuple[Any, Any, bool]:
    """(the function to replace, the value it returned for real, simulated?)."""
    from pcgkit.sweep.guard import allowing

    original, call_for_real = function_object(candidate.call)
    kwargs = dict(candidate.call.arguments)
    simulate = candidate.kind == PRE_BUILD and not real
    context: contextlib.AbstractContextManager = _simulated_build() if simulate else contextlib.nullcontext([])
    try:
        with allowing(version_query), context as stood_in:
            value = call_for_real(**kwargs)
        simulated = bool(stood_in)  # a CuTe-DSL compile may run on a CPU for real: then nothing was simulated
    except Exception as exc:  # the candidate cannot be answered here: say why, try the next one
        raise _PatchFailed(f"{candidate.call.where}({kwargs}) raised {type(exc).__name__}: {str(exc)[:120]}") from exc
    if candidate.kind == ANSWER_QUERY and not isinstance(value, PLAIN_TYPES) and type(value).__name__ != "Version":
        raise _PatchFailed(f"{candidate.call.where} returned a {type(value).__name__}, not a plain answer")
    return original, value, simulated


def _stand_in(value: Any) -> Callable:
    def answered(*args, **kwargs):
        return value

    return answered


def _site(index: int, signature, action: str, **fields) -> Site:
    frame = signature.innermost_library_frame if signature else None
    what = (signature.skipped_callable or signature.explanation or signature.message_head)[:160] if signature else "no signature"
    return Site(index, str(frame) if frame else "", signature.graph_break_id if signature else None, what, action, **fields)


def unroll(trace_once: Callable[[], Any], real: bool = False, max_rounds: int = MAX_ROUNDS) -> tuple[list[Site], Any]:
    """Trace with `trace_once()` (-> (TraceOutcome, recording)), patch, repeat (at most `max_rounds`
    traces). Returns the sites met, in order, and the last outcome."""
    from pcgkit.util.patching import patched_everywhere

    sites: list[Site] = []
    patched: set[str] = set()
    with contextlib.ExitStack() as patches:
        for index in range(1, max_rounds + 1):
            outcome, recording = trace_once()
            if outcome.traced:
                return sites, outcome
            if index == max_rounds < MAX_ROUNDS:
                sites.append(_site(index, outcome.signature, STOP, note=f"{CAPPED} {max_rounds} trace(s)"))
                return sites, outcome
            notes = []
            for candidate in candidates(failing_stack(recording), frozenset(patched)):
                try:
                    original, value, simulated = answer_for_real(candidate, real)
                except _PatchFailed as exc:
                    notes.append(str(exc))
                    continue
                patches.enter_context(patched_everywhere(original, _stand_in(value), "flashinfer"))
                patched.add(candidate.call.where)
                sites.append(_site(index, outcome.signature, candidate.kind, patched=candidate.call.where,
                                   answer=scrub(repr(value))[:160], simulated=simulated))
                break
            else:
                reason = "nothing on the failing stack the kit can answer or pre-build"
                sites.append(_site(index, outcome.signature, STOP, note="; ".join([reason, *notes])[:400]))
                return sites, outcome
        sites.append(_site(max_rounds + 1, None, STOP, note=f"gave up after {max_rounds} patches"))
        return sites, outcome


def unroll_spec(spec, arch: str, device, versions: tuple[str, str], real: bool = False, graphs: list | None = None,
                max_rounds: int = MAX_ROUNDS, fake_cuda: bool = False):
    """The whole stack of one spec's callable on one arch, as an Unrolled value (`graphs`: filled with
    the FX graphs of the last trace, for the registered ops it reached; `max_rounds` < MAX_ROUNDS:
    stop after that many traces, the value says the unroll was capped; `fake_cuda`: the inputs as
    FakeTensors on the simulated cuda:0, lab.sweep.fakecuda)."""
    from lab.sweep.unroll_rules import Unrolled
    from pcgkit.harness.pathrecord import record_inlined_calls
    from pcgkit.harness.simulate import simulated_sm120
    from pcgkit.harness.tracing import trace
    from pcgkit.sweep.classify import Observation, classify
    from pcgkit.sweep.engine import build_callable, graph_op_names, resolve
    from pcgkit.sweep.guard import no_kernels
    from pcgkit.sweep.inputs import build_call

    torch_device = "cuda:0" if real else "cpu"
    simulation = contextlib.nullcontext() if real else simulated_sm120(capability=device.capability)
    guard: contextlib.AbstractContextManager = contextlib.nullcontext([]) if real else no_kernels()
    with simulation, guard:
        fn, setup_simulated = build_callable(spec, resolve(spec.target), torch_device, simulate_setup=not real)
        args, kwargs = build_call(spec.call, torch_device)
        if fake_cuda and not real:
            from torch._subclasses.fake_tensor import FakeTensorMode

            from lab.sweep.fakecuda import on_fake_cuda

            mode = FakeTensorMode(allow_non_fake_inputs=True)
            args, kwargs = on_fake_cuda(args, mode), on_fake_cuda(kwargs, mode)
        names, count = tuple(kwargs), len(args)
        traced_fn = lambda *a: fn(*a[:count], **dict(zip(names, a[count:])))  # noqa: E731
        graphs = [] if graphs is None else graphs
        first: list = []

        def trace_once():
            graphs.clear()
            with record_inlined_calls() as recording:
                outcome = trace(traced_fn, args + tuple(kwargs.values()), fullgraph=True, execute=False, graphs=graphs)
            if not first:
                first.append(classify(Observation("traced", graph_ops=graph_op_names(graphs))) if outcome.traced
                             else classify(Observation("raised", signature=outcome.signature)))
            return outcome, recording

        sites, outcome = unroll(trace_once, real=real, max_rounds=max_rounds)
    if outcome.traced:
        final = classify(Observation("traced", graph_ops=graph_op_names(graphs)))
    else:
        final = classify(Observation("raised", signature=outcome.signature))
    label = f"real: {device.label}" if real else f"simulated {arch} (CPU; hardware queries answered)"
    capped = bool(sites) and sites[-1].note.startswith(CAPPED)
    return Unrolled(spec.target, arch, versions[0], versions[1], label, tuple(sites), outcome.traced,
                    final.cls.value, final.where, first[0].cls.value, first[0].loader, capped, setup_simulated)
