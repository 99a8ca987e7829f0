"""Outputs and odd fields: `--out` on a full disk keeps the old file and names the path; `--envs` that is a
file is one line; a cell.json with a NaN duration or wrong-typed fields is an error row, not a kit crash."""

from __future__ import annotations

import errno
import json
import os

import pytest

from pcgkit.util import atomic

from .helpers import assert_one_line_error, ran_cell, run_main, write_cells


def test_out_on_a_full_disk_keeps_the_old_file_and_names_the_path(tmp_path, monkeypatch, capsys):
    """`env --diff ... --out FILE` when the disk fills mid-write: exit 4, one line naming FILE, the old FILE intact."""
    sides = []
    for name, value in (("a", "1"), ("b", "2")):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"schema": "pcgkit.env/1", "env_vars": {"SGLANG_X": value}, "packages": {}}))
        sides.append(str(path))
    out = tmp_path / "diff.txt"
    out.write_text("the previous diff\n")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    status, _, err = run_main(["env", "--diff", *sides, "--out", str(out), "--force"], capsys)  # not the kit's file
    assert status == 4
    line = assert_one_line_error(err)
    assert str(out) in line and "disk full" in line and "?" not in line.split(str(out))[0]
    assert out.read_text() == "the previous diff\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".diff.txt")] == []  # no temp litter


def test_envs_that_is_a_file_is_one_line(tmp_path, capsys):
    """`matrix --envs FILE`: exit 2 before any cell, naming --envs, instead of a crash in every cell."""
    envs = tmp_path / "envs"
    envs.write_text("not a folder")
    matrix = tmp_path / "matrix.toml"
    matrix.write_text('schema = "pcgkit.matrix/1"\n[[cell]]\nid = "x"\nflashinfer-python = "0.6.1"\ntorch = "2.9.1"\n')
    status, _, err = run_main(["matrix", "--matrix", str(matrix), "--reports", str(tmp_path / "r"), "--envs", str(envs)],
                              capsys)
    assert status == 2 and "--envs" in assert_one_line_error(err)
    assert not (tmp_path / "r" / "matrix" / "cells" / "x").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders: the check cannot fail as root")
def test_envs_that_is_read_only_is_an_environment_error(tmp_path, capsys):
    """`matrix --envs` on a read-only folder: exit 4, one line."""
    envs = tmp_path / "envs"
    envs.mkdir()
    envs.chmod(0o500)
    matrix = tmp_path / "matrix.toml"
    matrix.write_text('schema = "pcgkit.matrix/1"\n[[cell]]\nid = "x"\nflashinfer-python = "0.6.1"\ntorch = "2.9.1"\n')
    status, _, err = run_main(["matrix", "--matrix", str(matrix), "--reports", str(tmp_path / "r"), "--envs", str(envs)],
                              capsys)
    assert status == 4 and "--envs" in assert_one_line_error(err)


@pytest.mark.parametrize("field, value", [("duration_s", float("nan")), ("duration_s", "12"), ("status", 3),
                                          ("versions", ["torch"]), ("results", {"a": 1}), ("where", "host"),
                                          ("reason", ["x"])])
def test_wrong_typed_cell_fields_are_error_rows_not_kit_crashes(tmp_path, capsys, field, value):
    """A cell.json with a NaN duration or a wrong-typed field: an 'unreadable result' row naming the field, exit 3."""
    reports = tmp_path / "reports"
    root = write_cells(reports, ran_cell("good"), ran_cell("odd"))
    path = root / "odd" / "cell.json"
    data = json.loads(path.read_text())
    data[field] = value
    path.write_text(json.dumps(data))
    status, out, err = run_main(["report", "--reports", str(reports)], capsys)
    assert status == 3, err
    assert "internal error" not in err
    rows = {c["id"]: c for c in json.loads((reports / "compat.json").read_text())["cells"]}
    assert rows["good"]["status"] == "ran"
    assert rows["odd"]["status"] == "error" and field in rows["odd"]["reason"]
