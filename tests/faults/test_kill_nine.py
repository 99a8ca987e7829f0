"""SIGKILL of the kit (no handler runs): its children die with it, and the next command sweeps its temp folders."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .helpers import alive, kit_env

HUNG_PROBE = """#!/bin/sh
# a --python interpreter whose preflight probe hangs (an import that never returns)
echo $$ > "$PROBE_PID"
exec sleep 300
"""


def _wait_for(path: Path, timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def _kill_nine_during_probe(tmp_path: Path) -> tuple[dict[str, str], Path, int]:
    """`pcgkit preflight --python ENV` (ENV's probe hangs), SIGKILLed once its probe runs: (env, TMPDIR, probe pid)."""
    fake = tmp_path / "python"
    fake.write_text(HUNG_PROBE)
    fake.chmod(0o755)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = kit_env(TMPDIR=str(temp), PROBE_PID=str(tmp_path / "probe.pid"), PCGKIT_CACHE=str(tmp_path / "cache"))
    kit = subprocess.Popen([sys.executable, "-m", "pcgkit.cli", "preflight", "--python", str(fake), "--",
                            "--model-path", str(tmp_path)], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    probe = int(_wait_for(tmp_path / "probe.pid"))
    assert list(temp.rglob("pcgkit-preflight-*"))  # the kit's temp folders exist while it runs
    kit.send_signal(signal.SIGKILL)
    kit.wait()
    return env, temp, probe


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def test_sigkill_of_the_kit_takes_its_probe_with_it(tmp_path):
    """The probe is gone within seconds of the kit's SIGKILL (it ran on, orphaned, for the 900 s probe timeout)."""
    _env, _temp, probe = _kill_nine_during_probe(tmp_path)
    try:
        assert _gone_within(probe, 10), "the probe outlived the kit"
    finally:
        if alive(probe):
            os.kill(probe, signal.SIGKILL)


def test_the_next_command_sweeps_a_killed_kits_temp_folders(tmp_path):
    """After the SIGKILL, the next command (any: `cache --json`) leaves no pcgkit-preflight-* folder and no run
    folder in the temp dir (they stayed for good)."""
    env, temp, probe = _kill_nine_during_probe(tmp_path)
    if alive(probe):
        os.kill(probe, signal.SIGKILL)
    done = subprocess.run([sys.executable, "-m", "pcgkit.cli", "cache", "--json"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert list(temp.rglob("pcgkit-preflight-*")) == []
    assert [p.name for p in temp.rglob("*") if p.name.startswith("run-")] == []  # and its own folder went at exit
