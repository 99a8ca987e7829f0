"""Server lifecycle with real child processes: a stand-in HTTP server, one that dies, one that hangs.

The stand-ins are small Python scripts run through pcgkit.util.proc.spawn exactly as the SGLang server
is: readiness by /health, one /generate, the whole process group killed, the log kept.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

from pcgkit.e2e.case import launch_and_classify
from pcgkit.e2e.server import Readiness, free_loopback_port, serve_once
from pcgkit.util import proc
from pcgkit.values.verdict import Verdict

SEED_000_LOG = Path(__file__).resolve().parent / "data" / "e2e_logs" / "seed000_capture_nvcc_subprocess.log"

# Prints SGLang's capture lines, forks a grandchild (SGLang forks its scheduler), then serves
# /health and /generate on the port given as argv[1]. argv[2]: file to write the grandchild's pid.
HEALTHY_SERVER = """
import http.server, json, subprocess, sys, time
port, pid_file = int(sys.argv[1]), sys.argv[2]
print("Capture piecewise CUDA graph begin. avail mem=1.00 GB", flush=True)
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
open(pid_file, "w").write(str(grandchild.pid))
print("Capture piecewise CUDA graph end. Time elapsed: 0.01 s.", flush=True)

class Handler(http.server.BaseHTTPRequestHandler):
    def _answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._answer(200 if self.path == "/health" else 404, {})

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        assert request["sampling_params"]["max_new_tokens"] > 0
        self._answer(200, {"text": " jumps over the lazy dog", "meta_info": {"completion_tokens": 6}})

time.sleep(0.5)  # not ready at once: the wait loop must poll
print("The server is fired up and ready to roll!", flush=True)
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""

# Prints the seed 000 log (a crash in capture) and exits 1, as SGLang's launcher does.
DYING_SERVER = """
import sys, time
time.sleep(0.3)
sys.stdout.write(open(sys.argv[2]).read())
sys.exit(1)
"""

# Never listens; forks a grandchild that would outlive a plain kill of the leader.
HANGING_SERVER = """
import subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
open(sys.argv[2], "w").write(str(grandchild.pid))
print("Capture piecewise CUDA graph begin. avail mem=1.00 GB", flush=True)
time.sleep(3600)
"""


def _script(tmp_path: Path, source: str) -> Path:
    path = tmp_path / "server.py"
    path.write_text(textwrap.dedent(source))
    return path


def _gone(pid: int, wait_s: float = 10.0) -> bool:
    """True once pid no longer runs (a zombie left for init to reap counts as gone)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


def test_healthy_server_is_fixed_and_its_group_is_killed(tmp_path):
    """A stand-in that captures, serves and answers /generate reads as fixed; its grandchild dies with it."""
    port, pid_file, log = free_loopback_port(), tmp_path / "grandchild.pid", tmp_path / "server.log"
    argv = [sys.executable, _script(tmp_path, HEALTHY_SERVER), str(port), pid_file]
    outcome = launch_and_classify(argv, port=port, log_path=log, env=None, ready_timeout_s=30, poll_s=0.1)
    assert outcome.run.readiness is Readiness.READY
    assert outcome.run.generation.ok and outcome.run.generation.detail == " jumps over the lazy dog"
    assert outcome.classification.verdict is Verdict.FIXED, outcome.classification.reason
    assert _gone(int(pid_file.read_text())), "the server's grandchild outlived the process-group kill"
    assert "fired up" in log.read_text()  # the log stays behind as the artifact
    assert outcome.run.group_left == ()  # checked from /proc after the stop, and recorded
    assert outcome.timings == {"piecewise_capture_s": 0.01}


def test_group_members_sees_the_whole_live_group_and_nothing_after_the_stop(tmp_path):
    """While a stand-in runs, its leader and forked grandchild are found by session id; after stop(), none."""
    from pcgkit.e2e.server import group_members, wait_group_gone

    pid_file = tmp_path / "grandchild.pid"
    server = proc.spawn([sys.executable, _script(tmp_path, HANGING_SERVER), "0", pid_file], log_path=tmp_path / "s.log")
    with server:
        deadline = time.monotonic() + 20
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the stand-in never forked its grandchild"
            time.sleep(0.05)
        pids = {int(m.split(":")[0]) for m in group_members(server.pid)}
        assert {server.pid, int(pid_file.read_text())} <= pids
        assert os.getpid() not in pids  # the test itself is outside the server's session
    assert wait_group_gone(server.pid) == ()


def test_group_members_reads_pgrp_and_session_and_skips_zombies(tmp_path):
    """From a stand-in /proc: members by process group or session id, names with spaces kept, zombies left out."""
    from pcgkit.e2e.server import group_members

    def stat(pid, comm, state, pgrp, session):
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(f"{pid} ({comm}) {state} 1 {pgrp} {session} 0 0\n")

    stat(100, "python3", "S", 100, 100)
    stat(101, "sglang::scheduler (tp0)", "R", 100, 100)
    stat(102, "setsid-child", "S", 102, 100)  # own group, same session
    stat(103, "dead", "Z", 100, 100)
    stat(200, "other", "S", 200, 200)
    (tmp_path / "self").mkdir()
    assert group_members(100, proc_root=tmp_path) == (
        "100:python3:S", "101:sglang::scheduler (tp0):R", "102:setsid-child:S")


def test_dying_server_is_classified_from_its_log(tmp_path):
    """A stand-in that prints the seed 000 crash and exits 1 is seen to die, and reads as reproduced."""
    port, log = free_loopback_port(), tmp_path / "server.log"
    argv = [sys.executable, _script(tmp_path, DYING_SERVER), str(port), SEED_000_LOG]
    start = time.monotonic()
    outcome = launch_and_classify(argv, port=port, log_path=log, env=None, ready_timeout_s=60, poll_s=0.1)
    assert time.monotonic() - start < 30, "death must be noticed at once, not at the readiness timeout"
    assert outcome.run.readiness is Readiness.DIED and outcome.run.exit_status == 1
    assert outcome.run.generation is None
    assert outcome.classification.verdict is Verdict.REPRODUCED, outcome.classification.reason


def test_hanging_server_times_out_and_the_group_dies(tmp_path):
    """A stand-in that never listens times out; the leader and its grandchild are both killed."""
    port, pid_file, log = free_loopback_port(), tmp_path / "grandchild.pid", tmp_path / "server.log"
    argv = [sys.executable, _script(tmp_path, HANGING_SERVER), str(port), pid_file]
    start = time.monotonic()
    run = serve_once(argv, port=port, log_path=log, ready_timeout_s=1.5, poll_s=0.1)
    assert 1.5 <= time.monotonic() - start < 30
    assert run.readiness is Readiness.TIMED_OUT and run.exit_status is None
    assert _gone(int(pid_file.read_text()))
    assert "Capture piecewise CUDA graph begin" in log.read_text()


def test_stop_escalates_to_sigkill_for_a_child_ignoring_sigterm(tmp_path):
    """Spawned.stop() SIGKILLs the group when SIGTERM is ignored, within the grace period."""
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(3600)"
    server = proc.spawn([sys.executable, "-c", code], log_path=tmp_path / "log", echo=False)
    deadline = time.monotonic() + 20
    while "up" not in server.log_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    start = time.monotonic()
    assert server.stop(grace_s=0.5) is None  # it was still running: we stopped it
    assert time.monotonic() - start < 10
    assert server.poll() == -9
    assert _gone(server.pid)


def test_spawned_context_manager_stops_on_exception(tmp_path):
    """An exception between spawn and stop still takes the process group down (no leaked server)."""
    try:
        with proc.spawn([sys.executable, "-c", "import time; time.sleep(3600)"], log_path=tmp_path / "log", echo=False) as server:
            pid = server.pid
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert _gone(pid)
    assert os.path.exists(tmp_path / "log")
