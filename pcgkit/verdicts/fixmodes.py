"""The candidate fixes as data: the same Mode shape as pcgkit.verdicts.modes, with the verdict inverted.

For a failure mode, `reproduced` is the expected news. For a fix mode, the expected verdict of a
working fix is `fixed`: it traces under fullgraph=True AND its call path ran with the caller's arguments
(the argument audit of pcgkit.fp4.argaudit on any machine; the real kernel on a GPU, whose numbers are
checked where the kernel computes something, or the evidence says they were not). `reproduced` means the
attempted fix fails the way it is known to fail (allow_in_graph); `drifted` means it fails in a new way or
its fake describes other shapes than the op returns; `traces-but-fails` means it traces and then its call
path fails when run: raises, misbinds an argument, or computes numbers the reference rejects.

Every fix case puts a RunCheck into TraceOutcome.output after a clean trace; `judge_traced` (called by
pcgkit.verdicts.modes.classify for every mode) reads it. A fix case without one is a kit error, never `fixed`.
"""

from __future__ import annotations

import dataclasses

from pcgkit.values.runcheck import RunCheck, judge_run
from pcgkit.values.signature import Signature
from pcgkit.values.trace import TraceOutcome
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.modes import Mode, fails_in_nvcc_subprocess


@dataclasses.dataclass(frozen=True)
class FixMode(Mode):
    fixed_reason: str = "traced cleanly under fullgraph=True"

    def judge_traced(self, outcome: TraceOutcome) -> tuple[Verdict, str]:
        """Verdict for a trace that succeeded: `fixed` only when the call path ran (see the module docstring)."""
        if not isinstance(outcome.output, RunCheck):
            return Verdict.ERROR, "kit: the fix case traced but did not say whether its call path runs (no RunCheck)"
        return judge_run(outcome.output, self.fixed_reason)


# The fix modes' words as data (the modes' are MODE_WORDS): id -> (title, known signature, seed).
FIX_WORDS: dict[str, tuple[str, str, str]] = {
    "fix-custom-op": ("fix: fp4_quantize behind torch.library.custom_op + register_fake", "traces under fullgraph=True; its call path passes the argument audit; compiled == eager, within the reference, on SM100+", "FACTS.md: 'A torch.library.custom_op wrapper around fp4_quantize ... traces ... and runs'"),
    "fix-allow-in-graph": ("attempted fix: torch.compiler.allow_in_graph(get_fp4_quantization_module)", "dynamo error at the loader node (run at trace time by fake-tensor propagation) or nvcc: not a fix", "seed investigation: allow_in_graph on the loader was tried"),
    "fix-no-fullgraph": ("fix: torch.compiler.disable(fp4_quantize) with fullgraph=False (one graph break)", "traces with graph breaks at the disabled call; runs on a GPU", "seed 001: disable works once fullgraph=False allows the break"),
    "fix-upstream-op": ("upstream fix: FlashInfer's own torch.ops.flashinfer.fp4_quantize (custom op + fake, from 0.6.12)", "traces under fullgraph=True where FlashInfer registers the op; its fake matches the wrapper; its body forwards each argument to its namesake (argument audit)", "found in flashinfer 0.6.12+ quantization/fp4_quantization.py: @torch.library.custom_op('flashinfer::fp4_quantize')"),
    "fix-nonstrict-trace": ("attempted fix: torch.compiler.nonstrict_trace(fp4_quantize) under fullgraph=True", "dynamo refuses the marked call's output (gb0251 'Unsupported output type for nonstrict_trace-ed function'): not a fix; a clean fullgraph trace would be `fixed`", "PyTorch's dynamo hint recommends torch.compiler.nonstrict_trace for extension code (FACTS.md, 2026-12-01)"),
}


def _no_known_failure(sig: Signature) -> str | None:
    # A fix that is supposed to work has no known failure: any exception is news.
    return f"the fix failed: {sig.exception_type}: {sig.message_head[:160]}"


def _allow_in_graph_still_traces_loader(sig: Signature) -> str | None:
    # allow_in_graph(get_fp4_quantization_module) puts the *loader call* into the FX graph, and
    # dynamo runs allowed callables during fake-tensor propagation: the loader (JIT build, nvcc)
    # then runs at trace time, and what it returns is a namespace of Python functions, not
    # tensors. Any dynamo error about that loader node, or the nvcc failure itself, is "known".
    if fails_in_nvcc_subprocess(sig) is None:
        return None
    if not sig.exception_type.startswith("torch._dynamo.exc."):
        return f"raised {sig.exception_type}, not a dynamo exception"
    text = f"{sig.message_head} {sig.explanation or ''}"
    if any(name in text for name in ("get_fp4_quantization_module", "lru_cache_wrapper", "allow_in_graph")):
        return None
    # torch 2.11 (gb0208) says it without naming the loader: the allowed call returned a module
    # namespace, "torch.* op returned non-Tensor", raised at the line that calls the loader
    # (seen on an H200 and simulated alike, flashinfer 0.6.1 and 0.7.0).
    if "returned non-Tensor" in text:
        return None
    return f"a dynamo error that does not name the loader: {sig.message_head[:160]}"


FIX_CUSTOM_OP = FixMode("fix-custom-op", *FIX_WORDS["fix-custom-op"], matches=_no_known_failure)
FIX_ALLOW_IN_GRAPH = FixMode("fix-allow-in-graph", *FIX_WORDS["fix-allow-in-graph"], matches=_allow_in_graph_still_traces_loader)
FIX_NO_FULLGRAPH = FixMode("fix-no-fullgraph", *FIX_WORDS["fix-no-fullgraph"], matches=_no_known_failure,
                           fixed_reason="traced under fullgraph=False (graph breaks counted in evidence)")
FIX_UPSTREAM_OP = FixMode("fix-upstream-op", *FIX_WORDS["fix-upstream-op"], matches=_no_known_failure)


def _nonstrict_output_rejected(sig: Signature) -> str | None:
    # Measured 2026-12-01 (torch 2.9.1 + flashinfer 0.6.1, simulated SM120): dynamo accepts the
    # marker, runs the body non-strictly, then refuses what it returned: "Unsupported output type for
    # nonstrict_trace-ed function" (gb0251). That is the known way this attempt fails; any other
    # failure (the nvcc subprocess reached at trace time, a new graph break) is news.
    if not sig.exception_type.startswith("torch._dynamo.exc."):
        return f"raised {sig.exception_type}, not a dynamo exception"
    if "nonstrict_trace" not in f"{sig.message_head} {sig.explanation or ''}":
        return f"a dynamo error that does not concern nonstrict_trace: {sig.message_head[:160]}"
    return None


FIX_NONSTRICT_TRACE = FixMode("fix-nonstrict-trace", *FIX_WORDS["fix-nonstrict-trace"], matches=_nonstrict_output_rejected)

FIX_MODES: dict[str, FixMode] = {
    m.id: m for m in (FIX_CUSTOM_OP, FIX_ALLOW_IN_GRAPH, FIX_NO_FULLGRAPH, FIX_UPSTREAM_OP, FIX_NONSTRICT_TRACE)
}

