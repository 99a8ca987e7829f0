"""proc.run, the one subprocess chokepoint: output, timeouts that kill the whole tree, signals."""

from __future__ import annotations

import os
import sys
import textwrap
import time

from pcgkit.util import proc


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def test_returncode_and_tail():
    """A finished command reports its exit status and the end of its merged stdout/stderr."""
    done = proc.run(_python("import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"), echo=False)
    assert done.returncode == 3
    assert not done.ok and not done.timed_out
    assert "out" in done.output_tail and "err" in done.output_tail
    assert done.describe_failure() == "exit status 3"


def test_tail_keeps_the_end_of_long_output():
    """Long output is cut from the front: the last lines (where the error is) survive."""
    done = proc.run(_python("for i in range(20000): print(f'line {i}')"), echo=False)
    assert done.ok
    assert len(done.output_tail) <= proc.TAIL_CHARS
    assert done.output_tail.rstrip().endswith("line 19999")
    assert "line 0\n" not in done.output_tail


def _is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_timeout_kills_the_grandchild(tmp_path):
    """On timeout the whole process group dies, including a grandchild that sleeps forever."""
    pid_file = tmp_path / "grandchild.pid"
    child = f"""
        import subprocess, sys, time
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        open({str(pid_file)!r}, "w").write(str(grandchild.pid))
        time.sleep(3600)
    """
    start = time.monotonic()
    done = proc.run(_python(child), timeout=1, echo=False)
    assert time.monotonic() - start < 30
    assert done.timed_out and done.returncode is None
    assert "timed out" in done.describe_failure()
    grandchild = int(pid_file.read_text())
    # The grandchild was reparented (to init or a subreaper) when its parent died; give it a moment.
    for _ in range(50):
        if not _is_alive(grandchild):
            break
        time.sleep(0.1)
    assert not _is_alive(grandchild), f"grandchild {grandchild} survived the timeout"


def test_grandchild_left_behind_by_a_finished_child_is_killed(tmp_path):
    """A child that exits normally does not leave a background grandchild running."""
    pid_file = tmp_path / "grandchild.pid"
    child = f"""
        import subprocess, sys
        grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        open({str(pid_file)!r}, "w").write(str(grandchild.pid))
    """
    done = proc.run(_python(child), timeout=30, echo=False)
    assert done.ok
    grandchild = int(pid_file.read_text())
    for _ in range(50):
        if not _is_alive(grandchild):
            break
        time.sleep(0.1)
    assert not _is_alive(grandchild)


def test_sigsegv_is_described():
    """A child killed by SIGSEGV is reported as such, not as a plain exit status."""
    done = proc.run(_python("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"), echo=False)
    assert done.returncode == -11
    assert "SIGSEGV" in done.describe_failure()


def test_log_path_gets_the_full_output(tmp_path):
    """With log_path the whole output is kept on disk, even the part cut from the tail."""
    log = tmp_path / "logs" / "run.log"
    done = proc.run(_python("for i in range(20000): print(f'line {i}')"), log_path=log, echo=False)
    text = log.read_text()
    assert done.log_path == log
    assert text.startswith("line 0\n")
    assert text.count("\n") == 20000


def test_echo_prints_the_command(capfd):
    """The command is echoed to stderr so a log shows what ran."""
    proc.run(["true"], echo=True)
    assert "+ true" in capfd.readouterr().err


def test_env_and_cwd_are_passed(tmp_path):
    """The environment and working directory are the caller's, not inherited from globals."""
    done = proc.run(
        _python("import os; print(os.getcwd()); print(os.environ.get('PCGKIT_PROBE'))"),
        env={"PCGKIT_PROBE": "here", "PATH": os.environ.get("PATH", "")},
        cwd=tmp_path,
        echo=False,
    )
    assert str(tmp_path) in done.output_tail and "here" in done.output_tail


def test_output_is_redacted_in_the_tail_and_the_log(tmp_path):
    """A child that prints a secret-named variable and a credentialed URL leaks neither."""
    log = tmp_path / "out.log"
    env = {**os.environ, "PCGKIT_TEST_API_TOKEN": "proc-planted-token-77", "INDEX": "https://u:proc-pw-77@h.invalid/s"}
    done = proc.run(
        [sys.executable, "-c", "import os; print(os.environ['PCGKIT_TEST_API_TOKEN'], os.environ['INDEX'])"],
        env=env, log_path=log, echo=False,
    )
    for text in (done.output_tail, log.read_text()):
        assert "proc-planted-token-77" not in text and "proc-pw-77" not in text
        assert "<redacted>" in text and "h.invalid" in text
