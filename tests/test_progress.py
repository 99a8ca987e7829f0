"""Progress on long commands (pcgkit.util.progress): heartbeats in logs, nothing once the work ends, and
proc.run's `progress` label reaching a non-terminal stream while its child runs."""

from __future__ import annotations

import io
import sys
import time

from pcgkit.util import proc
from pcgkit.util.progress import activity, heartbeat_interval, heartbeat_line


def test_heartbeat_line_and_interval():
    """One readable line; PCGKIT_HEARTBEAT_S sets the period, 0 turns it off, junk falls back to 30 s."""
    assert heartbeat_line("the cases", 95) == "pcgkit: the cases: still running, 1 min 35 s"
    assert heartbeat_interval({"PCGKIT_HEARTBEAT_S": "0"}) == 0 and heartbeat_interval({"PCGKIT_HEARTBEAT_S": "x"}) == 30


def test_heartbeats_while_running_and_none_after():
    """A non-TTY stream gets periodic heartbeats during the block and none after it ends."""
    stream = io.StringIO()
    with activity("work", stream=stream, interval_s=0.05):
        time.sleep(0.3)
    seen = stream.getvalue().splitlines()
    time.sleep(0.15)
    assert len(seen) >= 2 and all(line.startswith("pcgkit: work: still running") for line in seen)
    assert stream.getvalue().splitlines() == seen


def test_proc_run_with_progress_emits_heartbeats(monkeypatch, capsys):
    """proc.run(progress=...) heartbeats on stderr while a child sleeps (the path `run` and `env` take)."""
    monkeypatch.setenv("PCGKIT_HEARTBEAT_S", "0.1")
    done = proc.run([sys.executable, "-c", "import time; time.sleep(0.5)"], echo=False, progress="sleeper")
    assert done.ok and "pcgkit: sleeper: still running" in capsys.readouterr().err
