"""The one reader of logs as people paste them: a whole log (a server's stderr, `docker logs`, a GitHub paste
cut at both ends) cleaned line by line (pcgkit.values.paste) and scanned once into a LogReading: every failure
announcement with its Signature (pcgkit.values.signature), every frame, the piecewise capture events, a
hand-written call path, with the line numbers they came from. The e2e verdict (pcgkit.e2e.logclass) and
`pcgkit triage` both read it. Pure: no I/O; linear in the log's size whatever it holds (a large log is cut to
the lines that can matter first, and at most MAX_FAILURES failures are read in full, the earliest first).
"""

from __future__ import annotations

import bisect
import dataclasses
import enum
import re

from pcgkit.values.paste import FRAME_REF_RE, Step, interesting_lines, parse_steps, paste_segments, unwrap
from pcgkit.values.signature import (
    FRAME_RE,
    SKIPPED_CALLABLE_RE,
    Frame,
    Signature,
    innermost_library_frame,
    package_relative,
    parse_frames,
    parse_message,
    skipped_callable_name,
)

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
# Prefixes that loggers and log collectors put before the message; several can stack
# ("(Worker_TP2 pid=99) ERROR 04-09 20:31:10 [multiproc_executor.py:949] ...").
_RECORD_PREFIX_RES = (
    re.compile(r"^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?: [A-Z]{2,4}\d+)*\] ?"),  # SGLang [... TP0]
    re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z? "),  # docker logs --timestamps
    re.compile(r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[^\]]+\] ?"),  # vLLM
    re.compile(r"^[IWEFV]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]\s]+\] ?"),  # torch's glog-style TORCH_LOGS lines
    re.compile(r"^\d\d:\d\d:\d\d-\d+ [A-Z]+ +"),  # rich console (sdnext)
    re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ - [\w.]+ - [A-Z]+ - "),  # Python logging's default format
)
_SOURCE_PREFIX_RES = (
    re.compile(r"^\([\w.-]+ pid=\d+\) ?"),  # vLLM / Ray worker: (Worker_TP2 pid=99), (SGLangWorker pid=3)
    re.compile(r"^\[rank\d+\]: ?"),  # torchrun
    re.compile(r"^\[(?:TP|DP|EP|PP|PP\d+_TP|rank)\d+(?: (?:TP|DP|EP|PP)\d+)*\] ?"),  # SGLang rank tag alone: [TP0]
    re.compile(r"^(?:TP|rank)\d+ ?[:|] "),  # "TP3: ", "rank1 | " (collected multi-rank output)
    re.compile(r"^[\w.-]+(?:-\d+)? +\| "),  # docker compose: "sglang-1  | "
)
# A flattened paste keeps every worker line on one physical line; progress bars redraw with \r.
_SEGMENT_SPLIT_RE = re.compile(r"\r|(?=\([\w.-]+ pid=\d+\) )")

# "torch._dynamo.exc.Unsupported: ...", bare "Exception: ...", "torch.OutOfMemoryError:" (no head),
# and SGLang's "Scheduler hit an exception: torch._dynamo.exc.Unsupported: ..." on one line.
_EXCEPTION_LINE_RE = re.compile(
    r"^(?:[\w ]{0,40}? hit an exception: )?"
    r"(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*(?:Error|Exception|Interrupt|Failed\w*)|Exception|\w*Unsupported))"
    r":(?: (?P<head>.*))?$"
)
_TRACEBACK_RE = re.compile(r"Traceback \(most recent call last\)")
_CHAIN_RE = re.compile(r"direct cause of the following exception|During handling of the above exception")
_HIT_EXCEPTION_RE = re.compile(r"\b\w+ hit an exception\b")
# SGLang's piecewise runner prints the message first, then its hint block, then the traceback.
# Each release's own wording, read from its PyPI wheel on 2026-12-07 (`pip download --no-deps sglang==X`, 0.5.10
# and later with `--platform manylinux_2_34_x86_64`; the date is the wheel's file date):
# - 0.5.8 (2026-01-23) and 0.5.9 (2026-02-23): `raise Exception(f"Capture cuda graph failed: {e}\n{PIECEWISE_...}")`
#   (model_executor/piecewise_cuda_graph_runner.py:280 / :281), whose hint block ends "3. disable Piecewise CUDA
#   graph by unset --enable-piecewise-cuda-graph" (:749 in 0.5.8). The first line is also the decode runner's
#   (cuda_graph_runner.py:369) in every release: it is read as an exception, and only the hint marks it piecewise.
# - 0.5.10 (2026-04-05) to 0.5.13.post1 (2026-06-15): "Piecewise CUDA Graph failed with error: <e>"
#   (compilation/piecewise_context_manager.py:49, logger.error).
# - 0.5.14 (2026-06-26): "Piecewise CUDA graph failed." (runner_backend_utils/tc_piecewise_cuda_graph/
#   context_manager.py:105), and `raise Exception(f"Capture prefill CUDA graph failed: {e}\n...")`
#   (model_executor/runner/prefill_cuda_graph_runner.py:228, :317) when the prefill backend cannot be built.
# - 0.5.15 (2026-07-10): "Capture prefill CUDA graph failed: <e>" (runner/prefill_cuda_graph_runner.py:270, for
#   tc_piecewise and breakable), then "Fail when using backend: {backend} for prefill runner." (runner_backend_utils/
#   __init__.py:24; the message follows on later lines). Later: "Piecewise CUDA Graph capture failed." (sglang#28291).
_PCG_FAILED_RE = re.compile(
    r"Piecewise CUDA Graph failed with error: ?(?P<head>.*)|Piecewise CUDA [Gg]raph (?:capture )?failed\.|"
    r"Fail when using backend: \w+ for prefill runner"
)
# Failures printed by C++/CUDA code, not Python: no exception line at all.
_NATIVE_ERROR_RE = re.compile(
    r"^(?P<type>CUDA Error|ptxas fatal)\s*:\s*(?P<head>.*)|^Search for `(?P<code>cuda\w+)'"  # PyTorch's CUDA error tail
)
# FlashInfer JIT module names ("batch_mla_attention_dtype_q_bf16_dtype_kv_bf16_..."), and library
# files named anywhere (dynamo's "FAILED INLINING <code object ..., file ".../flashinfer/prefill.py">).
_FLASHINFER_JIT_URI_RE = re.compile(r"\b[a-z_]+_dtype_q_[a-z0-9]+_dtype_kv_\w+")
_PACKAGE_PATH_RE = re.compile(r"(?:site|dist)-packages/([A-Za-z_]\w*)/")
# Dynamo's own wording when the exception line is missing or buried mid-line (rich consoles).
# Also what SGLang's "Piecewise CUDA Graph failed with error:" prints without dynamo's exception line:
# the heads of dynamo's graph-break messages (torch 2.7-2.14 wordings).
_DYNAMO_PHRASE_RE = re.compile(
    r"Skip calling `torch\.compiler\.disable\(\)`d function|Attempted to call function marked as skipped|"
    r"Attempted to graph break in an active context manager|Attempted to inline function marked as skipped|"
    r"Unsupported (?:method|function) call|Unsupported context manager|Failed to trace builtin operator|"
    r"Dynamo failed to run FX node with fake tensors|torch\.\* op returned non-Tensor|"
    r"Data-dependent branching|Call to `torch\._dynamo\.graph_break\(\)`|Graph break under GenericContextWrappingVariable|"
    r"Dynamo does not know how to trace"
)
# Python's fault handler (a native crash: segfault, abort): "Fatal Python error: Aborted", then each thread's stack,
# most recent call FIRST ("Current thread 0x00007f95ca716740 (most recent call first):").
_FAULT_DUMP_RE = re.compile(r"^(?:Fatal Python error: (?P<error>.+)|(?:Current thread|Thread) 0x[0-9a-f]+ \(most recent call first\):)")
# An error stated in words, with no exception line of its own: CUDA/cuDNN/NCCL/cuBLAS status errors, a capability
# refusal, an architecture a compiler rejects. Judged only when the log shows no other failure (prose around a real
# traceback often names errors too).
_STATED_ERROR_RE = re.compile(
    r"\b(?:CUDA|cuDNN|CUDNN|cudnn|NCCL|nccl|cuBLAS|CUBLAS|cublas)(?:_frontend)? ?(?:[Ee]rror|ERROR)\b|"
    r"\b(?:CUDNN|CUBLAS|CUSPARSE|CUFFT)_STATUS_(?!SUCCESS)[A-Z_]+|\bnccl(?!Success)[A-Z]\w*Error\b|"
    r"[Mm]inimum capability:? \d+|[Cc]urrent capability:? \d+|not supported (?:for|on) (?:the current GPU|this GPU|sm_?\d+)|"
    r"not supported in this architecture|illegal memory access|device-side assert|an illegal instruction"
)
# ... but not a warning that works around it ("not supported on sm_90, falling back to triton"): the run goes on.
_NOT_AN_ERROR_RE = re.compile(r"[Ww]arn|WARN|fall(?:ing)? ?back|instead|[Ss]kipp|will be disabled|[Dd]isabling|using ")
_STATED_NEEDLES = ("rror", "STATUS_", "apability", "not supported", "illegal", "device-side")
# A paste that starts inside dynamo's message: its explanation, hints or user-code section, no head at all.
_HEADLESS_DYNAMO_RE = re.compile(r"^\s*(?:Explanation: |Hint: |Developer debug context: |from user code:)")
# A launch that turns piecewise CUDA graphs off (command line or server_args dump), not SGLang's hint to do so.
_PIECEWISE_OFF_RE = re.compile(
    r"--disable-piecewise-cuda-graph\b|disable_piecewise_cuda_graph=True|--cuda-graph-backend-prefill[= ]disabled\b|"
    r"cuda_graph_backend_prefill='disabled'|enable_piecewise_cuda_graph=False"
)
# A line that launches (a command line) or dumps the launch arguments: where a flag is a fact, not advice.
_LAUNCH_RE = re.compile(r"launch_server|sglang serve|-m sglang|--model(?:-path)?[ =]|server_args|ServerArgs\(|^\s*--[\w-]+")
_HINT_RE = re.compile(r"[Tt]o work around|disable (?:the )?prefill CUDA graph by|change to breakable by|add .{0,80} to your launch command|[Tt]ry (?:adding|passing|running)")
# Lines that can matter, found with str.find over a large log: (needle, lines kept after it, hits kept
# from each end or None for all). A failure's start brings its block; progress and capture lines repeat by
# the thousand and matter only where they start and end.
_EVENT_NEEDLES = ("raph", "RAPH", "num tokens", "ready to roll", "Uvicorn", "startup complete", "capturing finished",
                  "iecewise", "prefill", "pid=", "lru_cache", "->", "→")
_FAILURE_NEEDLES = (*_STATED_NEEDLES, 'File "', "Hint:", "CUDA Error", "Search for `cuda", "Dynamo", "op returned", "Data-dependent",
                    "graph_break", "Graph break", "Failed to trace")
_BLOCK_NEEDLES = ("Traceback", "rror:", "xception:", "Unsupported", "failed with error", "hit an exception", "Attempted to",
                  "Skip calling", "from user code", "Explanation:", "ptxas fatal")
# Failure needles keep their first (and last) _FAILURE_HITS hits, not all: the earliest failure is the one judged,
# so a log of tracebacks printed over and over (every rank, every retry) costs what its first ones cost.
# (A block needle keeps 60 lines after each hit: 48 hits from each end are at most ~5,800 lines.)
# The same needles select what a log read as a stream keeps between its head and its tail (paste.excerpt_stream).
_FAILURE_HITS, _BLOCK_HITS = 256, 48
LOG_NEEDLES: tuple[tuple[str, int, int | None], ...] = (
    *((n, 2, 64) for n in _EVENT_NEEDLES), *((n, 2, _FAILURE_HITS) for n in _FAILURE_NEEDLES),
    *((n, 60, _BLOCK_HITS) for n in _BLOCK_NEEDLES))
_SELECT_ABOVE = 256 * 1024  # below this a log is read line by line in full
_FAILURE_BLOCK_LINES = 400  # a dynamo message with its user-code frames fits easily
_PREAMBLE_LINES = 40
# An indented or labelled line of a dynamo message already announced (its explanation, its hints): not a new one.
_INSIDE_MESSAGE = (" ", "\t", "Explanation:", "Hint:", "Developer debug context:")
# Failures read in full, the earliest first (the diagnosis judges the first and reads the next few for a cause):
# bounded, so the work per failure never depends on how many more the log prints.
MAX_FAILURES = 16


class CaptureEvent(str, enum.Enum):
    """What a log line says about piecewise CUDA graph capture (SGLang and vLLM wordings)."""

    BEGIN = "begin"
    END = "end"
    FAILED = "failed"
    DISABLED = "disabled"
    READY = "server-ready"
    # SGLang's compile backend finished a graph (dynamo traced it, the backend compiled it):
    # "Compiling a graph for dynamic shape takes 1.23 s" (sglang/srt/compilation/backend.py, 0.5.x).
    COMPILED = "compiled"


# Every capture-event wording contains one of these (checked with `in` before any regex runs).
_CAPTURE_NEEDLES = ("raph", "RAPH", "num tokens", "ready to roll", "Uvicorn", "startup complete", "capturing finished",
                    "prefill runner")
# (COMPILED's wording "Compiling a graph for ..." contains "raph" too.)
_CAPTURE_EVENT_RES: tuple[tuple[CaptureEvent, re.Pattern[str]], ...] = (
    (CaptureEvent.END, re.compile(r"Capture (?:piecewise|target prefill) CUDA graph end")),
    (CaptureEvent.COMPILED, re.compile(r"Compiling a graph for (?:dynamic shape|shape \S+) takes [0-9.]+ s")),
    (CaptureEvent.BEGIN, re.compile(
        r"Capture (?:piecewise|target prefill) CUDA graph begin|Capture cuda graph num tokens \[|"
        r"C(?:ompil|aptur)ing num tokens \(num_tokens=|Capturing CUDA graphs \([^)]*PIECEWISE")),
    (CaptureEvent.FAILED, re.compile(  # each release's wording: the comment above _PCG_FAILED_RE
        r"Piecewise CUDA Graph failed with error|Piecewise CUDA Graph is enabled by default as an experimental|"
        r"Piecewise CUDA [Gg]raph (?:capture )?failed\.|Fail when using backend: \w+ for prefill runner|"
        r"Capture prefill CUDA graph failed:|disable Piecewise CUDA graph by unset --enable-piecewise-cuda-graph")),
    (CaptureEvent.DISABLED, re.compile(r"[Dd]isabl\w* [Pp]iecewise (?:CUDA|cuda) [Gg]raph")),
    (CaptureEvent.READY, re.compile(
        r"The server is fired up and ready to roll|Uvicorn running on|Application startup complete|"
        r"Graph capturing finished in")),
)
_VLLM_PIECEWISE_DONE_RE = re.compile(r"Capturing CUDA graphs \([^)]*PIECEWISE\): 100%")


@dataclasses.dataclass(frozen=True)
class LogLine:
    number: int  # 1-based physical line in the input
    text: str  # one segment, ANSI and record prefixes removed

    def __str__(self) -> str:
        return f"{self.number}: {self.text[:240]}"


@dataclasses.dataclass(frozen=True)
class LogFailure:
    """One failure the log announces: an exception line, SGLang's piecewise message, or frames alone."""

    kind: str  # exception | piecewise-error | native-error | fault-dump | stated-error | frames-only | dynamo-message
    line: LogLine
    exception_type: str | None  # None when the log never prints it (frames-only, SGLang's message)
    head: str
    signature: Signature
    evidence: tuple[LogLine, ...] = ()  # the lines this failure was read from (head, frames, hints)
    context: str = ""  # its traceback and message text (source lines included), for the diagnosis
    preamble: str = ""  # the lines just before it (since the previous failure): a paste's prose, a hint, a chain


@dataclasses.dataclass(frozen=True)
class LogReading:
    lines: int
    failures: tuple[LogFailure, ...]  # in log order; the first is the earliest real failure
    frames: tuple[tuple[int, Frame], ...]  # every traceback frame, with its line number
    capture_events: tuple[tuple[CaptureEvent, LogLine], ...]
    lru_cache_warnings: tuple[LogLine, ...]
    packages_named: frozenset[str] = frozenset()  # top-level packages of every site-packages path in the log
    announced: tuple[LogLine, ...] = ()  # "Traceback (most recent call last)", "... hit an exception"
    piecewise_off: tuple[LogLine, ...] = ()  # launch flags / server_args that turn piecewise CUDA graphs off
    frame_refs: tuple[tuple[int, Frame], ...] = ()  # "path.py:NN function" outside tracebacks (notes, arrow chains)
    hints: tuple[LogLine, ...] = ()  # what the log itself advises ("To work around this error, add ... to your launch command")
    excerpt: str = ""  # the cleaned text of a short log (a paste), for evidence outside any failure block
    steps: tuple[tuple[int, Step], ...] = ()  # a call path written by hand (arrow chains, tables of steps), in order

    @property
    def failure(self) -> LogFailure | None:
        return self.failures[0] if self.failures else None

    def events(self, kind: CaptureEvent) -> list[LogLine]:
        return [line for event, line in self.capture_events if event is kind]

    @property
    def capture_began(self) -> bool:
        return bool(self.events(CaptureEvent.BEGIN) or self.events(CaptureEvent.END))

    @property
    def capture_ended(self) -> bool:
        return bool(self.events(CaptureEvent.END))


def clean_lines(text: str, keep: list[int] | None = None, numbers: tuple[int, ...] | None = None) -> list[LogLine]:
    """The log as segments: CRLF and \\r redraws split, ANSI colour and logger prefixes removed, what a paste
    did undone (pcgkit.values.paste). `keep`: only these 0-based lines of `text` (a large log); `numbers`: the
    log's own number of each line of `text` (an excerpt of a longer log, pcgkit.values.paste.excerpt_stream). Pure."""
    raw_lines = text.replace("\r\n", "\n").split("\n")
    if numbers is not None:
        numbered = [(numbers[i], raw_lines[i]) for i in (keep if keep is not None else range(len(raw_lines)))
                    if i < min(len(raw_lines), len(numbers))]
    elif keep is None:
        numbered = unwrap(raw_lines) if len(text) < _UNWRAP_LIMIT else list(enumerate(raw_lines, start=1))
    else:
        numbered = [(i + 1, raw_lines[i]) for i in keep if i < len(raw_lines)]
    out: list[LogLine] = []
    for number, raw in numbered:
        if "\x1b" in raw:
            raw = _ANSI_RE.sub("", raw)
        for segment in _SEGMENT_SPLIT_RE.split(raw) if ("\r" in raw or "pid=" in raw) else (raw,):
            for piece in paste_segments(_strip_prefixes(segment.rstrip())):
                text = _strip_prefixes(piece.rstrip())
                # TP ranks printing the same line at once: read it once (ranks interleave line by line)
                if text and out and out[-1].text == text and out[-1].number != number:
                    continue
                out.append(LogLine(number, text))
    return out


_UNWRAP_LIMIT = 1024 * 1024  # hard-wrapped pastes are short; a server log is never re-joined


# One alternation, applied until nothing more comes off: one regex call per prefix, not one per pattern.
_ANY_PREFIX_RE = re.compile("|".join(f"(?:{p.pattern})" for p in _SOURCE_PREFIX_RES + _RECORD_PREFIX_RES))


def _strip_prefixes(segment: str) -> str:
    while segment:
        match = _ANY_PREFIX_RE.match(segment)
        if match is None or not match.end():
            return segment
        segment = segment[match.end() :]
    return segment


def read_log(text: str, lru_marker: str = "lru_cache", numbers: tuple[int, ...] | None = None) -> LogReading:
    """Scan a whole log once. Pure; linear in the log's size (a large one: only the lines that can matter).
    `numbers`: `text` is an excerpt of a longer log and these are its lines' own numbers (LogExcerpt.numbers)."""
    keep = interesting_lines(text, LOG_NEEDLES) if len(text) > _SELECT_ABOVE else None
    lines = clean_lines(text, keep, numbers)
    off: list[LogLine] = []
    hints: list[LogLine] = []
    frames: list[tuple[int, Frame]] = []
    frame_index: list[int] = []  # positions in `lines` of frame segments
    events: list[tuple[CaptureEvent, LogLine]] = []
    warnings: list[LogLine] = []
    starts: list[tuple[int, str]] = []  # (position, kind) of failure announcements
    announced: list[LogLine] = []
    steps: list[tuple[int, Step]] = []
    stated: list[tuple[int, str]] = []  # errors stated in words: judged only where nothing else failed
    for pos, line in enumerate(lines):
        t = line.text
        if ("->" in t or "→" in t) and len(steps) < _FAILURE_BLOCK_LINES:
            steps.extend((line.number, step) for step in parse_steps(t))
        if 'File "' in t:
            match = FRAME_RE.search(t)
            if match is None and pos + 1 < len(lines):  # a frame line wrapped by the paste
                match = FRAME_RE.search(t + lines[pos + 1].text.lstrip()) or FRAME_RE.search(t + " " + lines[pos + 1].text.lstrip())
            if match:
                frames.append((line.number, Frame(package_relative(match["file"]), int(match["line"]), match["function"])))
                frame_index.append(pos)
                continue
        if ("Traceback" in t or "hit an exception" in t) and (_TRACEBACK_RE.search(t) or _HIT_EXCEPTION_RE.search(t)):
            announced.append(line)
            if ":" not in t:
                continue
        if lru_marker in t and "Dynamo" in t:
            warnings.append(line)
        if any(needle in t for needle in _CAPTURE_NEEDLES):
            for event, pattern in _CAPTURE_EVENT_RES:
                if pattern.search(t):
                    events.append((event, line))
                    break
        if ("iecewise" in t or "prefill" in t) and _PIECEWISE_OFF_RE.search(t):
            if _HINT_RE.search(t):
                hints.append(line)
            elif _LAUNCH_RE.search(t):
                off.append(line)
        if (":" not in t and "skipped" not in t and "Skip calling" not in t and "raph" not in t
                and not any(n in t for n in _STATED_NEEDLES)):
            continue  # every failure announcement below has a colon, dynamo's own words or SGLang's graph wording
        kind = _failure_start(t, pos, starts)
        if kind == "stated-error":
            stated.append((pos, kind))
        elif kind is not None:
            starts.append((pos, kind))
    if "PIECEWISE): 100%" in text:
        done = next((line for line in lines if _VLLM_PIECEWISE_DONE_RE.search(line.text)), None)
        if done is not None:  # a variant the pattern does not know is no capture end, and no crash
            events.append((CaptureEvent.END, done))
    read = text if keep is None else "\n".join(line.text for line in lines)
    packages = {m.group(1) for m in _PACKAGE_PATH_RE.finditer(read)}
    packages |= {"flashinfer"} if "_dtype_q_" in read and _FLASHINFER_JIT_URI_RE.search(read) else set()
    failures = _failures(lines, starts or stated[:MAX_FAILURES], frame_index, tuple(ln.text.strip() for ln in warnings))
    return LogReading(
        lines=lines[-1].number if lines else 0,
        failures=failures,
        frames=tuple(frames),
        capture_events=tuple(events),
        lru_cache_warnings=tuple(warnings),
        packages_named=frozenset(packages),
        announced=tuple(announced),
        piecewise_off=tuple(off),
        hints=tuple(hints),
        excerpt="\n".join(line.text for line in lines) if keep is None and numbers is None else "",
        frame_refs=_frame_refs(lines) if not frames else (),
        steps=tuple(steps),
    )


def _failure_start(t: str, pos: int, starts: list[tuple[int, str]]) -> str | None:
    """Which failure announcement the line at `pos` is (after `starts`, those before it), or None: "stated-error"
    only for an error stated in words (judged where nothing else failed)."""
    if _PCG_FAILED_RE.search(t):
        return "piecewise-error"
    if ("Fatal Python" in t or "most recent call first" in t) and _FAULT_DUMP_RE.match(t.strip()):
        # one dump: its error line and its threads' stacks
        in_dump = starts and starts[-1][1] == "fault-dump" and pos - starts[-1][0] < _FAILURE_BLOCK_LINES
        return None if in_dump else "fault-dump"
    if _EXCEPTION_LINE_RE.match(t.lstrip()) and not t.startswith((" ", "\t")):
        return "exception"
    if _NATIVE_ERROR_RE.match(t.strip()):
        return "native-error"
    if _DYNAMO_PHRASE_RE.search(t) and "Warning" not in t and not (starts and t.startswith(_INSIDE_MESSAGE)):
        return "dynamo-message"
    if not starts and _HEADLESS_DYNAMO_RE.match(t):
        return "dynamo-message"
    if any(n in t for n in _STATED_NEEDLES) and _STATED_ERROR_RE.search(t) and not _NOT_AN_ERROR_RE.search(t):
        return "stated-error"
    return None


def _frame_refs(lines: list[LogLine]) -> tuple[tuple[int, Frame], ...]:
    """Frames named outside a traceback ("flashinfer/jit/cpp_ext.py:91 is_cuda_version_at_least"), in log order."""
    return tuple((line.number, Frame(package_relative(m["file"]), int(m["line"]), m["function"]))
                 for line in lines if ".py:" in line.text or "/" in line.text
                 for m in FRAME_REF_RE.finditer(line.text))


def _block_end(lines: list[LogLine], start: int, stops: set[int]) -> int:
    """Where a failure's message ends: the next failure or traceback, a chain line, or the cap."""
    end = min(len(lines), start + _FAILURE_BLOCK_LINES)
    for pos in range(start + 1, end):
        if pos in stops or _TRACEBACK_RE.search(lines[pos].text) or _CHAIN_RE.search(lines[pos].text):
            return pos
    return end


def _frames_between(frame_index: list[int], low: int, high: int) -> list[int]:
    """Positions in frame_index strictly between low and high (frame_index is sorted): bisect, not a scan."""
    return frame_index[bisect.bisect_right(frame_index, low) : bisect.bisect_left(frame_index, high)]


def _failures(
    lines: list[LogLine], starts: list[tuple[int, str]], frame_index: list[int], warnings: tuple[str, ...]
) -> tuple[LogFailure, ...]:
    stops = {pos for pos, _ in starts}
    out: list[LogFailure] = []
    consumed: set[int] = set()  # bare exception lines that only repeat a piecewise-error's head
    previous = -1
    for i, (pos, kind) in enumerate(starts):
        if len(out) >= MAX_FAILURES:
            break
        if pos in consumed:
            continue
        line = lines[pos]
        end = _block_end(lines, pos, stops)
        body = "\n".join(ln.text for ln in lines[pos:end])
        exc_type, head, message = _announcement(lines, starts, i, body, consumed, end)
        # the traceback frames printed before the exception line (since the previous failure) are its outer stack
        before = _frames_between(frame_index, previous, pos)
        outer = "\n".join(lines[p].text for p in before)
        signature = parse_message(exc_type or "", message, warnings, extra_frames_text=outer)
        if kind == "fault-dump":  # its stacks print the most recent call first
            dumped = tuple(reversed(parse_frames(body)))
            signature = dataclasses.replace(signature, frame_chain=dumped, innermost_library_frame=innermost_library_frame(dumped))
            head = head or (f"the process died in {dumped[-1].function} ({dumped[-1].short})" if dumped else head)
        if signature.skipped_callable is None and end < len(lines):
            # a paste that runs dynamo's context into the next announcement ("(module: posix, qualname: stat)  →
            # Piecewise CUDA Graph failed."): the callable is the message's, on the line that ends it
            signature = dataclasses.replace(signature, skipped_callable=skipped_callable_name(
                SKIPPED_CALLABLE_RE.search(lines[end].text)))
        inside = _frames_between(frame_index, pos, end)
        # the innermost frames: the last printed, or the first for a fault dump (most recent call first)
        evidence = (line,) + tuple(lines[p] for p in (inside[:2] if kind == "fault-dump" else inside[-2:]))
        first = before[0] if before else pos
        begin = max(first - 1, previous + 1, 0)
        context = "\n".join(ln.text for ln in lines[begin:end][:_FAILURE_BLOCK_LINES * 2])
        preamble = "\n".join(ln.text for ln in lines[max(begin - _PREAMBLE_LINES, previous + 1, 0) : begin])
        out.append(LogFailure(kind, line, exc_type, head, signature, evidence, context, preamble))
        previous = pos
    if not out and frame_index:
        # Frames with no exception line at all (the paste was cut, or the logger dropped it).
        frames = parse_frames("\n".join(lines[p].text for p in frame_index[:_FAILURE_BLOCK_LINES]))
        signature = Signature("", "", innermost_library_frame=innermost_library_frame(frames), frame_chain=frames,
                              lru_cache_warnings=warnings)
        evidence = (lines[frame_index[0]],) + tuple(lines[p] for p in frame_index[-2:])
        # the lines after the last frame: its source line and dynamo's footer ("Set TORCHDYNAMO_VERBOSE=1 ...")
        last = frame_index[min(len(frame_index), _FAILURE_BLOCK_LINES) - 1]
        context = "\n".join(ln.text for ln in lines[max(frame_index[0] - 1, 0) : last + 6])
        out.append(LogFailure("frames-only", lines[frame_index[0]], None, "", signature, evidence, context))
    return tuple(out)


def _announcement(
    lines: list[LogLine], starts: list[tuple[int, str]], i: int, body: str, consumed: set[int], end: int
) -> tuple[str | None, str, str]:
    """(exception type or None, head, message text) of the failure announced at starts[i]."""
    pos, kind = starts[i]
    text = lines[pos].text.strip()
    if kind == "piecewise-error":
        head = (_PCG_FAILED_RE.search(text)["head"] or "").strip()  # type: ignore[index]
        marker = "failed with error:"
        message = (body[body.find(marker) + len(marker) :] if marker in body else body.partition("\n")[2]).lstrip()
        # SGLang ends the same failure's traceback with a bare "<type>: <head>": that is its type.
        # within the message's reach only (its block and one more), so a log of many failures stays linear
        for later_pos, later_kind in starts[i + 1 : i + 1 + _FAILURE_BLOCK_LINES]:
            if later_pos > end + _FAILURE_BLOCK_LINES:
                break
            later = _EXCEPTION_LINE_RE.match(lines[later_pos].text.strip())
            if later_kind == "exception" and later and head and (later["head"] or "").strip()[:60] == head[:60]:
                consumed.add(later_pos)
                return later["type"], head, message
        return None, head, message
    if kind == "stated-error":
        return None, text[:300], body
    if kind == "fault-dump":  # "Fatal Python error: Segmentation fault", or only a thread's stack (the head: where it died)
        match = _FAULT_DUMP_RE.match(text)
        return "Fatal Python error" if match and match["error"] else None, (match["error"] or "") if match else "", body
    if kind == "native-error":
        match = _NATIVE_ERROR_RE.match(text)
        if match["code"]:  # type: ignore[index]
            return "CUDA error", match["code"], body  # type: ignore[index]
        return match["type"], match["head"].strip(), body  # type: ignore[index]
    if kind == "dynamo-message":
        match = _DYNAMO_PHRASE_RE.search(text)
        if match is None:  # the paste starts inside the message (explanation, hints or user code)
            return None, "", body
        return None, text[match.start() :].strip(), body[body.find(match.group(0)) :]
    match = _EXCEPTION_LINE_RE.match(text)
    exc_type = match["type"]  # type: ignore[index]
    head = (match["head"] or "").strip()  # type: ignore[index]
    return exc_type, head, body[body.find(exc_type) + len(exc_type) + 1 :].lstrip()


def parse_log(text: str, lru_marker: str = "lru_cache") -> Signature | None:
    """Signature of the earliest failure in a log (a server's stderr); None when it prints no failure.

    The earliest wins: a chained traceback prints its cause first, and what follows a crash
    ("Received sigquit", the wrapper's re-raise) is noise. A paste with frames but no exception
    line has no signature here; read_log() still returns those frames.
    """
    failure = read_log(text, lru_marker).failure
    if failure is None or failure.kind == "frames-only":
        return None
    return failure.signature
