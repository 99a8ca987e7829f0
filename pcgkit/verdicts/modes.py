"""The failure modes as data, and the pure rule that turns a trace outcome into a verdict.

A mode's *known signature* is what the seed documents saw. A failure that matches it is
`reproduced`; any other failure is `drifted` (the bug changed shape: worth a look upstream).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from pcgkit.values.runcheck import NOT_RUN_TRACE_ONLY, TRACED_CLEANLY, RunCheck, judge_run
from pcgkit.values.signature import Signature
from pcgkit.values.trace import TraceOutcome
from pcgkit.values.verdict import Verdict

# Why the signature does not match the mode's known one; None when it matches.
Matcher = Callable[[Signature], "str | None"]


@dataclasses.dataclass(frozen=True)
class Mode:
    id: str
    title: str
    known_signature: str  # human wording of what `matches` checks
    seed: str  # where the seed documents describe it
    matches: Matcher = dataclasses.field(repr=False, compare=False)
    # The reproduced verdict's wording for the frame actually reached; None: the known signature as is.
    wording: Callable[[Signature], str] | None = dataclasses.field(default=None, repr=False, compare=False)

    def reproduced_text(self, sig: Signature) -> str:
        """What a matching failure is called, after the frame it reached (never a frame it did not reach)."""
        return self.wording(sig) if self.wording is not None else self.known_signature

    def judge_traced(self, outcome: TraceOutcome) -> tuple[Verdict, str]:
        """Verdict for a trace that succeeded: the run check when the case made one (pcgkit.values.runcheck);
        a case that only traces says so in the reason. Fix modes (pcgkit.verdicts.fixmodes) require the check."""
        if isinstance(outcome.output, RunCheck):
            return judge_run(outcome.output, TRACED_CLEANLY)
        return Verdict.FIXED, f"{TRACED_CLEANLY}; {NOT_RUN_TRACE_ONLY}"


# The modes' words as data, declared once (the Python beside each mode holds only its matcher): id -> (title,
# known signature, where the seed documents describe it); the fix modes' are FIX_WORDS (pcgkit.verdicts.fixmodes).
# compat.md, the dashboard, the issue drafts and the standalone repro scripts (cut verbatim from here) quote them.
MODE_WORDS: dict[str, tuple[str, str, str]] = {
    "mode1": ("nvcc subprocess", "Unsupported in jit/cpp_ext.py:get_cuda_version -> subprocess (nvcc --version)", "seeds 000/004: 'Attempted to call function marked as skipped ... _thread.allocate_lock'"),
    "mode2": ("get_cuda_version patched: failure moves into the JIT loader", "Unsupported deeper in flashinfer/jit/* (seed: pathlib stat in build_and_load)", "seeds 001/004: patched get_cuda_version, then a crash in pathlib during JIT loading"),
    "mode3": ("warm functools.cache is traced through", "lru_cache warning + the nvcc subprocess failure despite a warm cache", "seed 004: 'Dynamo ignores the cache wrapper and directly traces the wrapped function'"),
    "mode4": ("torch.compiler.disable rejected under fullgraph=True", "Unsupported: Skip calling `torch.compiler.disable()`d function", "seed 001: 'Skip calling torch.compiler.disable()d function'"),
    "e2e-piecewise-launch": ("SGLang server, piecewise CUDA graphs on, tiny NVFP4 checkpoint", "Unsupported in jit/cpp_ext.py:get_cuda_version -> subprocess (nvcc --version)", "seeds 000/001: the server crashed during piecewise CUDA graph capture (GLM-5-NVFP4, RTX PRO 6000)"),
    "e2e-piecewise-control": ("SGLang server, piecewise CUDA graphs on, tiny bf16 checkpoint (the control: no FP4 path)", "none: healthy capture, one /generate answered, process group gone", "issue 13: separates 'piecewise broken here at all' from 'FP4 quantize breaks it'"),
    "preflight-launch": ("the team's SGLang launch (pcgkit matrix --preflight): would piecewise capture crash?", "dynamo Unsupported in what the launch compiles under fullgraph (the failure mode in the evidence)", "issue 30: preflight a launch against every SGLang release before upgrading"),
}


def is_dynamo_exception(sig: Signature) -> str | None:
    # Unsupported (and its subclasses) is dynamo refusing the code; an InternalTorchDynamoError
    # (torch 2.8 mis-tracing packaging.Version in mode 2) is a different bug: a drift.
    if not sig.exception_type.startswith("torch._dynamo.exc.") or "Unsupported" not in sig.exception_type:
        return f"raised {sig.exception_type}, not torch._dynamo.exc.Unsupported"
    return None


def fails_in_nvcc_subprocess(sig: Signature) -> str | None:
    if (why := is_dynamo_exception(sig)) is not None:
        return why
    inner = sig.innermost_library_frame
    # get_cuda_path shells out to `which nvcc` first when CUDA_HOME is unset: same mechanism.
    nvcc_callers = ("get_cuda_version", "get_cuda_path")
    if inner is None or not inner.file.endswith("jit/cpp_ext.py") or inner.function not in nvcc_callers:
        return f"innermost FlashInfer frame is {inner}, not jit/cpp_ext.py:get_cuda_version"
    if not sig.frames_in("subprocess.py"):
        return "no subprocess frame under get_cuda_version"
    return None


def _fails_deeper_in_jit_loading(sig: Signature) -> str | None:
    if (why := is_dynamo_exception(sig)) is not None:
        return why
    inner = sig.innermost_library_frame
    if inner is None:
        return "no FlashInfer frame in the failure"
    if inner.function == "get_cuda_version":
        return "still fails in get_cuda_version: the workaround did not take effect"
    if not inner.file.startswith("flashinfer/jit/"):
        return f"innermost FlashInfer frame {inner} is outside the JIT loader (flashinfer/jit/)"
    return None


def _nvcc_subprocess_wording(sig: Signature) -> str:
    """Mode 1's wording for the frame reached: with CUDA_HOME set FlashInfer runs `nvcc --version` in
    get_cuda_version; without it, get_cuda_path runs `which nvcc` first and the trace dies there (no nvcc
    is needed to reproduce: dynamo fails before any process starts)."""
    inner = sig.innermost_library_frame
    if inner is not None and inner.function == "get_cuda_path":
        return "Unsupported in jit/cpp_ext.py:get_cuda_path -> subprocess (which nvcc; CUDA_HOME unset)"
    return "Unsupported in jit/cpp_ext.py:get_cuda_version -> subprocess (nvcc --version)"


def _lru_cache_traced_through(sig: Signature) -> str | None:
    if not sig.lru_cache_warnings:
        return "dynamo printed no lru_cache warning"
    return fails_in_nvcc_subprocess(sig)


def _disable_rejected_under_fullgraph(sig: Signature) -> str | None:
    if (why := is_dynamo_exception(sig)) is not None:
        return why
    text = f"{sig.message_head} {sig.explanation or ''}"
    if "torch.compiler.disable" not in text:
        return f"message does not name torch.compiler.disable: {sig.message_head!r}"
    return None


MODE1 = Mode("mode1", *MODE_WORDS["mode1"], matches=fails_in_nvcc_subprocess, wording=_nvcc_subprocess_wording)
MODE2 = Mode("mode2", *MODE_WORDS["mode2"], matches=_fails_deeper_in_jit_loading)
MODE3 = Mode("mode3", *MODE_WORDS["mode3"], matches=_lru_cache_traced_through)
MODE4 = Mode("mode4", *MODE_WORDS["mode4"], matches=_disable_rejected_under_fullgraph)

MODES: dict[str, Mode] = {m.id: m for m in (MODE1, MODE2, MODE3, MODE4)}


def classify(mode: Mode, outcome: TraceOutcome) -> tuple[Verdict, str]:
    """Verdict and a one-line reason for a completed trace. Pure."""
    if outcome.traced:
        return mode.judge_traced(outcome)
    if outcome.signature is None:
        return Verdict.ERROR, "trace neither succeeded nor raised (kit bug)"
    mismatch = mode.matches(outcome.signature)
    if mismatch is None:
        where = outcome.signature.innermost_library_frame
        return Verdict.REPRODUCED, mode.reproduced_text(outcome.signature) + (f"; at {where}" if where else "")
    return Verdict.DRIFTED, mismatch
