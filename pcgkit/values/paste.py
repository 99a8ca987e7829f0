"""Undo what pasting does to a log, and pick the lines worth reading in a large one. Pure: no I/O.

A crash log reaches a triager changed by the way it travelled: Markdown quotes (`> `), HTML-escaped
quotes (`&quot;`), lines hard-wrapped at 80 columns, a whole traceback flattened onto one line by a
web page or a log collector, CRLF line ends, logger and rank prefixes. The one log reader
(pcgkit.values.logread.read_log) calls `paste_segments` on every line it reads and `unwrap` on a
short paste, so every consumer (the e2e verdict, `pcgkit triage`) sees the log as it was printed.

`interesting_lines` is the speed half: a 10 MB server log is mostly healthy progress lines, so the
reader finds the few lines that can matter with `str.find` over the whole text (C speed) and reads
only those and their neighbours, instead of running its patterns over every line.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import html
import re
from typing import Iterable, NamedTuple

# "> ", "> > " (nested quotes) but not a ">>> " interpreter prompt.
_QUOTE_RE = re.compile(r"^(?:[ \t]*>(?!>>)[ \t]?)+")
# Where a flattened line holds the start of another traceback element: a frame, a traceback head,
# dynamo's user-code section, or an exception "<dotted.Type>: " after whitespace (mid-line).
_FLAT_SPLIT_RE = re.compile(
    r"(?<=\S)\s+(?=File \"|Traceback \(most recent call last\)|from user code:)"
    r"|(?:(?<=\S\s)|(?<=[|\]]))(?=(?:[a-z_][\w]*\.)*(?:[A-Z]\w*(?:Error|Exception)|Unsupported): \S)"
)
# A frame reference outside a traceback: "flashinfer/jit/cpp_ext.py:91 is_cuda_version_at_least(" or
# "cpp_ext.py:73 subprocess.check_output" (arrow chains in notes, docstrings, issue prose).
FRAME_REF_RE = re.compile(r"(?P<file>[\w./-]+\.py|[\w./-]+/[\w]+):(?P<line>\d+),? (?:in )?(?P<function>[A-Za-z_]\w*)")


def paste_segments(raw: str) -> list[str]:
    """One physical line as the segments it was printed as: quotes and HTML escapes undone, a flattened
    traceback split back into its elements. A line with none of these comes back unchanged."""
    line = raw
    if line.lstrip().startswith(">"):
        line = _QUOTE_RE.sub("", line)
    if "&" in line and ";" in line:
        line = html.unescape(line)
    if line.count('File "') > 1 or ("Error" in line or "Exception" in line or "Unsupported" in line
                                    or "from user code" in line or "Traceback" in line):
        parts = _FLAT_SPLIT_RE.split(line)
        if len(parts) > 1:
            return [p for p in parts if p is not None and p.strip()] or [line]
    return [line]


# The widths terminals, mail clients and chat tools hard-wrap at.
_WRAP_WIDTHS = frozenset({72, 76, 78, 79, 80, 100, 120, 132})


def unwrap(lines: list[str]) -> list[tuple[int, str]]:
    """(first physical line number, text) with hard wraps joined: a paste wrapped at a fixed width has
    many lines of exactly its longest length, and each of those continues on the next line."""
    numbered = list(enumerate(lines, start=1))
    width = max((len(text) for text in lines), default=0)
    if width not in _WRAP_WIDTHS or len({text for text in lines if len(text) == width}) < 3:
        return numbered
    out: list[tuple[int, str]] = []
    carry: tuple[int, str] | None = None
    for number, text in numbered:
        if carry is not None:
            number, text = carry[0], carry[1] + text
            carry = None
        if len(text) % width == 0 and len(text) >= width:
            carry = (number, text)
            continue
        out.append((number, text))
    if carry is not None:
        out.append(carry)
    return out


def _hits(text: bytes, needle: bytes, limit: int | None) -> list[int]:
    """Offsets of `needle` in text: all, or the first and the last `limit` (lines that repeat by the thousand,
    progress bars, matter only where they start and end)."""
    found: list[int] = []
    pos = text.find(needle)
    while pos != -1 and (limit is None or len(found) < limit):
        found.append(pos)
        pos = text.find(needle, pos + len(needle))
    if limit is not None and pos != -1:
        tail: list[int] = []
        end = len(text)
        while len(tail) < limit:
            pos = text.rfind(needle, 0, end)
            if pos == -1 or pos <= found[-1]:
                break
            tail.append(pos)
            end = pos
        found.extend(reversed(tail))
    return found


def interesting_lines(text: str, needles: Iterable[tuple[str, int, int | None]]) -> list[int]:
    """0-based indexes of the lines that contain a needle, each with the lines that follow it.

    needles: (text, lines kept after each hit, at most this many hits from each end; None: every hit)."""
    # bytes: a log with one non-ASCII character (a progress bar's block) is a 4-byte-per-character str, several
    # times slower to search
    data = text.encode("utf-8", "surrogatepass")
    newlines = [m.start() for m in re.finditer(b"\n", data)]  # line i (0-based) ends at newlines[i]
    keep: set[int] = set()
    total = len(newlines) + 1
    for needle, after, limit in needles:
        last = -1
        for pos in _hits(data, needle.encode(), limit):
            index = bisect.bisect_left(newlines, pos)
            if index == last:
                continue
            last = index
            keep.update(range(index, min(index + after + 1, total)))
    return sorted(keep)


# --- a log of any length in bounded memory --------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class LogExcerpt:
    """What is kept of a log read as a stream: the whole text when it fits (numbers None), else its head and its
    tail in full and, between them, the lines a needle selects (with their neighbours), each line with its number."""

    text: str
    numbers: tuple[int, ...] | None  # 1-based physical line of each line of `text`; None: `text` is the whole log


class _Block(NamedTuple):
    first: int  # 0-based physical number of its first line
    data: bytes  # whole lines, newline-separated (no final newline)


def _rows(blocks: Iterable[_Block]) -> list[tuple[int, bytes]]:
    return [(block.first + i, row) for block in blocks for i, row in enumerate(block.data.split(b"\n"))]


def excerpt_stream(chunks: Iterable[bytes], needles: Iterable[tuple[str, int, int | None]], *,
                   head_bytes: int = 4 * 1024**2, tail_bytes: int = 8 * 1024**2,
                   middle_bytes: int = 8 * 1024**2, block_bytes: int = 1024**2,
                   longest_line: int = 4 * 1024**2) -> LogExcerpt:
    """A log of any length, read once as it streams in, in memory bounded by the four sizes: the first
    `head_bytes` and the last `tail_bytes` whole (the start-up banner with its versions; the crash at the end),
    and of what lies between, the lines `interesting_lines` selects, up to `middle_bytes` (the earliest half
    and the latest half of them), each give or take one `block_bytes` block of whole lines. A line longer than
    `longest_line` is cut there. Pure over the chunks."""
    needles = tuple(needles)
    head: list[_Block] = []
    tail: collections.deque[_Block] = collections.deque()
    early: list[tuple[int, bytes]] = []
    late: collections.deque[tuple[int, bytes]] = collections.deque()
    sizes = {"head": 0, "tail": 0, "early": 0, "late": 0}
    dropped = False
    next_line, pending, read = 0, b"", 0

    def evict(block: _Block) -> None:
        nonlocal dropped
        dropped = True
        rows = block.data.split(b"\n")
        for index in interesting_lines(block.data.decode("utf-8", "replace"), needles):
            row = rows[index]
            if sizes["early"] < middle_bytes // 2:
                early.append((block.first + index, row))
                sizes["early"] += len(row) + 1
            else:
                late.append((block.first + index, row))
                sizes["late"] += len(row) + 1
        while sizes["late"] > middle_bytes // 2 and late:
            sizes["late"] -= len(late.popleft()[1]) + 1

    def add(data: bytes) -> None:
        nonlocal next_line
        block = _Block(next_line, data)
        next_line += data.count(b"\n") + 1
        if sizes["head"] < head_bytes:
            head.append(block)
            sizes["head"] += len(data) + 1
            return
        tail.append(block)
        sizes["tail"] += len(data) + 1
        while sizes["tail"] - len(tail[0].data) - 1 >= tail_bytes:
            old = tail.popleft()
            sizes["tail"] -= len(old.data) + 1
            evict(old)

    for chunk in chunks:
        read += len(chunk)
        pending += chunk
        while len(pending) >= block_bytes:  # whole lines, in blocks of about block_bytes
            cut = pending.rfind(b"\n", 0, block_bytes)
            if cut == -1:
                cut = pending.find(b"\n", block_bytes, longest_line)
            if cut == -1:
                if len(pending) < longest_line:
                    break
                add(pending[:longest_line])  # one endless line: cut, counted as one more line
                pending = pending[longest_line:]
                continue
            add(pending[:cut])
            pending = pending[cut + 1:]
    if pending or read:  # the last line (after a final newline: the empty one, as `text.split("\n")` counts it)
        add(pending)
    if not dropped:
        return LogExcerpt(b"\n".join(b.data for b in [*head, *tail]).decode("utf-8", "replace"), None)
    rows = _rows(head) + early + [row for row in late if not early or row[0] > early[-1][0]] + _rows(tail)
    text = b"\n".join(row for _, row in rows).decode("utf-8", "replace")
    return LogExcerpt(text, tuple(number + 1 for number, _ in rows))


# --- steps: a call path written by hand (arrow chains, Markdown tables of steps, frames without paths) --------
# "a.py:12 fn -> b.py:34 return x.y() -> fn2(...) -> subprocess.check_output([...])", one step per line under
# an arrow ("#   → flashinfer/jit/core.py:261  return self.aot_path.exists()"), or a table row whose cell
# holds such a chain. Only the syntax is read here: where a pathless step is defined is FlashInfer's own
# source, read by pcgkit.triage.steps from a table of its release wheels.
_ARROW_RE = re.compile(r"\s*(?:->|→|⟶|=>)\s*")
_STEP_FILE_RE = re.compile(r"^(?P<file>[\w.<>/-]*[\w>]\.py)(?::(?P<line>\d+))?(?:[:,]?\s+(?:in\s+)?(?P<rest>.*))?$")
# the called name in a step's code: "return self.aot_path.exists()" -> self.aot_path.exists; "if self.is_aot:" ->
# self.is_aot; "is_cuda_version_at_least(\"12.8\")" -> is_cuda_version_at_least; "Popen.__init__" -> Popen.__init__
_CALL_RE = re.compile(r"(?P<name>[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\s*\(")
_NAME_RE = re.compile(r"^(?:return |if |elif |await |not |[\w.]+(?:, *[\w.]+)* = )?(?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*):?$")
_EXCEPTION_STEP_RE = re.compile(r"^(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Unsupported)\b")


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of a hand-written call path: the file and line when given, and the name it calls or names."""

    file: str  # "" when the step names no file ("is_cuda_version_at_least(\"12.8\")")
    line: int  # 0 when none
    call: str  # "is_cuda_version_at_least", "subprocess.check_output", "self.aot_path.exists"; "" when not code
    code: bool = False  # the step quotes a source line (a call with arguments, `return`, `if`): the call site, not a def


def _step(piece: str) -> Step | None:
    text = piece.strip().strip("`*#>|").strip().strip("`").strip()
    if not text or _EXCEPTION_STEP_RE.match(text):
        return None
    file, line, rest = "", 0, text
    match = _STEP_FILE_RE.match(text)
    if match:
        file, line, rest = match["file"], int(match["line"] or 0), (match["rest"] or "").strip().strip("`").strip()
    call = _CALL_RE.search(rest)
    name = call["name"] if call else (m["name"] if (m := _NAME_RE.match(rest)) else "")
    if not file and (not name or ("_" not in name and "." not in name and not call)):
        return None  # prose ("pod restart"), not a step
    code = bool(call) or rest.startswith(("return ", "if ", "elif ", "await ")) or "=" in rest
    return Step(file, line, name, code)


def parse_steps(text: str) -> list[Step]:
    """The steps a line writes as a call path (arrows, or a Markdown table row's cells with arrows); [] for any other
    line. A line that starts with an arrow continues a chain of the lines above it. Pure."""
    if "->" not in text and "→" not in text and "⟶" not in text:
        return []
    if text.lstrip().startswith("def ") or "lambda" in text:
        return []  # a type hint, not a chain
    cells = [c for c in text.split("|") if c.strip()] if text.lstrip().startswith("|") else [text]
    pieces = [p for cell in cells if _ARROW_RE.search(cell) for p in _ARROW_RE.split(cell) if p.strip()]
    return [step for p in pieces if (step := _step(p)) is not None]
