"""A huge reason never stalls the terminal: no rich highlighting (quadratic in a string's length) and
notes cut to a screen's worth, so a 64 KB or 1 MB string prints in well under a second (the time a 40 MB
one held the main thread past SIGTERM was this same printing)."""

from __future__ import annotations

import io
import time

import pytest
from rich.console import Console

from pcgkit.report.terminal import MAX_NOTE_CHARS, print_table, run_table
from pcgkit.values.verdict import Verdict

from .helpers import result


@pytest.mark.parametrize("size", [64 * 1024, 1024**2], ids=["64KB", "1MB"])
def test_a_huge_reason_prints_quickly_and_cut(size):
    """An error row whose reason is 64 KB (or 1 MB) of highlighter-bait prints in < 2 s, cut to MAX_NOTE_CHARS,
    even on a console that would highlight (the printer turns it off)."""
    reason = ("x=1 0x1f 'q' " * (size // 13 + 1))[:size]
    rows = [result(verdict=Verdict.ERROR, expected=None, reason=reason)]
    out = io.StringIO()
    start = time.monotonic()
    print_table(run_table(rows), Console(file=out, width=160))
    assert time.monotonic() - start < 2.0
    text = out.getvalue()
    assert "more characters" in text and len(text) < MAX_NOTE_CHARS + 4000
