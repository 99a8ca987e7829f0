# /// script
# requires-python = "==3.12.*"
# dependencies = [
#     "torch==2.9.1",
#     "flashinfer-python==0.6.1",
# ]
# ///
"""Standalone reproduction of mode1: nvcc subprocess.

Mode 1 -- nvcc subprocess.

torch.compile(fullgraph=True) over SGLang's NVFP4 activation quantize traces into
flashinfer.fp4_quantize -> get_fp4_quantization_module -> is_cuda_version_at_least("12.8") ->
get_cuda_version(), which runs `nvcc --version` in a subprocess. Dynamo cannot trace the
subprocess (it dies on `_thread.allocate_lock`): "Attempted to call function marked as skipped".
Seed: shared/seeds 000, 004.

What it does: torch.compile(fullgraph=True, backend="eager") over SGLang's NVFP4 activation
quantize (flashinfer.fp4_quantize), then prints what dynamo did, a verdict and one final
machine-readable line:  SIGNATURE: {"mode": ..., "verdict": ..., "signature": {...}}
Exit status: 1 = the bug reproduced, 0 = traced cleanly (fixed), 2 = failed differently
(drifted) or not applicable, 3 = this script or the install broke.

SIMULATED SM120 (no GPU needed): the hardware *queries* FlashInfer and torch make on this path
(compute capability, PDL support, the JIT arch check, torch.cuda.get_device_capability) are
answered as an SM120 part would (simulated_sm120 below). Nothing else is replaced: every line of
FlashInfer under trace is the installed one. Nothing is executed on a device: the graph is
built, not run.

Exported by pcgkit 0.1.0 from cases/test_mode1_nvcc_subprocess.py; the code below is cut verbatim
from the kit's sources (section headers say from where). It needs no pcgkit.
Pins: torch==2.9.1, flashinfer-python==0.6.1, Python 3.12 (versions measured in reports/samples/results.json).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import functools
import importlib.metadata
import json
import os
import re
import shutil
import sys
import time
import types
import warnings
from pathlib import Path
from unittest import mock

MODE_ID = "mode1"
SIMULATE = True


# ---- from pcgkit/harness/casekit.py (verbatim) -----------------------------------------------

class NotApplicable(Exception):
    """The installed version lacks the code path this mode exercises."""


class KitError(Exception):
    """The kit or the install broke (not a statement about the bug)."""


def cuda_toolkit_root() -> str | None:
    """The CUDA toolkit FlashInfer's JIT would use: $CUDA_HOME, else the root of `nvcc` on PATH."""
    if os.environ.get("CUDA_HOME"):
        return os.environ["CUDA_HOME"]
    nvcc = shutil.which("nvcc")
    return str(Path(nvcc).resolve().parent.parent) if nvcc else None


# ---- from pcgkit/fp4/layer.py (verbatim) -----------------------------------------------------

TOKENS, HIDDEN = 128, 256  # K a multiple of 16 (the NVFP4 block) and of 64 (the swizzled layout)


TOKENS, HIDDEN = 128, 256  # K a multiple of 16 (the NVFP4 block) and of 64 (the swizzled layout)


def dense_nvfp4_layer(torch_device: str):
    """A one-op nn.Module whose forward is SGLang's activation-quantize step."""
    import flashinfer
    import torch

    if not hasattr(flashinfer, "fp4_quantize"):
        raise NotApplicable(f"flashinfer {getattr(flashinfer, '__version__', '?')} has no fp4_quantize")

    class DenseNvfp4ActivationQuant(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("input_scale_inv", torch.ones(1, dtype=torch.float32, device=torch_device))

        def forward(self, x):
            x = x.view(-1, x.shape[-1])
            # Looked up on the module at call time, so a case may wrap fp4_quantize (mode 4).
            return flashinfer.fp4_quantize(x, self.input_scale_inv)

    return DenseNvfp4ActivationQuant()


def example_activation(torch_device: str):
    import torch

    generator = torch.Generator(device="cpu").manual_seed(0)
    return torch.randn(TOKENS, HIDDEN, generator=generator, dtype=torch.float32).to(torch.bfloat16).to(torch_device)


def cache_state(fn) -> dict | None:
    """functools cache_info() as a dict (None when fn is not cached in this version)."""
    info = getattr(fn, "cache_info", None)
    return info()._asdict() if info else None


# ---- from pcgkit/values/trace.py (verbatim) --------------------------------------------------

@dataclasses.dataclass(frozen=True)
class TraceOutcome:
    traced: bool  # dynamo produced the graph(s) without raising
    executed: bool  # the compiled function also ran to completion (real GPU only)
    signature: Signature | None  # of the exception, when one was raised
    lru_cache_warnings: tuple[str, ...]
    graph_breaks: int | None  # dynamo's own count (only meaningful with fullgraph=False)
    graph_break_reasons: tuple[str, ...]
    duration_s: float
    output: Any = dataclasses.field(default=None, compare=False, repr=False)


# ---- from pcgkit/values/signature.py (verbatim) ----------------------------------------------

FRAME_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+),? in (?P<function>[^\s]+)')


_GRAPH_BREAK_ID_RE = re.compile(r"\b(gb\d{4})\b")


_EXPLANATION_RE = re.compile(r"^\s*Explanation:\s*(?P<text>.+)$", re.MULTILINE)


SKIPPED_CALLABLE_RE = re.compile(r"module: (?P<module><unknown module>|[^,\s]+), qualname: (?P<qualname>[^,\s)]+)")


LIBRARY_PACKAGES: tuple[str, ...] = ("flashinfer",)


@dataclasses.dataclass(frozen=True)
class Frame:
    file: str  # path relative to the package root when inside one ("flashinfer/jit/cpp_ext.py")
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.function}"

    @property
    def short(self) -> str:
        """basename:line:function, the form used in tables."""
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line}:{self.function}"


@dataclasses.dataclass(frozen=True)
class Signature:
    exception_type: str
    message_head: str
    graph_break_id: str | None = None
    explanation: str | None = None
    skipped_callable: str | None = None  # "_thread.allocate_lock" when dynamo names the builtin
    innermost_library_frame: Frame | None = None
    frame_chain: tuple[Frame, ...] = ()
    lru_cache_warnings: tuple[str, ...] = ()

    def short(self) -> str:
        """One line for tables: graph-break id, innermost library frame, message head."""
        parts = [self.graph_break_id or "", str(self.innermost_library_frame.short) if self.innermost_library_frame else ""]
        return " ".join(p for p in parts if p) or self.message_head[:80]

    def frames_in(self, fragment: str) -> list[Frame]:
        return [f for f in self.frame_chain if fragment in f.file]

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["innermost_library_frame"] = str(self.innermost_library_frame) if self.innermost_library_frame else None
        data["frame_chain"] = [str(f) for f in self.frame_chain]
        data["lru_cache_warnings"] = list(self.lru_cache_warnings)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Signature:
        inner = data.get("innermost_library_frame")
        return cls(
            exception_type=data["exception_type"],
            message_head=data["message_head"],
            graph_break_id=data.get("graph_break_id"),
            explanation=data.get("explanation"),
            skipped_callable=data.get("skipped_callable"),
            innermost_library_frame=parse_frame_str(inner) if inner else None,
            frame_chain=tuple(parse_frame_str(f) for f in data.get("frame_chain", ())),
            lru_cache_warnings=tuple(data.get("lru_cache_warnings", ())),
        )


def parse_frame_str(text: str) -> Frame:
    file, line, function = text.rsplit(":", 2)
    return Frame(file, int(line), function)


def package_relative(path: str) -> str:
    """'/v/lib/python3.12/site-packages/flashinfer/jit/cpp_ext.py' -> 'flashinfer/jit/cpp_ext.py'."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.rsplit(marker, 1)[1]
    for package in LIBRARY_PACKAGES + ("torch", "sglang"):
        token = f"/{package}/"
        if token in path:
            return package + "/" + path.rsplit(token, 1)[1]
    return path


def parse_frames(text: str) -> tuple[Frame, ...]:
    return tuple(
        Frame(package_relative(m["file"]), int(m["line"]), m["function"]) for m in FRAME_RE.finditer(text)
    )


def innermost_library_frame(frames: Sequence[Frame], packages: Iterable[str] = LIBRARY_PACKAGES) -> Frame | None:
    prefixes = tuple(f"{p}/" for p in packages)
    return next((frame for frame in reversed(frames) if frame.file.startswith(prefixes)), None)


def skipped_callable_name(match: re.Match | None) -> str | None:
    if match is None:
        return None
    if match["module"].startswith("<"):  # no module name to report: the qualname alone says it
        return match["qualname"]
    return f"{match['module']}.{match['qualname']}"


def _user_code_section(message: str) -> str:
    """The 'from user code:' block that dynamo appends: the traced frames, outermost first."""
    _, sep, rest = message.partition("from user code:")
    return rest if sep else ""


def parse_message(
    exception_type: str,
    message: str,
    lru_cache_warnings: Sequence[str] = (),
    extra_frames_text: str = "",
) -> Signature:
    """Build a Signature from an exception's type name and its full message text."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    head = lines[0] if lines else ""
    gb = _GRAPH_BREAK_ID_RE.search(message)
    explanation = _EXPLANATION_RE.search(message)
    skipped = SKIPPED_CALLABLE_RE.search(message)
    frames = parse_frames(_user_code_section(message)) or parse_frames(extra_frames_text)
    return Signature(
        exception_type=exception_type,
        message_head=head[:200],
        graph_break_id=gb.group(1) if gb else None,
        explanation=explanation["text"].strip()[:300] if explanation else None,
        skipped_callable=skipped_callable_name(skipped),
        innermost_library_frame=innermost_library_frame(frames),
        frame_chain=frames,
        lru_cache_warnings=tuple(lru_cache_warnings),
    )


def parse_exception(exc: BaseException, lru_cache_warnings: Sequence[str] = ()) -> Signature:
    """Signature of a live exception. Falls back to dynamo's real_stack, then the traceback, for frames."""
    import traceback

    exc_type = f"{type(exc).__module__}.{type(exc).__qualname__}"
    extra = ""
    real_stack = getattr(exc, "real_stack", None)
    if real_stack:
        extra = "".join(traceback.format_list(real_stack))
    elif exc.__traceback__ is not None:
        extra = "".join(traceback.format_tb(exc.__traceback__))
    return parse_message(exc_type, str(exc), lru_cache_warnings, extra_frames_text=extra)


# ---- from pcgkit/harness/tracing.py (verbatim) -----------------------------------------------

LRU_CACHE_WARNING_MARKER = "lru_cache"


class _TracedWithoutExecuting(Exception):
    """Raised by the trace-only backend instead of running the graph (no kernels on a CPU)."""


def _trace_only_backend(graph_module, example_inputs, graphs: list | None = None):
    if graphs is not None:  # the sweep reads which ops the graph holds (opaque op vs traced through)
        graphs.append(graph_module)

    def refuse_to_execute(*args, **kwargs):
        raise _TracedWithoutExecuting()

    return refuse_to_execute


def trace(
    fn: Callable,
    args: Sequence[Any],
    *,
    fullgraph: bool = True,
    execute: bool,
    graphs: list | None = None,
) -> TraceOutcome:
    """torch.compile(fn, fullgraph=..., backend="eager") and call it once. With execute=False the graph is built but
    never run (no GPU to run it on): the backend raises a private sentinel, which counts as a clean trace."""
    import torch

    return observe(
        lambda backend: torch.compile(fn, fullgraph=fullgraph, backend=backend)(*args), execute=execute, graphs=graphs
    )


def observe(invoke: Callable[[Callable], Any], *, execute: bool, graphs: list | None = None) -> TraceOutcome:
    """`trace`'s engine, also for code that calls torch.compile itself (SGLang's install_torch_compiled):
    `invoke(backend)` compiles with the backend it is given and calls the result once. With execute=False and a
    `graphs` list, every FX graph dynamo hands the backend is appended to it."""
    import torch
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    backend: Any = "eager" if execute else functools.partial(_trace_only_backend, graphs=graphs)
    if execute:
        from torch._dynamo.backends.registry import lookup_backend

        backend = lookup_backend("eager")
    signature = None
    traced = executed = False
    output = None
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            output = invoke(backend)
            traced = executed = True
        except _TracedWithoutExecuting:
            traced = True
        except Exception as exc:  # the failure under study: keep it as evidence
            lru = tuple(str(w.message) for w in caught if LRU_CACHE_WARNING_MARKER in str(w.message))
            signature = parse_exception(exc, lru)
    duration = time.perf_counter() - start
    lru_warnings = tuple(str(w.message) for w in caught if LRU_CACHE_WARNING_MARKER in str(w.message))
    breaks: dict = counters.get("graph_break", {})
    count = sum(breaks.values())
    reasons = tuple(str(reason)[:200] for reason in breaks)
    torch._dynamo.reset()
    return TraceOutcome(traced, executed, signature, lru_warnings, count, reasons, duration, output)


# ---- from cases/test_mode1_nvcc_subprocess.py (verbatim) -------------------------------------

def reproduce(ctx: CaseContext) -> TraceOutcome:
    from flashinfer.jit import cpp_ext

    layer = dense_nvfp4_layer(ctx.torch_device)
    x = example_activation(ctx.torch_device)
    ctx.evidence["get_cuda_version.cache_info"] = cache_state(getattr(cpp_ext, "get_cuda_version", None))
    return trace(layer, (x,), fullgraph=True, execute=ctx.execute)


# ---- from pcgkit/values/verdict.py (verbatim) ------------------------------------------------

class Word(str, enum.Enum):
    """A vocabulary of words: f-strings and str() print the word ("reproduced"), not "Verdict.REPRODUCED"."""

    def __str__(self) -> str:
        return self.value


class Verdict(Word):
    REPRODUCED = "reproduced"  # fails with the mode's known signature
    FIXED = "fixed"  # traces under fullgraph=True AND its call path ran with the caller's arguments (see LEGEND)
    TRACES_BUT_FAILS = "traces-but-fails"  # traces under fullgraph=True, but the call path fails when run
    DRIFTED = "drifted"  # fails, but not with the mode's known signature
    NOT_APPLICABLE = "not-applicable"  # this version lacks the code path the mode exercises
    SKIPPED = "skipped"  # hardware or an optional dependency is missing (reason says which)
    ERROR = "error"  # the kit or the install broke: never a statement about the bug

    @property
    def ran(self) -> bool:
        """False only for `skipped`: the case did not run here (every other verdict is a row to show)."""
        return self is not Verdict.SKIPPED

    @property
    def is_bug_verdict(self) -> bool:
        """True when the verdict says something about the bug itself."""
        return self in (Verdict.REPRODUCED, Verdict.FIXED, Verdict.TRACES_BUT_FAILS, Verdict.DRIFTED,
                        Verdict.NOT_APPLICABLE)

    @property
    def works(self) -> bool:
        """True only for `fixed`: traced, and the call path ran with the caller's arguments."""
        return self is Verdict.FIXED

    @property
    def broken(self) -> bool:
        """True for a verdict that says the thing measured does not work for a user: it fails to trace
        (`reproduced`, `drifted`) or traces and then fails when run (`traces-but-fails`)."""
        return self in (Verdict.REPRODUCED, Verdict.DRIFTED, Verdict.TRACES_BUT_FAILS)


# ---- from pcgkit/values/runcheck.py (verbatim) -----------------------------------------------

TRACED_CLEANLY = "traced cleanly under fullgraph=True"


NOT_RUN_TRACE_ONLY = "call path not run by this case (trace only)"


CALL_PATH_RAN = "call path ran"  # what a `fixed` reason says once the call path ran (judge_run writes it)


@dataclasses.dataclass(frozen=True)
class RunCheck:
    """What a case found when it ran the traced call path (see the module docstring)."""

    compared: bool  # compiled output compared with eager (real kernel only); False: why in `numbers`/`note`
    problem: str | None  # the fake/description disagrees with what the op returns: `drifted`
    note: str = ""
    run_failure: str | None = None  # the call path failed when run with the caller's arguments: `traces-but-fails`
    ran: str = ""  # how the call path ran ("" = it did not): e.g. the argument audit over a recording kernel
    numbers: str = ""  # "checked: ..." or "not checked: <why>" (NUMBERS_NEED_SM100 here)


def judge_run(check: RunCheck, traced_reason: str) -> tuple[Verdict, str]:
    """The verdict for a clean trace whose call path was run (or not). Pure."""
    if check.run_failure:
        return Verdict.TRACES_BUT_FAILS, f"traced, but the call path fails when run: {check.run_failure}"
    if check.problem:
        return Verdict.DRIFTED, f"traced, but {check.problem}"
    if not check.ran:
        return Verdict.ERROR, "kit: the case traced but its call path was not run, so it cannot say `fixed`"
    parts = [traced_reason, f"{CALL_PATH_RAN} ({check.ran})"]
    parts += [text for text in (check.numbers, check.note) if text]
    return Verdict.FIXED, "; ".join(parts)


# ---- from pcgkit/verdicts/modes.py (verbatim) ------------------------------------------------

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


def _nvcc_subprocess_wording(sig: Signature) -> str:
    """Mode 1's wording for the frame reached: with CUDA_HOME set FlashInfer runs `nvcc --version` in
    get_cuda_version; without it, get_cuda_path runs `which nvcc` first and the trace dies there (no nvcc
    is needed to reproduce: dynamo fails before any process starts)."""
    inner = sig.innermost_library_frame
    if inner is not None and inner.function == "get_cuda_path":
        return "Unsupported in jit/cpp_ext.py:get_cuda_path -> subprocess (which nvcc; CUDA_HOME unset)"
    return "Unsupported in jit/cpp_ext.py:get_cuda_version -> subprocess (nvcc --version)"


MODE1 = Mode("mode1", *MODE_WORDS["mode1"], matches=fails_in_nvcc_subprocess, wording=_nvcc_subprocess_wording)


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


# ---- from pcgkit/harness/hardware.py (verbatim) ----------------------------------------------

SIMULATED_SM120_CAPABILITY = (12, 0)


SIMULATED_PART_SHAPE: dict[int, tuple[int, int, int, int]] = {
    12: (188, 96 * 1024**3, 99 * 1024, 1536),
    10: (148, 180 * 1024**3, 227 * 1024, 2048),
    9: (132, 141 * 1024**3, 227 * 1024, 2048),
}


# ---- from pcgkit/util/patching.py (verbatim) -------------------------------------------------

@contextlib.contextmanager
def patched_everywhere(original: object, replacement: object, package: str) -> Iterator[list[str]]:
    """Replace every binding of `original` in `package` (and its loaded submodules) for the duration of the block;
    yields the 'module.attribute' names replaced."""
    with contextlib.ExitStack() as stack:
        replaced = []
        for name, module in list(sys.modules.items()):
            if module is None or not (name == package or name.startswith(package + ".")):
                continue
            for attr, value in list(vars(module).items()):
                if value is original:
                    stack.enter_context(mock.patch.object(module, attr, replacement))
                    replaced.append(f"{name}.{attr}")
        yield replaced


# ---- from pcgkit/harness/simulate.py (verbatim) ----------------------------------------------

FLASHINFER_QUERIES: tuple[tuple[str, str], ...] = (
    ("flashinfer.utils", "get_compute_capability"),
    ("flashinfer.utils", "device_support_pdl"),
    ("flashinfer.jit.core", "check_cuda_arch"),
)


FLASHINFER_IMPORT_TIME_ARCH_ANSWERS: tuple[tuple[str, str], ...] = (
    ("flashinfer.jit.core", "current_compilation_context"),
    ("flashinfer.jit.cpp_ext", "cpp_ext_initial_compilation_context"),
)


@dataclasses.dataclass(frozen=True)
class Simulation:
    capability: tuple[int, int]
    replaced: tuple[str, ...]  # "module.attr" of every binding that was answered
    # (query, answer) of each stand-in call that really ran (not inside dynamo's symbolic model):
    # torch.cuda.get_device_properties runs for real under dynamo's folded get_device_capability.
    told: list[tuple[str, object]] = dataclasses.field(default_factory=list)


_ACTIVE_CAPABILITIES: list[tuple[int, int]] = []


@dataclasses.dataclass(frozen=True)
class SimulatedDeviceProperties:
    """What torch.cuda.get_device_properties returns, for the fields the traced path reads."""

    name: str
    major: int
    minor: int
    multi_processor_count: int
    total_memory: int
    shared_memory_per_block_optin: int  # FlashInfer's CuTe-DSL norms (0.6.12+) size their tiles by it
    max_threads_per_multi_processor: int  # 0.7.x's fused_rmsnorm_silu sizes its grid by it


def _answers(capability: tuple[int, int], told: list[tuple[str, object]]) -> dict[str, object]:
    """Stand-ins for FlashInfer's queries. They go through the REAL torch.cuda.get_device_capability
    function object (only the properties underneath it are simulated), so dynamo treats the query
    exactly as it does on a real GPU of this torch version: torch 2.9 folds it to a constant,
    torch 2.11 refuses to trace it ("marked as skipped"). Answering with a plain constant instead
    would hide that failure point (seen on a real H200 with torch 2.11 + flashinfer 0.6.1)."""
    import torch

    def get_compute_capability(device=None):
        return torch.cuda.get_device_capability(getattr(device, "index", None))

    def device_support_pdl(device=None):
        major, _ = get_compute_capability(device)
        return major >= 9  # FlashInfer's own rule

    def check_cuda_arch():
        return None  # an SM120 part passes FlashInfer's "sm75 or higher" check

    def get_device_properties(device=None):
        # Named and sized after the family actually answered (simulated_sm120 is also used for SM90/SM100).
        shape = SIMULATED_PART_SHAPE.get(capability[0], SIMULATED_PART_SHAPE[12])
        properties = SimulatedDeviceProperties(f"simulated SM{capability[0]}{capability[1]}", *capability, *shape)
        told.append(("torch.cuda.get_device_properties", (properties.major, properties.minor)))
        return properties

    def current_device():
        told.append(("torch.cuda.current_device", 0))
        return 0  # the simulated part is the process's one device

    def is_current_stream_capturing():
        # The driver's answer on a GPU where no CUDA graph capture is under way, as during the compile:
        # torch.compile traces before SGLang's runner starts capturing (FlashInfer's top-k dispatch asks).
        told.append(("torch.cuda.graphs.is_current_stream_capturing", False))
        return False

    return {
        "current_device": current_device,
        "get_compute_capability": get_compute_capability,
        "device_support_pdl": device_support_pdl,
        "check_cuda_arch": check_cuda_arch,
        "get_device_properties": get_device_properties,
        "is_current_stream_capturing": is_current_stream_capturing,
    }


@contextlib.contextmanager
def simulated_sm120(capability: tuple[int, int] | None = None) -> Iterator[Simulation]:
    """Answer FlashInfer's and torch's hardware queries as an SM120 part would (or as `capability`;
    nested without one: as the enclosing simulation), inside the block."""
    import importlib

    import torch

    # dynamo resolves torch functions through a name->object map it builds lazily, once per
    # process (trace_rules.get_torch_obj_rule_map, functools-cached). Built while a torch.cuda
    # function is patched, it would hold the stand-in and later, real-GPU traces in the same
    # process would see the real function as unknown ("marked as skipped"): build it first.
    from torch._dynamo import trace_rules

    if hasattr(trace_rules, "get_torch_obj_rule_map"):
        trace_rules.get_torch_obj_rule_map()
    if capability is None:
        capability = _ACTIVE_CAPABILITIES[-1] if _ACTIVE_CAPABILITIES else SIMULATED_SM120_CAPABILITY
    told: list[tuple[str, object]] = []
    answers = _answers(capability, told)
    replaced: list[str] = []
    with contextlib.ExitStack() as stack:
        _ACTIVE_CAPABILITIES.append(capability)
        stack.callback(_ACTIVE_CAPABILITIES.pop)
        for module_name, attr in FLASHINFER_QUERIES:
            try:
                original = getattr(importlib.import_module(module_name), attr, None)
            except ModuleNotFoundError:
                original = None
            if original is None:
                continue  # this FlashInfer version has no such query
            answer = answers[attr]
            if hasattr(original, "cache_info"):  # keep FlashInfer's functools.cache, and its dynamo warning
                answer = functools.cache(answer)  # type: ignore[arg-type]
            replaced += stack.enter_context(patched_everywhere(original, answer, "flashinfer"))
        for module_name, attr in FLASHINFER_IMPORT_TIME_ARCH_ANSWERS:
            try:
                context = getattr(importlib.import_module(module_name), attr, None)
            except ModuleNotFoundError:
                context = None
            if context is not None and hasattr(context, "TARGET_CUDA_ARCHS"):
                # FlashInfer's own rule (CompilationContext.__init__): the minor gets an 'a' suffix from SM90 on
                major, minor = capability
                archs = {(major, f"{minor}a" if major >= 9 else str(minor))}
                stack.enter_context(mock.patch.object(context, "TARGET_CUDA_ARCHS", archs))
                replaced.append(f"{module_name}.{attr}.TARGET_CUDA_ARCHS")
        # Below torch.cuda.get_device_capability, which stays the real function object.
        stack.enter_context(mock.patch.object(torch.cuda, "get_device_properties", answers["get_device_properties"]))
        replaced.append("torch.cuda.get_device_properties")
        # Which device is current is a driver query too (CuTe-DSL constructors ask it, 0.6.12's norms).
        stack.enter_context(mock.patch.object(torch.cuda, "current_device", answers["current_device"]))
        replaced.append("torch.cuda.current_device")
        # Below torch.cuda.is_current_stream_capturing (the real function object, so dynamo sees it as on a
        # GPU): the binding it calls, which on a host without a driver raises "CUDA driver version is insufficient".
        graphs = importlib.import_module("torch.cuda.graphs")
        if hasattr(graphs, "_cuda_isCurrentStreamCapturing"):
            stack.enter_context(mock.patch.object(graphs, "_cuda_isCurrentStreamCapturing", answers["is_current_stream_capturing"]))
            replaced.append("torch.cuda.graphs._cuda_isCurrentStreamCapturing")
        yield Simulation(capability, tuple(sorted(replaced)), told)



# ---- the driver (what the kit's pytest plugin does around a case) --------------------------
def _installed(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def main() -> int:
    mode = MODE1
    versions = {name: _installed(name) for name in ("torch", "flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache")}
    versions["python"] = sys.version.split()[0]
    toolkit = cuda_toolkit_root()
    if toolkit and not os.environ.get("CUDA_HOME"):
        # FlashInfer finds nvcc through CUDA_HOME; without it the trace dies one frame earlier,
        # in get_cuda_path's `which nvcc`. Set it the way a CUDA machine would.
        os.environ["CUDA_HOME"] = toolkit
    ctx = types.SimpleNamespace(torch_device="cpu" if SIMULATE else "cuda:0", execute=not SIMULATE, evidence={})
    device = "simulated SM120 (no GPU; hardware queries answered as 12.0)"
    try:
        if SIMULATE:
            with simulated_sm120() as simulation:
                ctx.evidence["simulated_queries"] = list(simulation.replaced)
                outcome = reproduce(ctx)
        else:
            import torch

            if not torch.cuda.is_available():
                raise KitError("this export runs on a real CUDA GPU and torch sees none: export it with --simulate")
            device = f"{torch.cuda.get_device_name(0)} (compute capability {'.'.join(map(str, torch.cuda.get_device_capability(0)))})"
            outcome = reproduce(ctx)
    except NotApplicable as exc:
        verdict, reason, outcome = Verdict.NOT_APPLICABLE, str(exc), None
    except (KitError, ImportError) as exc:
        verdict, reason, outcome = Verdict.ERROR, f"{type(exc).__name__}: {exc}", None
    else:
        verdict, reason = classify(mode, outcome)
    signature = outcome.signature if outcome is not None else None
    print(f"{mode.id} ({mode.title}) on {device}")
    print(f"versions: {json.dumps(versions)}")
    if signature is not None:
        print(f"dynamo raised {signature.exception_type}: {signature.message_head}")
        print(f"graph-break id: {signature.graph_break_id or '-'}; innermost FlashInfer frame: {signature.innermost_library_frame}")
        for frame in signature.frame_chain:
            print(f"    {frame}")
    for warning in outcome.lru_cache_warnings if outcome is not None else ():
        print(f"warning: {warning[:160]}")
    print(f"VERDICT: {verdict.value.upper()}: {reason}")
    print("SIGNATURE: " + json.dumps({
        "mode": mode.id,
        "verdict": verdict.value,
        "reason": reason,
        "simulated": SIMULATE,
        "device": device,
        "versions": versions,
        "evidence": ctx.evidence,
        "signature": signature.to_dict() if signature is not None else None,
    }, sort_keys=True, default=str))
    return {Verdict.REPRODUCED: 1, Verdict.FIXED: 0, Verdict.ERROR: 3}.get(verdict, 2)


if __name__ == "__main__":
    sys.exit(main())
