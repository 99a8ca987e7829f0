"""Stopping: the first Ctrl-C or SIGTERM kills every child group, keeps finished cells, writes the report
with the unfinished cells as `interrupted` error rows and exits 130/143; a second signal leaves no
traceback and no orphan (checked in the process table); an interrupted `pcgkit run` leaves nothing stale."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .helpers import REPO_ROOT, alive, kit_env

MATRIX = textwrap.dedent(f"""\
    schema = "pcgkit.matrix/1"
    [[cell]]
    id = "fast"
    kind = "existing"
    interpreter = "{sys.executable}"
    [[cell]]
    id = "slow-a"
    kind = "existing"
    interpreter = "{sys.executable}"
    [[cell]]
    id = "slow-b"
    kind = "existing"
    interpreter = "{sys.executable}"
    """)


# After the stop, how long a SIGKILLed child may take to be gone: the orphans this test looks for sleep
# 300 s, so any bound far below that still fails on a real orphan; 5 s failed once at load average 7.
CHILD_GONE_S = 15.0


def _wait_for(predicate, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def _start_matrix(tmp_path: Path) -> tuple[subprocess.Popen, Path, Path]:
    (tmp_path / "matrix.toml").write_text(MATRIX)
    pids = tmp_path / "pids"
    pids.mkdir()
    reports = tmp_path / "reports"
    driver = subprocess.Popen(
        [sys.executable, "-m", "tests.faults.matrix_driver", str(reports), str(tmp_path / "matrix.toml"), str(pids)],
        cwd=REPO_ROOT, env=kit_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    # jobs=2: "fast" and one slow cell start; the other slow cell waits in the queue
    _wait_for(lambda: len(list(pids.glob("*.grandchild"))) >= 1 and len(list(pids.glob("*.child"))) >= 1)
    _wait_for(lambda: (reports / "matrix" / "cells" / "fast" / "cell.json").exists())
    return driver, reports, pids


def _children(pids: Path) -> list[int]:
    return [int(p.read_text()) for p in pids.iterdir() if p.read_text().strip()]


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130),
                                            (signal.SIGHUP, 129), (signal.SIGQUIT, 131)],
                         ids=["TERM", "INT", "HUP", "QUIT"])
def test_first_signal_stops_the_tree_keeps_finished_cells_and_reports(tmp_path, signum, status):
    """One SIGTERM/SIGINT/SIGHUP (closed terminal, dropped ssh)/SIGQUIT: exit 128+N in seconds, no child
    alive, fast cell kept, the others 'interrupted'."""
    driver, reports, pids = _start_matrix(tmp_path)
    children = _children(pids)
    assert children and all(alive(pid) for pid in children)
    driver.send_signal(signum)
    out, err = driver.communicate(timeout=90)
    assert driver.returncode == status, err
    assert "Traceback" not in err
    _wait_for(lambda: not any(alive(pid) for pid in children), CHILD_GONE_S)
    compat = json.loads((reports / "compat.json").read_text())
    rows = {c["id"]: c for c in compat["cells"]}
    assert rows["fast"]["status"] == "ran"
    for cell_id in ("slow-a", "slow-b"):
        assert rows[cell_id]["status"] == "error" and rows[cell_id]["reason"].startswith(
            f"interrupted ({signal.Signals(signum).name})")
    assert (reports / "matrix-junit.xml").exists() and (reports / "index.html").exists()


def test_repeated_signals_leave_no_traceback_and_no_orphan(tmp_path):
    """SIGINT three times, then SIGTERM: still one clean stop, exit 130 (the first signal decides)."""
    driver, reports, pids = _start_matrix(tmp_path)
    children = _children(pids)
    for sig in (signal.SIGINT, signal.SIGINT, signal.SIGINT, signal.SIGTERM):
        try:
            driver.send_signal(sig)
        except ProcessLookupError:
            break
        time.sleep(0.02)
    out, err = driver.communicate(timeout=90)
    assert driver.returncode == 130, err
    assert "Traceback" not in err
    _wait_for(lambda: not any(alive(pid) for pid in children), CHILD_GONE_S)
    assert json.loads((reports / "compat.json").read_text())["cells"]


def test_interrupted_run_leaves_no_stale_outputs(tmp_path):
    """`pcgkit run` stopped by SIGTERM: 143, old junit.xml gone, every mode an 'interrupted' row, summary says so."""
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "junit.xml").write_text("<testsuites>previous run</testsuites>")
    (reports / "summary.md").write_text("# previous run: all green\n")
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/child.pid\nexec sleep 300\n")
    fake.chmod(0o755)
    run = subprocess.Popen([sys.executable, "-m", "pcgkit.cli", "run", "--python", str(fake), "--reports", str(reports)],
                           cwd=REPO_ROOT, env=kit_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: (tmp_path / "child.pid").exists() and (tmp_path / "child.pid").read_text().strip())
    child = int((tmp_path / "child.pid").read_text())
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=90)
    assert run.returncode == 143, err
    assert "Traceback" not in err
    _wait_for(lambda: not alive(child), 5)
    assert not (reports / "junit.xml").exists()
    assert "Interrupted (SIGTERM)" in (reports / "summary.md").read_text()
    results = json.loads((reports / "results.json").read_text())["results"]
    assert results and all(r["verdict"] == "error" and "interrupted" in r["reason"] for r in results)


def test_no_child_starts_after_the_stop():
    """After a stop request, proc.run refuses to start anything (raises Interrupted) in any thread."""
    from pcgkit.errors import Interrupted
    from pcgkit.util import proc, signals

    signals.request_stop(signal.SIGTERM)
    try:
        with pytest.raises(Interrupted):
            proc.run(["sleep", "30"], echo=False)
    finally:
        signals._STATE.signum = None
    assert os.getpid() and not signals._STATE.groups
