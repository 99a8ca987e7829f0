"""The failure modes as data, and the pure rule that turns a trace outcome into a verdict.

A mode's *known signature* is what the seed documents saw. A failure that matches it is
`reproduced`; any other failure is `drifted` (the bug changed shape: worth a look upstream).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

from pcgkit import resources
from pcgkit.util.tomlfile import tomllib
from pcgkit.values.runcheck import NOT_RUN_TRACE_ONLY, TRACED_CLEANLY, RunCheck, judge_run
from pcgkit.values.signature import Signature
from pcgkit.values.trace import TraceOutcome
from pcgkit.values.verdict import Verdict

# Why the signature does not match the mode's known one; None when it matches.
Matcher = Callable[[Signature], "str | None"]


MODES_FILE = "modes.toml"


@dataclasses.dataclass(frozen=True)
class Mode:
    id: str
    slug: str
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


@functools.cache
def _mode_words() -> dict[str, Any]:
    return tomllib.loads(resources.fixture(MODES_FILE).read_text())


def mode_words(mode_id: str) -> dict[str, Any]:
    """A mode's id and words (slug, title, known_signature, seed; a fix mode's fixed_reason), from
    fixtures/modes.toml: every mode's words are declared there, the Python beside them holds the matchers."""
    return {"id": mode_id, "slug": mode_id, **_mode_words()[mode_id]}


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
    if inner is None or not inner.file.endswith("jit/cpp_ext.py") or inner.function not in (
        "get_cuda_version",
        "get_cuda_path",
    ):
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


MODE1 = Mode(**mode_words("mode1"), matches=fails_in_nvcc_subprocess, wording=_nvcc_subprocess_wording)
MODE2 = Mode(**mode_words("mode2"), matches=_fails_deeper_in_jit_loading)
MODE3 = Mode(**mode_words("mode3"), matches=_lru_cache_traced_through)
MODE4 = Mode(**mode_words("mode4"), matches=_disable_rejected_under_fullgraph)

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
