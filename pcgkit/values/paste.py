"""Undo what pasting does to a log, and pick the lines worth reading in a large one. Pure: no I/O.

A crash log reaches a triager changed by the way it travelled: Markdown quotes (`> `), HTML-escaped
quotes (`&quot;`), lines hard-wrapped at 80 columns, a whole traceback flattened onto one line by a
web page or a log collector, CRLF line ends, logger and rank prefixes. The one log reader
(pcgkit.values.signature.read_log) calls `paste_segments` on every line it reads and `unwrap` on a
short paste, so every consumer (the e2e verdict, `pcgkit triage`) sees the log as it was printed.

`interesting_lines` is the speed half: a 10 MB server log is mostly healthy progress lines, so the
reader finds the few lines that can matter with `str.find` over the whole text (C speed) and reads
only those and their neighbours, instead of running its patterns over every line.
"""

from __future__ import annotations

import bisect
import html
import re
from collections import Counter
from typing import Iterable

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
    lengths = Counter(len(text) for text in lines if len(text) >= 60)
    if not lengths:
        return numbered
    width = max(lengths)
    at_width = {text for text in lines if len(text) == width}
    if width not in _WRAP_WIDTHS or len(at_width) < 3:
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


def line_starts(data: bytes) -> list[int]:
    """Offsets of every newline in `data` (line i, 0-based, ends at starts[i]). Bytes: a log with one
    non-ASCII character (a progress bar's block) is a 4-byte-per-character str, several times slower to search."""
    return [m.start() for m in re.finditer(b"\n", data)]


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
    data = text.encode("utf-8", "surrogatepass")
    newlines = line_starts(data)
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
