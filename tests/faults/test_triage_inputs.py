"""`pcgkit triage` takes input as people give it: a FIFO (`<(docker logs x)`), a folder of logs, endless or
closed stdin, odd capture lines; one unreadable input never hides the other logs' diagnoses."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading

import pytest

from pcgkit.commands import triage as triage_cli
from pcgkit.values.logread import read_log

from .helpers import REPO_ROOT, kit_env, run_main

LOG = ('Traceback (most recent call last):\n  File "/x/site-packages/sglang/launch_server.py", line 3, in <module>\n'
       "    main()\nRuntimeError: CUDA out of memory\n")


def test_fifo_input_is_read(tmp_path, capsys):
    """A named pipe (what `<(docker logs x)` gives) is read like a file, not refused as missing."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text(LOG))
    writer.start()
    status, out, err = run_main(["triage", str(fifo)], capsys)
    writer.join(5)
    assert status == 0, err
    assert "CUDA out of memory" in out


def test_folder_input_triages_each_log_inside(tmp_path, capsys, monkeypatch):
    """A folder of logs: each file inside is triaged, named by its path (given relative: an xdist worker's tmp_path
    is long enough for the screen-width cut to shorten an absolute one)."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.log").write_text(LOG)
    (tmp_path / "logs" / "b.log").write_text(LOG.replace("CUDA out of memory", "disk full"))
    monkeypatch.chdir(tmp_path)
    status, out, err = run_main(["triage", "logs"], capsys)
    assert status == 0, err
    assert "a.log" in out and "b.log" in out and "disk full" in out


def test_one_unreadable_input_keeps_the_other_diagnoses(tmp_path, capsys):
    """A missing and a binary input beside a good log: the good one is diagnosed, each bad one named, exit 2."""
    good = tmp_path / "good.log"
    good.write_text(LOG)
    binary = tmp_path / "core"
    binary.write_bytes(b"\x7fELF\x00\x00\x01")
    for as_json in (False, True):
        status, out, err = run_main(["triage", str(tmp_path / "missing.log"), str(binary), str(good),
                                     *(["--json"] if as_json else [])], capsys)
        assert status == 2
        assert "CUDA out of memory" in out
        assert "missing.log" in err and "core" in err and "Traceback" not in err
        if as_json:
            data = json.loads(out)
            assert [bool(entry.get("error")) for entry in data["logs"]] == [True, True, False]


def test_endless_stdin_is_bounded(monkeypatch, capsys):
    """stdin that never ends (`yes | pcgkit triage`) is read up to the bound, then triaged with a note."""
    monkeypatch.setattr(triage_cli, "MAX_LOG_BYTES", 1024 * 1024)

    class Endless(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, buffer):
            buffer[:] = b"y\n" * (len(buffer) // 2) + b"y" * (len(buffer) % 2)
            return len(buffer)

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(Endless())))
    status, out, err = run_main(["triage", "-"], capsys)
    assert status == 0
    assert "truncated" in err and "1 MiB" in err


def test_closed_stdin_is_one_line():
    """`pcgkit triage <&-` (stdin closed): exit 2 with one line, no traceback."""
    done = subprocess.run([sys.executable, "-m", "pcgkit.cli", "triage"], cwd=REPO_ROOT, env=kit_env(),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: os.close(0))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "stdin" in done.stderr


@pytest.mark.parametrize("line", ["Capturing CUDA graphs (PIECEWISE): 100%|##########| 3/3",
                                  "x PIECEWISE): 100% done", "PIECEWISE): 100%"])
def test_capture_line_variants_never_crash_the_reader(line):
    """A vLLM-style capture progress line in a variant the pattern does not match is no StopIteration."""
    read_log(f"start\n{line}\nend\n")
