"""history.jsonl: the append is atomic, survives a cut line and foreign bytes, and a FIFO in its place never blocks."""

from __future__ import annotations

import errno
import json
import os

from pcgkit.util import atomic

from .helpers import assert_one_line_error, pcgkit, ran_cell, run_main, write_cells


def _reports(tmp_path):
    reports = tmp_path / "reports"
    write_cells(reports, ran_cell("seed"))
    return reports


def _history_lines(reports):
    return (reports / "history.jsonl").read_bytes().splitlines()


def test_a_cut_line_is_ended_before_the_next_run_is_appended(tmp_path, capsys):
    """A line cut by a full disk is never glued to the next run's line: both runs after it stay readable."""
    reports = _reports(tmp_path)
    assert run_main(["report", "--reports", str(reports)], capsys)[0] == 0
    history = reports / "history.jsonl"
    first = json.loads(history.read_text())
    first["created"] = "2000-01-01T00:00:00+00:00"  # an earlier run: reports within one second share a time
    history.write_text(json.dumps(first) + "\n" + '{"schema":"pcgkit.compat-history/1","created":"20')  # the cut
    write_cells(reports, ran_cell("seed", message="second run"))
    assert run_main(["report", "--reports", str(reports)], capsys)[0] == 0
    lines = _history_lines(reports)
    assert len(lines) == 3 and json.loads(lines[0]) and json.loads(lines[2])["schema"] == "pcgkit.compat-history/1"


def test_a_full_disk_keeps_the_old_history_whole_and_names_it(tmp_path, capsys, monkeypatch):
    """ENOSPC while appending: the old history is untouched, no temp file is left, the error names the file (exit 4)."""
    reports = _reports(tmp_path)
    assert run_main(["report", "--reports", str(reports)], capsys)[0] == 0
    before = (reports / "history.jsonl").read_bytes()
    real_fsync = os.fsync

    def full(fd):
        if os.readlink(f"/proc/self/fd/{fd}").rsplit("/", 1)[-1].startswith(".history.jsonl."):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", full)
    status, _, err = run_main(["report", "--reports", str(reports)], capsys)
    assert status == 4 and "history.jsonl" in assert_one_line_error(err) and "?" not in err
    assert (reports / "history.jsonl").read_bytes() == before
    assert not [p for p in reports.iterdir() if p.name.startswith(".history.jsonl.")]


def test_a_non_utf8_byte_never_stops_later_reports(tmp_path, capsys):
    """One byte that is not UTF-8 in history.jsonl: the report runs (that line skipped and named), and again."""
    reports = _reports(tmp_path)
    (reports / "history.jsonl").write_bytes(b"\xff\xfe not a run\n")
    for _ in range(2):
        status, out, err = run_main(["report", "--reports", str(reports)], capsys)
        assert status == 0, err
        assert "history.jsonl:1: unreadable history line" in out
    assert _history_lines(reports)[0] == b"\xff\xfe not a run" and len(_history_lines(reports)) >= 2


def test_a_fifo_in_place_of_the_history_is_one_line_not_a_hang(tmp_path):
    """history.jsonl as a FIFO: report finishes at once with one error line naming it (no SIGKILL needed)."""
    reports = _reports(tmp_path)
    os.mkfifo(reports / "history.jsonl")
    done = pcgkit(["report", "--reports", str(reports)], cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "history.jsonl" in assert_one_line_error(done.stderr)
    assert (reports / "compat.md").is_file()  # the report itself was written before the append was refused
