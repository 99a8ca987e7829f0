"""Corrupt state on disk: every unreadable cell.json is a visible `error` row counted in the report,
a corrupt per-cell JUnit or a wrong-shaped history file never loses the report."""

from __future__ import annotations

import json

from pcgkit.report.junit_merge import validate

from .helpers import ran_cell, run_main, write_cells

BROKEN = {
    "truncated": '{"schema": "pcgkit.cell/1", "cell": {"id": "trunc',
    "empty": "",
    "binary": b"\x89PNG\r\n\x1a\n\xff\xfe",
    "array": "[1, 2, 3]",
    "wrong-schema": '{"schema": "something/9"}',
    "no-cell": '{"schema": "pcgkit.cell/1", "status": "ran"}',
}


def test_unreadable_cell_files_are_error_rows_not_silence(tmp_path, capsys):
    """Six broken cell.json beside one good one: 7 cells reported, six 'unreadable result' rows, exit 3."""
    reports = tmp_path / "reports"
    root = write_cells(reports, ran_cell("good"))
    for name, content in BROKEN.items():
        (root / name).mkdir()
        path = root / name / "cell.json"
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    status, out, err = run_main(["report", "--reports", str(reports)], capsys)
    assert status == 3
    assert "7 cells" in out
    compat = json.loads((reports / "compat.json").read_text())
    rows = {c["id"]: c for c in compat["cells"]}
    assert set(rows) == {"good", *BROKEN}
    for name in BROKEN:
        assert rows[name]["status"] == "error"
        # the report makes machine paths relative (<tmp>/...); the file is still named
        assert rows[name]["reason"].startswith("unreadable result: ")
        assert f"{name}/cell.json: " in rows[name]["reason"]
        assert "\n" not in rows[name]["reason"]
    assert "not JSON" in rows["truncated"]["reason"] and "not UTF-8" in rows["binary"]["reason"]
    assert "unreadable result" in (reports / "compat.md").read_text()
    assert validate(reports / "matrix-junit.xml") == []


def test_corrupt_cell_junit_is_an_error_testcase(tmp_path, capsys):
    """A truncated junit.xml in a cell that ran: the merged JUnit names it and stays valid."""
    reports = tmp_path / "reports"
    root = write_cells(reports, ran_cell("good"))
    (root / "good" / "junit.xml").write_text("<testsuites><testsuite name='x'><testcase")
    status, out, err = run_main(["report", "--reports", str(reports)], capsys)
    merged = (reports / "matrix-junit.xml").read_text()
    assert "unreadable result" in merged and validate(reports / "matrix-junit.xml") == []


def test_history_of_the_right_schema_but_wrong_shape_is_ignored_with_a_word(tmp_path, capsys):
    """A hand-edited history file (cells as an object) no longer crashes the report; it is named and skipped."""
    reports = tmp_path / "reports"
    write_cells(reports, ran_cell("good"))
    (reports / "history").mkdir(parents=True)
    (reports / "history" / "2026.json").write_text(json.dumps({"schema": "pcgkit.compat/1", "created": "x", "cells": {"a": 1}}))
    status, out, err = run_main(["report", "--reports", str(reports)], capsys)
    assert status == 0, err
    assert "wrong shape" in out and (reports / "compat.md").exists()
