"""From a LogReading (pcgkit.values.signature.read_log) to a Diagnosis. Pure: no I/O.

The rule that matters most: `known-bug` only when the log itself shows this bug: dynamo (an
Unsupported, its frames or its wording) AND FlashInfer's FP4 quantize path (an fp4 frame, FP4 in
the failing source lines, or `fp4_quantize` named in dynamo's message) AND the failure sitting in
the lazy JIT loader, in `torch.compiler.disable`'s rejection, or in allow_in_graph's fake-tensor
run (pcgkit.triage.family reads each from whatever the paste kept). The same mechanism in another op
or library is `related`; anything else is `other-failure` with its own type and head. The earliest
failure in the log is the one judged. WHICH mode is not decided here: the catalog's own rules
(each Mode's `matches`) judge the failure, handed down by the command as values.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Protocol, Sequence

from pcgkit.triage.family import FamilyEvidence, family_evidence
from pcgkit.triage.steps import FlashInferSource, place
from pcgkit.values.logread import CaptureEvent, LogFailure, LogLine, LogReading
from pcgkit.values.signature import Frame, Signature, innermost_library_frame
from pcgkit.values.verdict import Word


class Kind(Word):
    KNOWN_BUG = "known-bug"
    RELATED = "related"
    OTHER_FAILURE = "other-failure"
    NO_FAILURE = "no-failure"


class Piecewise(Word):
    CAPTURED = "captured"
    FAILED = "failed"
    NOT_EXERCISED = "not-exercised"
    UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True)
class Evidence:
    line: int
    text: str
    why: str


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    kind: Kind
    mode: str | None  # the id of the catalog mode whose rule accepts the failure (known-bug only)
    piecewise: Piecewise
    confidence: str  # high | medium | low
    summary: str
    piecewise_reason: str
    evidence: tuple[Evidence, ...]
    missing: tuple[str, ...]
    signature: Signature | None = None
    survived: tuple[str, ...] = ()  # the signs of the family that the paste kept (they set the confidence)
    log_advice: tuple[str, ...] = ()  # what the log's own message advises (SGLang's hint, in its release's spelling)
    inferred: tuple[str, ...] = ()  # what FlashInfer's own source supplied to a hand-written path (pcgkit.triage.steps)
    also: tuple[str, ...] = ()  # other catalog modes whose rule accepts the same text
    flashinfer_calls: tuple[str, ...] = ()  # the FlashInfer functions the failure passed through, outermost first
    compile_safety: str = ""  # related: the certificate's word on the failing FlashInfer call (pcgkit.advice.compile_unsafe)

    def to_dict(self) -> dict:
        return {
            "diagnosis": str(self.kind),
            "mode": self.mode,
            "piecewise": str(self.piecewise),
            "piecewise_reason": self.piecewise_reason,
            "confidence": self.confidence,
            "summary": self.summary,
            "evidence": [dataclasses.asdict(e) for e in self.evidence],
            "missing": list(self.missing),
            "survived": list(self.survived),
            "log_advice": list(self.log_advice),
            "inferred": list(self.inferred),
            "also_consistent_with": list(self.also),
            "flashinfer_calls": list(self.flashinfer_calls),
            "compile_safety": self.compile_safety,
            "signature": self.signature.to_dict() if self.signature else None,
        }


class MatchableMode(Protocol):
    """A catalog mode as triage sees it: its id and the rule that judges a signature (None: it matches).
    The command handler passes the catalog's modes down as values (pcgkit.verdicts.modes.Mode is one)."""

    @property
    def id(self) -> str: ...

    def matches(self, signature: Signature) -> str | None: ...


_DYNAMO_WORDS = re.compile(r"Attempted to call function marked as skipped|Skip calling `torch\.compiler\.disable|"
                           r"graph break|from user code:|FAILED INLINING|Dynamo", re.I)
_DISABLE = "Skip calling `torch.compiler.disable()`d function"
# What dynamo cannot trace inside a lazy JIT loader: process spawning, locks, file system, clocks.
_MECHANISM = re.compile(r"_thread\.allocate_lock|threading\.Lock|subprocess|Popen|posix\.stat|os\.stat|pathlib|"
                        r"datetime\.now|posix\.getcwd|SimpleNamespace|FakeTensor")
_OOM = re.compile(r"out of memory|OutOfMemoryError", re.I)
_NO_KERNEL = re.compile(r"no kernel image|ptxas fatal|not defined for option 'gpu-name'", re.I)
_HARDWARE = re.compile(r"not supported for the current GPU|Minimum capability|not supported in this architecture|"
                       r"not supported on sm_?\d+", re.I)
_FAKE = re.compile(r"fake (?:impl|kernel|tensor)|register_fake|Meta tensors?|FakeTensor", re.I)
_LIBRARY_ERROR = re.compile(r"cuDNN|CUDNN|cudnn|NCCL|nccl|cuBLAS|CUBLAS|cublas")
_CUDA_ERROR = re.compile(r"CUDA error|illegal memory access|illegal instruction|device-side assert", re.I)
_NO_NVCC = re.compile(r"No such file or directory: '[^']*nvcc'|nvcc: (?:command )?not found|which nvcc")
_DECODE_CAPTURE_OR_LOAD = re.compile(r"CudaGraphRunner|Capture cuda graph failed|load_model|_get_quantization_config")
# SGLang's piecewise runner and its compile wrapper: a failure inside them is a failed piecewise capture.
_PIECEWISE_RUNNER = re.compile(r"piecewise_cuda_graph_runner|PiecewiseCudaGraphRunner|warmup_compile|piecewise_context_manager")


def _message_text(failure: LogFailure) -> str:
    sig = failure.signature
    return " ".join(x for x in (failure.head, sig.message_head, sig.explanation or "", sig.skipped_callable or "") if x)


def _frames(failure: LogFailure, reading: LogReading) -> tuple[Frame, ...]:
    """The failure's frames; where the paste kept none in traceback form, the frames it names ("path.py:NN fn")."""
    return failure.signature.frame_chain or tuple(f for _, f in reading.frame_refs)


def matchable_signature(failure: LogFailure, reading: LogReading, dynamo: bool) -> Signature:
    """The failure as a Signature the catalog's rules can judge. A paste that lost dynamo's exception line
    but shows dynamo's message is judged as dynamo's Unsupported (said in `missing`). Pure."""
    sig = failure.signature
    exc = failure.exception_type or ""
    if (exc.endswith("Unsupported") and "." not in exc) or (not exc and dynamo):
        exc = "torch._dynamo.exc.Unsupported"
    frames = _frames(failure, reading)
    return dataclasses.replace(
        sig, exception_type=exc, message_head=sig.message_head or failure.head,
        innermost_library_frame=innermost_library_frame(frames), frame_chain=frames,
        lru_cache_warnings=tuple(w.text for w in reading.lru_cache_warnings))


_REJECTIONS_SHOWN = 4  # the catalog lists the failure modes first: their rules say what a paste lacks


def rejections(signature: Signature, modes: Sequence[MatchableMode]) -> tuple[str, ...]:
    """'mode1: <what its rule did not find>' for the first failure modes, in catalog order. Pure."""
    return tuple(f"{m.id}: {why}" for m in modes[:_REJECTIONS_SHOWN] if (why := m.matches(signature)) is not None)


def _is_dynamo(failure: LogFailure) -> bool:
    sig = failure.signature
    return (
        (failure.exception_type or "").startswith("torch._dynamo.")
        or (failure.exception_type or "").endswith("Unsupported")
        or failure.kind == "dynamo-message"
        or any(f.file.startswith("torch/_dynamo/") for f in sig.frame_chain)
        or bool(_DYNAMO_WORDS.search(_message_text(failure)))
        or (failure.kind in ("frames-only", "piecewise-error") and bool(_DYNAMO_WORDS.search(failure.context)))
    )


@dataclasses.dataclass(frozen=True)
class _Judgement:
    kind: Kind
    mode: str | None
    why: str
    family: FamilyEvidence
    also: tuple[str, ...] = ()  # other modes whose rule accepts the same text
    inferred_type: bool = False
    rejections: tuple[str, ...] = ()  # mode undetermined: each failure mode's rule, saying what it did not find


def _failure_kind(failure: LogFailure, reading: LogReading, modes: Sequence[MatchableMode]) -> _Judgement:
    frames = _frames(failure, reading)
    window = "\n".join((failure.preamble, failure.head, failure.context))  # where a cut paste keeps its evidence
    family = family_evidence(window, frames, failure.exception_type)
    dynamo = _is_dynamo(failure) or bool(family.dynamo)
    if dynamo and family.fp4:
        signature = matchable_signature(failure, reading, dynamo)
        matched = [m.id for m in modes if m.matches(signature) is None]  # in the catalog's order
        if not (family.loader or matched):
            why = "dynamo failed inside FlashInfer's fp4 path, but not in its JIT loader"
            return _Judgement(Kind.RELATED, None, why, family)
        mode = matched[0] if matched else None
        where = "its JIT loader" if family.loader else "a failure the catalog knows"
        why = (f"dynamo traced FlashInfer's FP4 path into {where}"
               + (f"; the catalog's rule for {mode} accepts it" if mode else "; no single mode's rule accepts the text"))
        return _Judgement(Kind.KNOWN_BUG, mode, why, family, tuple(matched[1:]), not failure.exception_type,
                          () if matched else rejections(signature, modes))
    flashinfer = any(f.file.startswith("flashinfer/") for f in frames) or "flashinfer" in reading.packages_named
    if dynamo and flashinfer:
        inner = innermost_library_frame(frames)
        where = f" at {inner}" if inner else ""
        return _Judgement(Kind.RELATED, None, f"dynamo traced into FlashInfer{where}: same mechanism, another op", family)
    jit_frames = [f for f in frames if "/jit_kernel/" in f"/{f.file}" or "/jit/" in f"/{f.file}"]
    mechanism = _MECHANISM.search(_message_text(failure))
    if dynamo and (jit_frames or mechanism):
        what = str(jit_frames[-1]) if jit_frames else mechanism.group(0)  # type: ignore[union-attr]
        return _Judgement(Kind.RELATED, None,
                          f"dynamo traced into a lazy JIT / system call ({what}), no FlashInfer FP4 involved", family)
    return _Judgement(Kind.OTHER_FAILURE, None, _other_reason(failure, dynamo, reading), family)


def _other_reason(failure: LogFailure, dynamo: bool, reading: LogReading) -> str:
    # the next announcements often carry the cause ("Exception: Capture cuda graph failed:" then "ptxas fatal")
    text = " ".join([failure.head, failure.context[:4000], *(f.head for f in reading.failures[1:4])])
    name = failure.exception_type or ("a dynamo failure" if dynamo else (
        "SGLang's piecewise CUDA graph failure" if failure.kind == "piecewise-error" else
        "an error stated in the log" if failure.kind == "stated-error" else
        "a native crash (Python's fault handler printed the stacks)" if failure.kind == "fault-dump" else "a crash"))
    for pattern, what in ((_OOM, "out of memory"), (_NO_KERNEL, "no kernel built for this GPU's architecture"),
                          (_HARDWARE, "the GPU's architecture is refused (a capability check)"), (_FAKE, "a fake-tensor problem"),
                          (_NO_NVCC, "no nvcc found (the CUDA toolkit is missing or not on PATH / CUDA_HOME)"),
                          (_LIBRARY_ERROR, "a CUDA library error (cuDNN, cuBLAS or NCCL)"),
                          (_CUDA_ERROR, "a CUDA runtime error")):
        if pattern.search(text):
            return f"{name}: {what}, not this bug"
    if dynamo:
        return f"{name} with no FlashInfer FP4 code in it, not this bug"
    return f"{name}, not a compile failure in FlashInfer"


def _piecewise(reading: LogReading, failure: LogFailure | None) -> tuple[Piecewise, str, list[LogLine]]:
    begins, ends = reading.events(CaptureEvent.BEGIN), reading.events(CaptureEvent.END)
    failed, disabled = reading.events(CaptureEvent.FAILED), reading.events(CaptureEvent.DISABLED)
    ready, off = reading.events(CaptureEvent.READY), list(reading.piecewise_off)
    if failure is not None:
        if failed:
            return Piecewise.FAILED, "SGLang reports the piecewise CUDA graph failure", failed[:1]
        runner = _PIECEWISE_RUNNER.search(failure.context) or any(
            _PIECEWISE_RUNNER.search(f.file) for f in failure.signature.frame_chain)
        if runner:
            return Piecewise.FAILED, "the failure is inside SGLang's piecewise runner (its frames)", []
        if begins and not ends and failure.line.number >= begins[0].number:
            return Piecewise.FAILED, "the failure came after capture began and before it ended", [begins[0]]
        if ends:
            return Piecewise.CAPTURED, "capture ended before the failure", ends[:1]
        if off:
            return Piecewise.NOT_EXERCISED, "the launch turned piecewise CUDA graphs off", off[:1]
        if _DECODE_CAPTURE_OR_LOAD.search(failure.context) or _DECODE_CAPTURE_OR_LOAD.search(failure.head):
            return Piecewise.NOT_EXERCISED, "the crash came in model loading or decode graph capture, before piecewise", []
        return Piecewise.UNKNOWN, "no piecewise capture line in the log", []
    if ends:
        return Piecewise.CAPTURED, "capture began and ended", [*begins[:1], ends[0]]
    if disabled or off:
        return Piecewise.NOT_EXERCISED, "piecewise CUDA graphs were turned off", (disabled or off)[:1]
    if begins:
        return Piecewise.UNKNOWN, "capture began; the log ends before it ended (cut, or still running)", begins[:1]
    if ready:
        return Piecewise.NOT_EXERCISED, "the server came up with no piecewise capture", ready[:1]
    return Piecewise.UNKNOWN, "no piecewise capture line and no server start in the log", []


def _confidence(judged: _Judgement | None, failure: LogFailure | None, reading: LogReading) -> str:
    if failure is None or judged is None:
        if judged is not None and judged.kind is Kind.KNOWN_BUG:
            return "low"  # the family's names with no failure printed
        return "high" if reading.events(CaptureEvent.READY) or reading.capture_ended else "medium"
    typed = failure.exception_type is not None and failure.kind != "frames-only"
    if judged.kind is Kind.OTHER_FAILURE and _too_little_to_rule_out(failure):
        return "low"
    if judged.kind is Kind.KNOWN_BUG:
        # how much survived: the exception line, a mode's rule, and the signs of the three facts
        score = len(judged.family.survived) + (2 if typed else 0) + (2 if judged.mode else 0)
        return "high" if score >= 8 and typed else ("medium" if score >= 5 else "low")
    return "high" if typed else ("medium" if failure.kind in ("native-error", "piecewise-error") else "low")


def _too_little_to_rule_out(failure: LogFailure) -> bool:
    """A dynamo message this bug also prints (skipped call, disable), with no frames to say where."""
    generic = "marked as skipped" in _message_text(failure) or _DISABLE in _message_text(failure)
    return _is_dynamo(failure) and generic and not failure.signature.frame_chain and not failure.signature.skipped_callable


def _missing(judged: _Judgement | None, failure: LogFailure | None, reading: LogReading) -> list[str]:
    out: list[str] = []
    if failure is None:
        if judged is not None and judged.kind is Kind.KNOWN_BUG:
            out.append("no exception or traceback in the paste: recognised from the names it keeps"
                       + ("; judged as dynamo's Unsupported" if judged.mode else ""))
            if judged.mode is None:
                out.append("mode undetermined; what each rule did not find:")
                out.extend(f"  {why}" for why in judged.rejections)
        elif reading.announced:
            out.append(f"a traceback starts at line {reading.announced[0].number} but neither frames nor an exception follow")
        return out
    assert judged is not None
    kind, mode = judged.kind, judged.mode
    if kind is Kind.KNOWN_BUG and mode is None:  # first: which signs would name the mode
        out.append("mode undetermined: no catalog mode's rule accepts what the paste kept; what each rule did not find:")
        out.extend(f"  {why}" for why in judged.rejections)
    if failure.kind == "frames-only":
        out.append("matched on frames; no exception line")
    elif failure.exception_type is None:
        out.append("the exception type is not printed (a message body only)"
                   + ("; judged as dynamo's Unsupported from its wording" if judged.inferred_type and kind is Kind.KNOWN_BUG else ""))
    if kind is not Kind.KNOWN_BUG and _is_dynamo(failure) and not judged.family.fp4:
        out.append("no FlashInfer FP4 frame or name in the failure")
    if kind is Kind.OTHER_FAILURE and _too_little_to_rule_out(failure):
        out.append("no frames and no skipped callable: paste dynamo's whole 'from user code:' section to rule this bug in or out")
    return out


def flashinfer_calls(frames: Sequence[Frame]) -> tuple[str, ...]:
    """The function names of the FlashInfer frames, outermost first, once each: the calls a failure went through,
    for the certificate's JIT-loader set (pcgkit.advice.compile_unsafe). Pure."""
    return tuple(dict.fromkeys(f.function for f in frames if f.file.startswith("flashinfer/") and f.function))


def diagnose(reading: LogReading, modes: Sequence[MatchableMode] = (), source: FlashInferSource | None = None) -> Diagnosis:
    """The diagnosis of one log; `modes`: the catalog's failure modes, in catalog order, as values; `source`: where
    FlashInfer defines the functions of its FP4 path (pcgkit.triage.steps), to place a hand-written path. Pure."""
    inferred: tuple[str, ...] = ()
    if source is not None and reading.steps and not reading.frames:
        placed = place(reading.steps, source)
        if placed.frames:  # the path as the paste wrote it replaces the loose "file.py:NN name" references
            reading = dataclasses.replace(reading, frame_refs=placed.frames)
            inferred = placed.inferred
    failure = reading.failure
    refs = tuple(f for _, f in reading.frame_refs)
    judged: _Judgement | None = None
    if failure is None:
        family = family_evidence(reading.excerpt, refs, None)
        if family.complete:
            # no failure line: judged as dynamo's Unsupported from the names, over the frames the paste keeps
            signature = Signature("torch._dynamo.exc.Unsupported", "", innermost_library_frame=innermost_library_frame(
                refs), frame_chain=refs, lru_cache_warnings=tuple(w.text for w in reading.lru_cache_warnings))
            matched = [m.id for m in modes if m.matches(signature) is None]
            mode = matched[0] if matched else None
            judged = _Judgement(Kind.KNOWN_BUG, mode, "no failure line survived, but the paste names dynamo, FlashInfer's "
                                "FP4 path and its JIT loader together"
                                + (f"; the catalog's rule for {mode} accepts its frames" if mode else ""),
                                family, tuple(matched[1:]), True, () if matched else rejections(signature, modes))
            kind, why = judged.kind, judged.why
        elif reading.announced:
            kind, mode, why = Kind.OTHER_FAILURE, None, "a traceback with no frames or exception in the log (cut)"
        else:
            kind, mode, why = Kind.NO_FAILURE, None, "no exception, traceback or failure message in the log"
    else:
        judged = _failure_kind(failure, reading, modes)
        kind, mode, why = judged.kind, judged.mode, judged.why
    piecewise, piece_why, piece_lines = _piecewise(reading, failure)
    evidence: list[Evidence] = []
    if failure is not None:
        evidence.append(Evidence(failure.line.number, failure.line.text[:300], f"{failure.kind}: {why}"))
        inner = innermost_library_frame(_frames(failure, reading))
        line = next((n for n, f in (*reading.frames, *reading.frame_refs) if f == inner), None)
        if line is not None:
            evidence.append(Evidence(line, str(inner), "innermost FlashInfer frame"))
        evidence.extend(Evidence(ln.number, ln.text[:300], "frame") for ln in failure.evidence[1:])
    elif reading.announced:
        evidence.append(Evidence(reading.announced[0].number, reading.announced[0].text[:300], why))
    evidence.extend(Evidence(ln.number, ln.text[:300], f"piecewise: {piece_why}") for ln in piece_lines)
    evidence.extend(Evidence(ln.number, ln.text[:300], "dynamo lru_cache warning") for ln in reading.lru_cache_warnings[:1])
    head = ""
    if failure is not None:
        head = (f"\u201c{failure.head[:160]}\u201d" if failure.kind in ("stated-error", "fault-dump") else
                f"{failure.exception_type or '(type not printed)'}: {failure.head or failure.signature.message_head}"[:200])
    summary = {
        Kind.KNOWN_BUG: f"this bug ({mode or 'mode undetermined'}): {why}",
        Kind.RELATED: f"related: {why}",
        Kind.OTHER_FAILURE: f"another failure: {why}" + (f" [{head}]" if head else ""),
        Kind.NO_FAILURE: f"no failure: piecewise {piecewise} ({piece_why})",
    }[kind]
    return Diagnosis(
        kind=kind,
        mode=mode if kind is Kind.KNOWN_BUG else None,
        piecewise=piecewise,
        confidence=_confidence(judged, failure, reading),
        summary=summary,
        piecewise_reason=piece_why,
        evidence=tuple(sorted(dict.fromkeys(evidence), key=lambda e: e.line)),
        missing=tuple(_missing(judged, failure, reading)),
        signature=failure.signature if failure is not None else None,
        survived=judged.family.survived if judged is not None else (),
        log_advice=tuple(dict.fromkeys(ln.text.strip() for ln in reading.hints))[:3],
        inferred=inferred,
        also=judged.also if judged is not None and kind is Kind.KNOWN_BUG else (),
        flashinfer_calls=flashinfer_calls(_frames(failure, reading) if failure is not None else refs),
    )
