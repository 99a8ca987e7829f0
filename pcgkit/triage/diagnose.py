"""From a LogReading (pcgkit.values.signature.read_log) to a Diagnosis. Pure: no I/O.

The rule that matters most: `known-bug` only when the log itself shows this bug: dynamo (an
Unsupported, its frames or its wording) AND FlashInfer's FP4 quantize path (an fp4 frame, FP4 in
the failing source lines, or `fp4_quantize` named in dynamo's message) AND the failure sitting in
the lazy JIT loader, in `torch.compiler.disable`'s rejection, or in allow_in_graph's fake-tensor
run. The same mechanism in another op or library is `related`; anything else is `other-failure`
with its own type and head. The earliest failure in the log is the one judged.
"""

from __future__ import annotations

import dataclasses
import enum
import re

from pcgkit.values.signature import CaptureEvent, Frame, LogFailure, LogLine, LogReading, Signature


class Kind(str, enum.Enum):
    KNOWN_BUG = "known-bug"
    RELATED = "related"
    OTHER_FAILURE = "other-failure"
    NO_FAILURE = "no-failure"

    def __str__(self) -> str:
        return self.value


class Piecewise(str, enum.Enum):
    CAPTURED = "captured"
    FAILED = "failed"
    NOT_EXERCISED = "not-exercised"
    UNKNOWN = "unknown"

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass(frozen=True)
class Evidence:
    line: int
    text: str
    why: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    kind: Kind
    mode: str | None  # a catalog case id (mode1..mode4, fix-allow-in-graph) for known-bug
    piecewise: Piecewise
    confidence: str  # high | medium | low
    summary: str
    piecewise_reason: str
    evidence: tuple[Evidence, ...]
    missing: tuple[str, ...]
    signature: Signature | None = None

    def to_dict(self) -> dict:
        return {
            "diagnosis": str(self.kind),
            "mode": self.mode,
            "piecewise": str(self.piecewise),
            "piecewise_reason": self.piecewise_reason,
            "confidence": self.confidence,
            "summary": self.summary,
            "evidence": [e.to_dict() for e in self.evidence],
            "missing": list(self.missing),
            "signature": self.signature.to_dict() if self.signature else None,
        }


_DYNAMO_WORDS = re.compile(r"Attempted to call function marked as skipped|Skip calling `torch\.compiler\.disable|"
                           r"graph break|from user code:|FAILED INLINING|Dynamo", re.I)
_DISABLE = "Skip calling `torch.compiler.disable()`d function"
# What dynamo cannot trace inside a lazy JIT loader: process spawning, locks, file system, clocks.
_MECHANISM = re.compile(r"_thread\.allocate_lock|threading\.Lock|subprocess|Popen|posix\.stat|os\.stat|pathlib|"
                        r"datetime\.now|posix\.getcwd|SimpleNamespace|FakeTensor")
_LOADER_FUNCTIONS = ("get_fp4_quantization_module", "build_and_load", "gen_fp4_quantization", "is_cuda_version_at_least",
                     "get_cuda_version", "get_cuda_path", "is_aot", "register", "gen_jit_spec", "get_aot_artifacts")
_ALLOW_IN_GRAPH = re.compile(r"lru_cache_wrapper|get_fp4_quantization_module|allow_in_graph|"
                             r"data pointer of Tensor|data_ptr", re.I)
_WARM_CACHE = re.compile(r"cache_info\(\)|currsize=[1-9]")
_OOM = re.compile(r"out of memory|OutOfMemoryError", re.I)
_NO_KERNEL = re.compile(r"no kernel image|ptxas fatal|not defined for option 'gpu-name'", re.I)
_HARDWARE = re.compile(r"not supported for the current GPU|Minimum capability", re.I)
_FAKE = re.compile(r"fake (?:impl|kernel|tensor)|register_fake|Meta tensors?|FakeTensor", re.I)
_DECODE_CAPTURE_OR_LOAD = re.compile(r"CudaGraphRunner|Capture cuda graph failed|load_model|_get_quantization_config")


def _fp4_frames(frames: tuple[Frame, ...]) -> list[Frame]:
    return [f for f in frames if f.file.startswith("flashinfer/") and ("fp4" in f.file or "fp4" in f.function)]


def _message_text(failure: LogFailure) -> str:
    sig = failure.signature
    return " ".join(x for x in (failure.head, sig.message_head, sig.explanation or "", sig.skipped_callable or "") if x)


def _frame_line(reading: LogReading, frame: Frame | None) -> int | None:
    if frame is None:
        return None
    return next((n for n, f in reading.frames if f == frame), None)


def _mode(failure: LogFailure, reading: LogReading) -> tuple[str | None, str]:
    """The catalog case this failure is, and why; (None, why) when the paste cannot tell."""
    sig, text, context = failure.signature, _message_text(failure), failure.context
    inner = sig.innermost_library_frame
    if _DISABLE in text or _DISABLE in context:
        return "mode4", "torch.compiler.disable around fp4_quantize, rejected under fullgraph=True"
    if "FakeTensor" in context and _ALLOW_IN_GRAPH.search(text + context) and "fake tensor" in (text + context).lower():
        return "fix-allow-in-graph", "the loader ran during fake-tensor propagation: allow_in_graph's known failure"
    in_nvcc = inner is not None and inner.file.endswith("jit/cpp_ext.py") and inner.function in ("get_cuda_version",
                                                                                                 "get_cuda_path")
    spawns = bool(sig.frames_in("subprocess.py")) or "allocate_lock" in text or "threading.Lock" in context
    if in_nvcc and spawns:
        if _WARM_CACHE.search(context):
            return "mode3", "the cache was warm (cache_info shown) and dynamo still traced get_cuda_version's nvcc call"
        return "mode1", "dynamo traced get_cuda_version's `nvcc --version` subprocess"
    if inner is not None and inner.file.startswith("flashinfer/jit/") and inner.function != "get_cuda_version":
        return "mode2", f"failure inside the JIT loader at {inner} (where a get_cuda_version patch leads)"
    if "returned non-Tensor" in text and _fp4_frames(sig.frame_chain):
        return "fix-allow-in-graph", "the allowed loader call returned a module namespace (torch 2.11's wording)"
    return None, "the paste ends before the innermost FlashInfer frame"


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


def _shows_fp4(failure: LogFailure) -> bool:
    chain = failure.signature.frame_chain
    return bool(_fp4_frames(chain)) or "fp4_quantize" in _message_text(failure) or (
        # frames cut before the fp4 frame, but the failing source line is FP4's ("-DENABLE_FP4" if ...)
        any(f.file.startswith("flashinfer/jit/") for f in chain) and "FP4" in failure.context.upper()
    )


def _failure_kind(failure: LogFailure, reading: LogReading) -> tuple[Kind, str | None, str]:
    sig = failure.signature
    dynamo = _is_dynamo(failure)
    flashinfer = any(f.file.startswith("flashinfer/") for f in sig.frame_chain) or "flashinfer" in reading.packages_named
    if dynamo and _shows_fp4(failure):
        mode, why = _mode(failure, reading)
        in_loader = any(f.function.startswith(_LOADER_FUNCTIONS) for f in sig.frame_chain if f.file.startswith("flashinfer/"))
        if mode is not None or in_loader:
            return Kind.KNOWN_BUG, mode, why
        return Kind.RELATED, None, "dynamo failed inside FlashInfer's fp4 path, but not in its JIT loader"
    if dynamo and flashinfer:
        inner = sig.innermost_library_frame
        where = f" at {inner}" if inner else ""
        return Kind.RELATED, None, f"dynamo traced into FlashInfer{where}: same mechanism, another op"
    jit_frames = [f for f in sig.frame_chain if "/jit_kernel/" in f"/{f.file}" or "/jit/" in f"/{f.file}"]
    if dynamo and (jit_frames or _MECHANISM.search(_message_text(failure))):
        what = str(jit_frames[-1]) if jit_frames else _MECHANISM.search(_message_text(failure)).group(0)  # type: ignore[union-attr]
        return Kind.RELATED, None, f"dynamo traced into a lazy JIT / system call ({what}), no FlashInfer FP4 involved"
    return Kind.OTHER_FAILURE, None, _other_reason(failure, dynamo, reading)


def _other_reason(failure: LogFailure, dynamo: bool, reading: LogReading) -> str:
    # the next announcements often carry the cause ("Exception: Capture cuda graph failed:" then "ptxas fatal")
    text = " ".join([failure.head, failure.context[:4000], *(f.head for f in reading.failures[1:4])])
    name = failure.exception_type or ("a dynamo failure" if dynamo else (
        "SGLang's piecewise CUDA graph failure" if failure.kind == "piecewise-error" else "a crash"))
    for pattern, what in ((_OOM, "out of memory"), (_NO_KERNEL, "no kernel built for this GPU's architecture"),
                          (_HARDWARE, "the GPU is refused by the quantization method"), (_FAKE, "a fake-tensor problem")):
        if pattern.search(text):
            return f"{name}: {what}, not this bug"
    if dynamo:
        return f"{name} with no FlashInfer FP4 code in it, not this bug"
    return f"{name}, not a compile failure in FlashInfer"


def _piecewise(reading: LogReading, failure: LogFailure | None) -> tuple[Piecewise, str, list[LogLine]]:
    begins, ends = reading.events(CaptureEvent.BEGIN), reading.events(CaptureEvent.END)
    failed, disabled = reading.events(CaptureEvent.FAILED), reading.events(CaptureEvent.DISABLED)
    ready = reading.events(CaptureEvent.READY)
    if failure is not None:
        if failed:
            return Piecewise.FAILED, "SGLang reports the piecewise CUDA graph failure", failed[:1]
        if begins and not ends and failure.line.number >= begins[0].number:
            return Piecewise.FAILED, "the failure came after capture began and before it ended", [begins[0]]
        if ends:
            return Piecewise.CAPTURED, "capture ended before the failure", ends[:1]
        if _DECODE_CAPTURE_OR_LOAD.search(failure.context) or _DECODE_CAPTURE_OR_LOAD.search(failure.head):
            return Piecewise.NOT_EXERCISED, "the crash came in model loading or decode graph capture, before piecewise", []
        return Piecewise.UNKNOWN, "no piecewise capture line in the log", []
    if ends:
        return Piecewise.CAPTURED, "capture began and ended", [*begins[:1], ends[0]]
    if disabled:
        return Piecewise.NOT_EXERCISED, "SGLang turned piecewise CUDA graphs off", disabled[:1]
    if begins:
        return Piecewise.UNKNOWN, "capture began; the log ends before it ended (cut, or still running)", begins[:1]
    if ready:
        return Piecewise.NOT_EXERCISED, "the server came up with no piecewise capture", ready[:1]
    return Piecewise.UNKNOWN, "no piecewise capture line and no server start in the log", []


def _confidence(kind: Kind, failure: LogFailure | None, mode: str | None, reading: LogReading) -> str:
    if failure is None:
        return "high" if reading.events(CaptureEvent.READY) or reading.capture_ended else "medium"
    typed = failure.exception_type is not None and failure.kind != "frames-only"
    if kind is Kind.OTHER_FAILURE and _too_little_to_rule_out(failure):
        return "low"
    if kind is Kind.KNOWN_BUG:
        return "high" if typed and mode else ("low" if mode is None else "medium")
    return "high" if typed else ("medium" if failure.kind in ("native-error", "piecewise-error") else "low")


def _too_little_to_rule_out(failure: LogFailure) -> bool:
    """A dynamo message this bug also prints (skipped call, disable), with no frames to say where."""
    generic = "marked as skipped" in _message_text(failure) or _DISABLE in _message_text(failure)
    return _is_dynamo(failure) and generic and not failure.signature.frame_chain and not failure.signature.skipped_callable


def _missing(kind: Kind, failure: LogFailure | None, mode: str | None, reading: LogReading) -> list[str]:
    out: list[str] = []
    if failure is None:
        if reading.announced:
            out.append(f"a traceback starts at line {reading.announced[0].number} but neither frames nor an exception follow")
        return out
    if failure.kind == "frames-only":
        out.append("matched on frames; no exception line")
    elif failure.exception_type is None:
        out.append("the exception type is not printed (SGLang's message only)")
    if kind is Kind.KNOWN_BUG and mode is None:
        out.append("mode undetermined: the paste ends before the innermost FlashInfer frame")
    if mode == "mode1":
        out.append("mode 3 (a pre-warmed get_cuda_version cache) fails identically; this log shows no cache_info")
    if kind is not Kind.KNOWN_BUG and _is_dynamo(failure) and not _shows_fp4(failure):
        out.append("no FlashInfer FP4 frame or name in the failure")
    if kind is Kind.OTHER_FAILURE and _too_little_to_rule_out(failure):
        out.append("no frames and no skipped callable: paste dynamo's whole 'from user code:' section to rule this bug in or out")
    return out


def diagnose(reading: LogReading) -> Diagnosis:
    """The diagnosis of one log. Pure."""
    failure = reading.failure
    if failure is None and reading.announced:
        kind, mode, why = Kind.OTHER_FAILURE, None, "a traceback with no frames or exception in the log (cut)"
    elif failure is None:
        kind, mode, why = Kind.NO_FAILURE, None, "no exception, traceback or failure message in the log"
    else:
        kind, mode, why = _failure_kind(failure, reading)
    piecewise, piece_why, piece_lines = _piecewise(reading, failure)
    evidence: list[Evidence] = []
    if failure is not None:
        evidence.append(Evidence(failure.line.number, failure.line.text[:300], f"{failure.kind}: {why}"))
        inner = failure.signature.innermost_library_frame
        line = _frame_line(reading, inner)
        if inner is not None and line is not None:
            evidence.append(Evidence(line, str(inner), "innermost FlashInfer frame"))
        evidence.extend(Evidence(ln.number, ln.text[:300], "frame") for ln in failure.evidence[1:])
    elif reading.announced:
        evidence.append(Evidence(reading.announced[0].number, reading.announced[0].text[:300], why))
    evidence.extend(Evidence(ln.number, ln.text[:300], f"piecewise: {piece_why}") for ln in piece_lines)
    evidence.extend(Evidence(ln.number, ln.text[:300], "dynamo lru_cache warning") for ln in reading.lru_cache_warnings[:1])
    head = ""
    if failure is not None:
        head = f"{failure.exception_type or '(type not printed)'}: {failure.head or failure.signature.message_head}"[:200]
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
        confidence=_confidence(kind, failure, mode, reading),
        summary=summary,
        piecewise_reason=piece_why,
        evidence=tuple(sorted(dict.fromkeys(evidence), key=lambda e: e.line)),
        missing=tuple(_missing(kind, failure, mode, reading)),
        signature=failure.signature if failure is not None and failure.kind != "frames-only" else (
            failure.signature if failure is not None else None),
    )
