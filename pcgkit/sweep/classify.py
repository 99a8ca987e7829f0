"""Classify what dynamo did with one entry point, and map it onto the kit's verdicts. Pure.

The classes (the issue's vocabulary), decided in this order:
  not-applicable        the installed release lacks the entry point
  error                 the spec cannot build the inputs (or the wrapper state) in this install, or
                        the trace died on a CUDA *runtime* call the simulation does not answer (no
                        driver on this host): "simulation gap", never a statement about the bug
  fake-reaches-kernel   the guard refused a kernel load from inside FakeTensor dispatch, or torch
                        says a FakeTensor reached an implementation that needs real storage
  breaks-in-jit-loader  dynamo failed inside FlashInfer's JIT bootstrap (flashinfer/jit/*, a
                        get_*_module / gen_*_module / build_and_load frame): `where` names the frame
  breaks-elsewhere      dynamo failed anywhere else
  opaque-op             traced; the graph calls a registered custom op (flashinfer::..., trtllm::...)
  traces-through        traced; the graph holds only aten/prims/python ops (the entry point was inlined)
"""

from __future__ import annotations

import dataclasses
import enum
import re

from pcgkit.harness.signature import Signature
from pcgkit.verdicts.verdict import Verdict


class SweepClass(str, enum.Enum):
    OPAQUE_OP = "opaque-op"
    TRACES_THROUGH = "traces-through"
    BREAKS_JIT_LOADER = "breaks-in-jit-loader"
    BREAKS_ELSEWHERE = "breaks-elsewhere"
    FAKE_REACHES_KERNEL = "fake-reaches-kernel"
    NOT_APPLICABLE = "not-applicable"
    ERROR = "error"

    def __str__(self) -> str:
        return self.value

    @property
    def traced(self) -> bool:
        return self in (SweepClass.OPAQUE_OP, SweepClass.TRACES_THROUGH)


# Namespaces of ops that are part of torch itself: a graph of only these means "traced through".
TORCH_NAMESPACES = ("aten", "prims", "higher_order", "_operator", "operator", "builtins", "torch")
_LOADER_FUNCTION_RE = re.compile(r"^(?:get|gen)_\w*module\w*$|^build_and_load$|^load_cuda_ops$|^build$")
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
_SIMULATION_GAP_MARKERS = (
    "Found no NVIDIA driver",
    "Expected a cuda device",
    "CUDA driver version is insufficient",
    "Torch not compiled with CUDA",
    "No CUDA GPUs are available",
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


def custom_ops(graph_ops: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({op for op in graph_ops if "::" in op and op.split("::", 1)[0] not in TORCH_NAMESPACES}))


def in_jit_loader(signature: Signature) -> bool:
    for frame in signature.frame_chain:
        if frame.file.startswith("flashinfer/jit/"):
            return True
        if frame.file.startswith("flashinfer/") and _LOADER_FUNCTION_RE.match(frame.function):
            return True
    return False


def _where(signature: Signature) -> str:
    frame = signature.innermost_library_frame
    parts = [signature.graph_break_id or "", frame.short if frame else "", signature.skipped_callable or ""]
    return " ".join(p for p in parts if p) or signature.message_head[:120]


def classify(obs: Observation) -> Classification:
    if obs.status == "missing":
        return Classification(SweepClass.NOT_APPLICABLE, obs.reason)
    if obs.status == "build-error":
        return Classification(SweepClass.ERROR, obs.reason)
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
    if gap := next((m for m in _SIMULATION_GAP_MARKERS if m in text), None):
        return Classification(SweepClass.ERROR, f"simulation gap ({gap}) at {_where(signature)}")
    if any(marker in text for marker in _FAKE_MARKERS):
        return Classification(SweepClass.FAKE_REACHES_KERNEL, _where(signature))
    if in_jit_loader(signature):
        return Classification(SweepClass.BREAKS_JIT_LOADER, _where(signature))
    return Classification(SweepClass.BREAKS_ELSEWHERE, _where(signature))


def verdict_for(classification: Classification, expected_behaviour: str | None) -> Verdict:
    """The kit's verdict: traced -> fixed; a failure that matches the public expectation -> reproduced;
    any other failure -> drifted; no entry point -> not-applicable; a spec that cannot build -> error."""
    cls = classification.cls
    if cls is SweepClass.NOT_APPLICABLE:
        return Verdict.NOT_APPLICABLE
    if cls is SweepClass.ERROR:
        return Verdict.ERROR
    if cls.traced:
        return Verdict.FIXED
    return Verdict.REPRODUCED if expected_behaviour == cls.value else Verdict.DRIFTED
