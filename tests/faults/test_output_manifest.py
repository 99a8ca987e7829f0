"""The output manifest holds under concurrent writers and a failed write, and stays out of single-file targets."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pcgkit.errors import UnwritableOutputError
from pcgkit.util import atomic

from .helpers import assert_one_line_error, kit_env, run_main

WRITERS, FILES_EACH = 6, 8


def test_concurrent_writers_into_one_folder_lose_no_manifest_entry(tmp_path):
    """Six processes writing eight files each into one --out folder at once: every file is the kit's afterwards
    (2-5 of them were refused on the next run: read-modify-write of the manifest without a lock)."""
    code = ("import sys\nfrom pcgkit.util.atomic import OutputFolder\n"
            "folder = OutputFolder(sys.argv[1])\n"
            f"for j in range({FILES_EACH}):\n    folder.write_text(f'w{{sys.argv[2]}}-{{j}}.txt', 'x' * 1000)\n")
    writers = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(i)], env=kit_env())
               for i in range(WRITERS)]
    assert [w.wait(timeout=120) for w in writers] == [0] * WRITERS
    names = [f"w{i}-{j}.txt" for i in range(WRITERS) for j in range(FILES_EACH)]
    assert atomic.OutputFolder(tmp_path).foreign(names) == []


def _fail_manifest_write(monkeypatch, which: int) -> None:
    """Simulated full disk: the `which`-th rename onto the manifest raises ENOSPC (0 = the first)."""
    real_replace, seen = os.replace, []

    def replace(src, dst, *args, **kwargs):
        if Path(dst).name in (atomic.MANIFEST_NAME, atomic.LEDGER_NAME):
            seen.append(dst)
            if len(seen) == which + 1:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(atomic.os, "replace", replace)


@pytest.mark.parametrize("which", [0, 1])
def test_a_full_disk_while_recording_never_leaves_an_output_refused_later(tmp_path, monkeypatch, which):
    """(Simulated ENOSPC.) The disk fills at either manifest write of an --out folder's file: the command fails
    with one error, and the next run replaces the file without --force (it was refused: output written,
    manifest not)."""
    folder = atomic.OutputFolder(tmp_path / "out")
    folder.write_text("README.md", "first\n")
    with monkeypatch.context() as patch:
        _fail_manifest_write(patch, which)
        with pytest.raises(UnwritableOutputError, match="disk full"):
            folder.write_text("README.md", "second\n")
    assert folder.foreign(["README.md"]) == []
    folder.write_text("README.md", "third\n")
    assert (tmp_path / "out" / "README.md").read_text() == "third\n"


def test_a_single_file_output_leaves_no_manifest_in_the_users_folder(tmp_path, capsys):
    """`env --out ~/notes/env.json` writes env.json alone (a .pcgkit-written.json appeared beside it), and a second
    run replaces its own file without --force, while a file of the user's at that name is still refused."""
    notes = tmp_path / "notes"
    notes.mkdir()
    out = notes / "env.json"
    assert run_main(["env", "--python", sys.executable, "--out", str(out)], capsys)[0] == 0
    assert sorted(p.name for p in notes.iterdir()) == ["env.json"]
    assert run_main(["env", "--python", sys.executable, "--out", str(out)], capsys)[0] == 0
    mine = notes / "mine.json"
    mine.write_text("{}\n")
    status, _, err = run_main(["env", "--python", sys.executable, "--out", str(mine)], capsys)
    assert status == 2 and "--force" in assert_one_line_error(err) and mine.read_text() == "{}\n"
    assert sorted(p.name for p in notes.iterdir()) == ["env.json", "mine.json"]


def test_a_fifo_as_the_manifest_is_not_a_hang(tmp_path):
    """A FIFO named .pcgkit-written.json in an --out folder: a fresh kit process answers within seconds (it blocked
    opening it)."""
    os.mkfifo(tmp_path / atomic.MANIFEST_NAME)
    code = "import sys\nfrom pcgkit.util.atomic import OutputFolder\nOutputFolder(sys.argv[1]).write_text('a.txt', 'x')\n"
    try:
        subprocess.run([sys.executable, "-c", code, str(tmp_path)], env=kit_env(), capture_output=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("a FIFO as the manifest hung the kit")


def test_a_fifo_as_a_log_is_one_line_not_a_hang(tmp_path):
    """proc.run with a FIFO where its log goes: one line naming it within seconds (it blocked opening it to write)."""
    log = tmp_path / "install.log"
    os.mkfifo(log)
    code = f"from pathlib import Path\nfrom pcgkit.util import proc\nproc.run(['true'], log_path=Path({str(log)!r}))\n"
    try:
        done = subprocess.run([sys.executable, "-c", code], env=kit_env(), capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("a FIFO as a log hung the kit")
    assert done.returncode != 0 and "named pipe" in done.stderr
