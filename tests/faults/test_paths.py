"""Read-only and wrong-kind paths: a folder where a file goes, a file where a folder goes, a read-only
or full disk (simulated by a failing writer: CI runs as root, where chmod protects nothing), and a
symlink planted where a report goes. One line, a distinct exit status, and no half-written file."""

from __future__ import annotations

import errno
import os

import pytest

from pcgkit.util import atomic

from .helpers import assert_one_line_error, ran_cell, run_main, write_cells


def test_output_paths_of_the_wrong_kind(tmp_path, capsys):
    """`repro --out FILE` and `run --reports FILE`: exit 2 with one line; a folder as a file target too."""
    existing = tmp_path / "a-file"
    existing.write_text("keep me\n")
    for argv in (["repro", "mode1", "--out", str(existing)], ["run", "--reports", str(existing)]):
        status, _, err = run_main(argv, capsys)
        assert status == 2 and "exists and is not a folder" in assert_one_line_error(err)
    assert existing.read_text() == "keep me\n"
    with pytest.raises(atomic.OutputPathError, match="is a folder"):
        atomic.write_text(tmp_path, "x")


@pytest.mark.parametrize("code, words, status", [(errno.EROFS, "read-only", 4), (errno.ENOSPC, "disk full", 4)])
def test_read_only_or_full_disk_while_writing_the_report(tmp_path, capsys, monkeypatch, code, words, status):
    """The report's writer fails mid-way: exit 4, one line, and the previous compat.md is intact, no temp litter."""
    reports = tmp_path / "reports"
    write_cells(reports, ran_cell("good"))
    assert run_main(["report", "--reports", str(reports)], capsys)[0] == 0
    before = (reports / "compat.md").read_text()

    def failing_replace(src, dst):
        raise OSError(code, os.strerror(code), str(dst))

    monkeypatch.setattr(atomic.os, "replace", failing_replace)
    got, _, err = run_main(["report", "--reports", str(reports)], capsys)
    assert got == status and words in assert_one_line_error(err)
    assert (reports / "compat.md").read_text() == before
    assert not list(reports.rglob("*.tmp"))


def test_read_only_reports_folder_is_refused_before_work(tmp_path, capsys, monkeypatch):
    """A reports folder without write permission: `report` and `run` stop at once with exit 4."""
    reports = tmp_path / "reports"
    write_cells(reports, ran_cell("good"))
    real_access = os.access
    monkeypatch.setattr(atomic.os, "access", lambda p, mode: False if str(p) == str(reports) else real_access(p, mode))
    for argv in (["report", "--reports", str(reports)], ["run", "--reports", str(reports)]):
        status, _, err = run_main(argv, capsys)
        assert status == 4 and "read-only" in assert_one_line_error(err)


def test_symlink_planted_at_a_report_is_replaced_not_followed(tmp_path, capsys):
    """compat.md as a symlink to another file: the report replaces the link; the target is untouched."""
    reports = tmp_path / "reports"
    write_cells(reports, ran_cell("good"))
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (reports / "compat.md").symlink_to(victim)
    assert run_main(["report", "--reports", str(reports)], capsys)[0] == 0
    assert victim.read_text() == "precious\n"
    assert not (reports / "compat.md").is_symlink()


def test_symlinked_reports_folder_is_followed(tmp_path, capsys):
    """A reports folder that is a symlink (a CI cache mount) works like the real folder."""
    real = tmp_path / "real"
    write_cells(real, ran_cell("good"))
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    assert run_main(["report", "--reports", str(tmp_path / "link")], capsys)[0] == 0
    assert (real / "compat.md").exists()
