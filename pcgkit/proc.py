"""The one subprocess chokepoint: every command the kit runs goes through `run`.

Each command runs in its own session (process group), so a timeout or Ctrl-C kills the whole
tree -- a hung nvcc or a wedged server cannot outlive its case. The command is echoed, the full
output goes to a log file when asked, and the result is data (never an exception for a non-zero
exit: the caller decides what a failure means). Output is redacted here (secret-named variables'
values, URL credentials), so no log, log tail or report built from them can carry a secret.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Mapping, Sequence

from pcgkit.redact import redact_text, secret_values

TAIL_CHARS = 4000


@dataclasses.dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int | None  # None when killed for the timeout
    output_tail: str
    duration_s: float
    timed_out: bool
    log_path: Path | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe_failure(self) -> str:
        """'timed out after 30 s' / 'killed by signal 11 (SIGSEGV)' / 'exit status 2'."""
        if self.timed_out:
            return f"timed out after {self.duration_s:.0f} s (process group killed)"
        if self.returncode is not None and self.returncode < 0:
            sig = -self.returncode
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = "?"
            return f"killed by signal {sig} ({name})"
        return f"exit status {self.returncode}"


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    timeout: float | None = None,
    log_path: Path | None = None,
    echo: bool = True,
) -> Completed:
    """Run argv to completion (or timeout), output merged and kept; never raises on failure."""
    argv = tuple(str(a) for a in argv)
    if echo:
        print(f"+ {shlex.join(argv)}", file=sys.stderr, flush=True)
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        sink = open(log_path, "w+b")
    else:
        import tempfile

        sink = tempfile.TemporaryFile()
    start = time.monotonic()
    timed_out = False
    with sink:
        proc = subprocess.Popen(
            argv,
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
        try:
            returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            proc.wait()
            returncode = None
        except BaseException:  # Ctrl-C: take the whole tree down with us
            _kill_group(proc)
            proc.wait()
            raise
        else:
            _kill_group(proc)  # stray grandchildren (a forked server) die with their parent
        duration = time.monotonic() - start
        sink.seek(0, os.SEEK_END)
        size = sink.tell()
        sink.seek(max(0, size - TAIL_CHARS * 4))
        tail = sink.read().decode("utf-8", "replace")[-TAIL_CHARS:]
    secrets = secret_values(dict(env) if env is not None else dict(os.environ))
    if log_path is not None:
        _redact_file(log_path, secrets)
    return Completed(argv, returncode, redact_text(tail, secrets), duration, timed_out, log_path)


def _redact_file(path: Path, secrets: tuple[str, ...]) -> None:
    text = path.read_text(errors="replace")
    redacted = redact_text(text, secrets)
    if redacted != text:
        path.write_text(redacted)
