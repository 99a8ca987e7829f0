"""Classify what dynamo did with one entry point, and map it onto the kit's verdicts. Pure.

The classes (the issue's vocabulary), decided in this order:
  not-applicable        the installed release lacks the entry point
  needs-gpu             eager set-up the trace depends on (a wrapper's constructor or plan()) needs a
                        CUDA driver or a kernel on this host: not run here (the GPU target runs it)
  error                 the spec cannot build the inputs in this install, or the trace died on a
                        CUDA *runtime* call the simulation does not answer (no driver on this host):
                        "simulation gap", never a statement about the bug
  fake-reaches-kernel   the guard refused a kernel load from inside FakeTensor dispatch, or torch
                        says a FakeTensor reached an implementation that needs real storage
  breaks-in-jit-loader  dynamo failed inside a lazy JIT bootstrap: FlashInfer's own (flashinfer/jit/*,
                        a get_*_module / gen_*_module / build_and_load frame) or the CuTe-DSL one
                        (flashinfer/cute_dsl/*, a _get_compiled_kernel frame: compile-on-first-call
                        through cutlass.cute); `loader` says which, `where` names the frame
  breaks-elsewhere      dynamo failed anywhere else
  opaque-op             traced; the graph calls a registered custom op (flashinfer::..., trtllm::...)
  traces-through        traced; the graph holds only aten/prims/python ops (the entry point was inlined)
"""

from __future__ import annotations

import dataclasses
import re

from pcgkit.values.signature import Signature
from pcgkit.values.verdict import Verdict, Word


class SweepClass(Word):
    OPAQUE_OP = "opaque-op"
    TRACES_THROUGH = "traces-through"
    BREAKS_JIT_LOADER = "breaks-in-jit-loader"
    BREAKS_ELSEWHERE = "breaks-elsewhere"
    FAKE_REACHES_KERNEL = "fake-reaches-kernel"
    NEEDS_GPU = "needs-gpu"
    NOT_APPLICABLE = "not-applicable"
    ERROR = "error"

    @property
    def traced(self) -> bool:
        return self in (SweepClass.OPAQUE_OP, SweepClass.TRACES_THROUGH)


# Namespaces of ops that are part of torch itself: a graph of only these means "traced through".
TORCH_NAMESPACES = ("aten", "prims", "higher_order", "_operator", "operator", "builtins", "torch")
_LOADER_FUNCTION_RE = re.compile(r"^(?:get|gen)_\w*module\w*$|^build_and_load$|^load_cuda_ops$|^build$")
# The CuTe-DSL's lazy compile (0.6.x+: rmsnorm_fp4quant, 0.7.x: the norms' arch probe): the same
# pattern as the JIT loader -- plain Python that imports/initialises a compiler on first call.
_CUTE_DSL_FUNCTION_RE = re.compile(r"^_get_compiled_kernel$|^_dsl_captured_arch$|^cute_dsl_compile_arch$")
LOADER_FLASHINFER_JIT = "flashinfer-jit"
LOADER_CUTE_DSL = "cute-dsl"
_FAKE_MARKERS = (
    "Cannot access data pointer of Tensor that doesn't have storage",
    "UnsupportedOperatorException",
    "DataDependentOutputException",
    "no fake impl",
    "FakeTensor",
    "does not have a meta",
    "Meta kernel",
)


# A CPU host answering what only a CUDA runtime can (streams, driver, device tensors): the trace
# stopped because the simulation is incomplete there, not because of FlashInfer's code under dynamo.
SIMULATION_GAP_MARKERS = (
    "Found no NVIDIA driver",
    "Expected a cuda device",
    "CUDA driver version is insufficient",
    "Torch not compiled with CUDA",
    "No CUDA GPUs are available",
    # dynamo inlined triton's driver discovery (`driver.active` -> `<Backend>Driver.is_active`, skipped): with no GPU
    # driver the lazy driver is never initialized outside the trace (0.7.x SegmentGEMMWrapper's triton launch)
    "Driver.is_active",
)


@dataclasses.dataclass(frozen=True)
class Observation:
    """What the engine saw for one entry point on one arch (no interpretation yet)."""

    status: str  # "missing" | "build-error" | "traced" | "raised"
    reason: str = ""  # missing / build-error: why
    signature: Signature | None = None  # raised: dynamo's exception
    graph_ops: tuple[str, ...] = ()  # traced: "namespace::op" or "module.function" per call_function node
    refused: tuple[tuple[str, str, bool], ...] = ()  # guard refusals: (event, detail, in fake dispatch)


@dataclasses.dataclass(frozen=True)
class Classification:
    cls: SweepClass
    where: str  # frame / op / reason, one line
    custom_ops: tuple[str, ...] = ()
    loader: str = ""  # breaks-in-jit-loader: LOADER_FLASHINFER_JIT | LOADER_CUTE_DSL

    def to_dict(self) -> dict:
        """The JSON form every sweep result file uses (FlashInfer entry points and SGLang methods alike)."""
        return {"class": self.cls.value, "where": self.where, "custom_ops": list(self.custom_ops), "loader": self.loader}


def custom_ops(graph_ops: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({op for op in graph_ops if "::" in op and op.split("::", 1)[0] not in TORCH_NAMESPACES}))


def jit_loader_of(signature: Signature) -> str:
    """Which lazy JIT bootstrap the failure is inside ("" for none), innermost frame first. Pure."""
    for frame in reversed(signature.frame_chain):
        if frame.file.startswith("flashinfer/cute_dsl/") or (
            frame.file.startswith("flashinfer/") and _CUTE_DSL_FUNCTION_RE.match(frame.function)
        ):
            return LOADER_CUTE_DSL
        if frame.file.startswith("flashinfer/jit/") or (
            frame.file.startswith("flashinfer/") and _LOADER_FUNCTION_RE.match(frame.function)
        ):
            return LOADER_FLASHINFER_JIT
    return ""


def _where(signature: Signature) -> str:
    frame = signature.innermost_library_frame
    parts = [signature.graph_break_id or "", frame.short if frame else "", signature.skipped_callable or ""]
    return " ".join(p for p in parts if p) or signature.message_head[:120]


_CLASS_OF_UNTRACED = {"missing": SweepClass.NOT_APPLICABLE, "build-error": SweepClass.ERROR, "needs-gpu": SweepClass.NEEDS_GPU}


def classify(obs: Observation) -> Classification:
    if obs.status in _CLASS_OF_UNTRACED:
        return Classification(_CLASS_OF_UNTRACED[obs.status], obs.reason)
    fake_refusal = next(((e, d) for e, d, fake in obs.refused if fake), None)
    if fake_refusal:
        return Classification(SweepClass.FAKE_REACHES_KERNEL, f"guard refused {fake_refusal[0]} {fake_refusal[1]}")
    if obs.status == "traced":
        ops = custom_ops(obs.graph_ops)
        if ops:
            return Classification(SweepClass.OPAQUE_OP, ", ".join(ops), ops)
        return Classification(SweepClass.TRACES_THROUGH, f"{len(obs.graph_ops)} torch ops")
    signature = obs.signature
    if signature is None:
        return Classification(SweepClass.ERROR, obs.reason or "raised without a signature")
    text = " ".join(filter(None, (signature.message_head, signature.explanation)))
    if gap := next((m for m in SIMULATION_GAP_MARKERS if m in text), None):
        return Classification(SweepClass.ERROR, f"simulation gap ({gap}) at {_where(signature)}")
    if any(marker in text for marker in _FAKE_MARKERS):
        return Classification(SweepClass.FAKE_REACHES_KERNEL, _where(signature))
    if loader := jit_loader_of(signature):
        return Classification(SweepClass.BREAKS_JIT_LOADER, _where(signature), loader=loader)
    return Classification(SweepClass.BREAKS_ELSEWHERE, _where(signature))


# How a sweep class reads in the kit's verdict vocabulary. The sweep's "bug" is one family: an entry
# point a model's forward calls is not compile-ready under fullgraph=True because FlashInfer hands
# dynamo plain Python that bootstraps a kernel lazily. Its known shapes are the JIT loader (the
# kit's own mode 1/2, flashinfer #2733) and FakeTensors reaching a kernel (#1020): those are
# `reproduced`. Traced (as an opaque op or all the way through) is `fixed`: nothing to work around.
# A break anywhere else is `drifted` -- a failure, but not the family's known shape -- unless the
# entry's own public expectation for this release names exactly that (then `reproduced`).
# needs-gpu is `skipped` (the kit's word for missing hardware); error and not-applicable as named.
FAMILY_KNOWN_SHAPES = (SweepClass.BREAKS_JIT_LOADER, SweepClass.FAKE_REACHES_KERNEL)
VERDICT_OF_CLASS: dict[SweepClass, Verdict] = {
    SweepClass.OPAQUE_OP: Verdict.FIXED,
    SweepClass.TRACES_THROUGH: Verdict.FIXED,
    SweepClass.BREAKS_JIT_LOADER: Verdict.REPRODUCED,
    SweepClass.FAKE_REACHES_KERNEL: Verdict.REPRODUCED,
    SweepClass.BREAKS_ELSEWHERE: Verdict.DRIFTED,
    SweepClass.NEEDS_GPU: Verdict.SKIPPED,
    SweepClass.NOT_APPLICABLE: Verdict.NOT_APPLICABLE,
    SweepClass.ERROR: Verdict.ERROR,
}


def verdict_for(classification: Classification, expected_behaviour: str | None) -> Verdict:
    """The kit's verdict for a sweep class (table above); a public expectation can only turn a
    `breaks-elsewhere` drift into `reproduced` when it names that behaviour for this release. Pure."""
    verdict = VERDICT_OF_CLASS[classification.cls]
    # 'not-an-opaque-op' (a plain function, vLLM PR 51925) names any failure
    if verdict is Verdict.DRIFTED and expected_behaviour in ("not-an-opaque-op", classification.cls.value):
        return Verdict.REPRODUCED
    return verdict
