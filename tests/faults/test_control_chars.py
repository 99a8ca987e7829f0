"""Control characters and crafted text: FORCE_COLOR=1 output, NUL bytes, '|' and newlines in ids or
versions never break `pcgkit report` (ExpatError) or shift a Markdown table's columns."""

from __future__ import annotations

import json
import re

from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import ERROR, CellOutcome
from pcgkit.report.junit_merge import validate
from pcgkit.util.sanitize import clean_text, md_cell, md_code

from .helpers import ran_cell, run_main, write_cells

# What uv prints with FORCE_COLOR=1 (bold red "error:", cyan names), plus a progress bar's CR, NUL and BEL.
COLORED = "\x1b[1m\x1b[31merror\x1b[39m\x1b[0m: No solution for \x1b[36mtorch\x1b[39m==2.1\r\n\x1b]8;;http://x\x07link\x1b]8;;\x07\x00\x07 50%\r100%"


def test_clean_text_removes_whole_escape_sequences_and_controls():
    """No ESC, no '[31m' remnant, no NUL/BEL; CR becomes a newline; the words stay."""
    cleaned = clean_text(COLORED)
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", cleaned)
    assert "[31m" not in cleaned and "]8;;" not in cleaned
    assert cleaned.startswith("error: No solution for torch==2.1\nlink") and cleaned.endswith(" 50%\n100%")


def test_colored_log_tail_reaches_a_valid_report_and_later_reports(tmp_path, capsys):
    """An error cell with uv's ANSI output: report exits 3 (error cell), the merged JUnit is xunit2-valid, twice."""
    bad = CellOutcome(Cell("color", flashinfer="0.6.1", torch="2.9.1"), ERROR, 1.0, "install", COLORED, COLORED)
    reports = tmp_path / "reports"
    root = write_cells(reports, bad, ran_cell("good"))
    # a cell.json written by an older kit, with the raw escapes still in it: the reader cleans them
    raw = json.loads((root / "color" / "cell.json").read_text())
    raw["log_tail"] = COLORED
    (root / "color" / "cell.json").write_text(json.dumps(raw))
    for _ in range(2):
        status, out, err = run_main(["report", "--reports", str(reports)], capsys)
        assert status == 3, err
        assert validate(reports / "matrix-junit.xml") == []
    assert "\x1b" not in (reports / "compat.md").read_text() + (reports / "index.html").read_text()


def _table_widths(markdown: str) -> set[int]:
    rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    return {len(re.findall(r"(?<!\\)\|", row)) for row in rows}


def test_crafted_id_and_version_cannot_shift_compat_md_columns(tmp_path, capsys):
    """A version string with '|', a newline and a trailing backslash, and an id with a backtick: same column count."""
    crafted = ran_cell("x`y")
    crafted = CellOutcome(Cell("x`y|z", kind="existing", interpreter="/p"), crafted.status, 1.0,
                          versions={"torch": "2.9.1 | fixed |\nnew row \\", "flashinfer-python": "0|1"},
                          results=crafted.results)
    reports = tmp_path / "reports"
    write_cells(reports, ran_cell("plain"))
    write_cells(reports, crafted)
    run_main(["report", "--reports", str(reports)], capsys)
    text = (reports / "compat.md").read_text()
    grid = text.split("\n## Verdict grid")[1].split("\n## ")[0]
    assert len(_table_widths(grid)) == 1, grid
    assert "<script" not in text


def test_markdown_helpers_escape_what_could_split_a_cell():
    """md_cell escapes '|' and a trailing backslash; md_code picks a fence longer than any backtick run."""
    assert md_cell("a|b\\") == "a\\|b\\\\"
    assert md_cell("<script>\nx") == "&lt;script&gt; x"
    assert md_code("a`b|c") == "``a`b\\|c``"
