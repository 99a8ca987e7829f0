"""The one subprocess chokepoint: every command the kit runs goes through `run` (or `spawn`, for a server).

Each command runs in its own session (process group), so a timeout or Ctrl-C kills the whole tree: a hung nvcc
or a wedged server cannot outlive its case. The command is echoed, its output goes to a log file when asked,
and the result is data (a non-zero exit is for the caller to judge). The output and the echoed command line are
redacted here (pcgkit.util.redact), so no log, tail, terminal line or report built from them carries a secret.

Every child's group is registered with pcgkit.util.signals while it runs: the first Ctrl-C or SIGTERM kills them
all, and no child starts after it (`run` raises Interrupted). A SIGKILL of the kit cannot be caught: on Linux
each child gets PR_SET_PDEATHSIG, so the kernel kills it when the kit dies. That signal follows the *thread*
that started the child: `run` waits in that thread, and `spawn`'s callers start servers from the main thread.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from pcgkit.errors import OutputPathError, ToolMissingError
from pcgkit.util import signals
from pcgkit.util.envlock import NotRegularFile, open_regular
from pcgkit.util.progress import activity
from pcgkit.util.redact import redact_argv, redact_text, secret_values
from pcgkit.util.sanitize import strip_ansi

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
            name = next((s.name for s in signal.Signals if s == sig), "?")
            return f"killed by signal {sig} ({name})"
        return f"exit status {self.returncode}"


def open_log(path: Path):
    """A child's log file, emptied, open for reading and writing, through envlock.open_regular (never a link, a
    FIFO or a device): one OutputPathError line otherwise."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = open_regular(path, os.O_RDWR | os.O_CREAT, 0o666)
    except NotRegularFile as exc:
        raise OutputPathError(f"log {path}: {exc.why}; remove it or choose another folder") from None
    os.set_blocking(fd, True)
    os.ftruncate(fd, 0)
    return os.fdopen(fd, "w+b")


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

try:  # libc's prctl, looked up in the parent (the child between fork and exec only calls it); None off Linux
    _PRCTL: Any = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):
    _PRCTL = None


def _dies_with(parent: int):
    """The preexec hook that ties a child's life to the kit's: SIGKILL when the kit dies, and at once if it
    died already (between fork and the prctl, the child was re-parented)."""

    def hook() -> None:
        if _PRCTL is not None:
            _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def _popen_group(argv: Sequence[str], sink, env: Mapping[str, str] | None, cwd) -> subprocess.Popen:
    """The child in its own process group (stopped as a whole), its output into `sink`, tied to the kit's life."""
    return subprocess.Popen(
        argv,
        stdout=sink,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=True,
        preexec_fn=_dies_with(os.getpid()),
    )


def _begin(
    argv: Sequence[str], env: Mapping[str, str] | None, echo: bool, shown_after: str = ""
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """argv as strings and the secrets to redact from its output, once no stop is pending; echoed if asked."""
    argv = tuple(str(a) for a in argv)
    signals.raise_if_stopping()
    secrets = secret_values(os.environ if env is None else env)
    if echo:
        print(f"+ {redact_argv(argv, secrets)}{shown_after}", file=sys.stderr, flush=True)
    return argv, secrets


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    timeout: float | None = None,
    log_path: Path | None = None,
    echo: bool = True,
    progress: str | None = None,
) -> Completed:
    """Run argv to completion (or timeout), output merged and kept; never raises on failure. With `progress`, a
    live line or heartbeats say it is still running (pcgkit.util.progress)."""
    argv, secrets = _begin(argv, env, echo)
    sink = open_log(log_path) if log_path is not None else tempfile.TemporaryFile()
    start = time.monotonic()
    with sink:
        proc = _popen_group(argv, sink, env, cwd)
        signals.register_group(proc.pid)
        try:
            with activity(progress) if progress else contextlib.nullcontext():
                returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            returncode = None  # timed out
        finally:
            # The whole tree, after a timeout or a Ctrl-C, and after an exit too: stray grandchildren (a forked
            # server) die with their parent.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            signals.unregister_group(proc.pid)
        duration = time.monotonic() - start
        size = sink.seek(0, os.SEEK_END)
        sink.seek(max(0, size - TAIL_CHARS * 4))
        tail = sink.read().decode("utf-8", "replace")[-TAIL_CHARS:]
    if log_path is not None:
        _redact_file(log_path, secrets)
    # A child killed by the stop policy says nothing about the cell: the caller must not record it.
    signals.raise_if_stopping()
    return Completed(argv, returncode, redact_text(strip_ansi(tail), secrets), duration, returncode is None, log_path)


def _redact_file(path: Path, secrets: tuple[str, ...]) -> None:
    text = path.read_text(errors="replace")
    redacted = redact_text(text, secrets)
    if redacted != text:
        from pcgkit.util.atomic import write_text

        write_text(path, redacted, redact=False)


class Spawned(contextlib.AbstractContextManager["Spawned"]):
    """A long-running child (a server) in its own process group, its output going to a log file: the caller
    polls it, talks to it, then `stop()`s the whole group (SGLang forks scheduler and detokenizer processes:
    killing only the parent would leave them holding the GPU). As a context manager it always stops."""

    def __init__(self, popen: subprocess.Popen, argv: tuple[str, ...], log_path: Path, sink, secrets=()):
        self._popen = popen
        self._secrets = tuple(secrets)
        self._sink = sink
        self.argv = argv
        self.log_path = log_path
        self.pid = popen.pid

    def poll(self) -> int | None:
        return self._popen.poll()

    def stop(self, grace_s: float = 5.0) -> int | None:
        """SIGTERM the group, wait up to grace_s for the leader, then SIGKILL the group. Idempotent. The leader's
        exit status from before the stop (None: it was still running), so "it died by itself" is not "we killed it"."""
        status_before = self._popen.poll()
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
            with contextlib.suppress(ProcessLookupError):  # the group is already empty
                os.killpg(self._popen.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._popen.wait(timeout=wait_s)
        signals.unregister_group(self._popen.pid)
        if not self._sink.closed:
            self._sink.close()
            _redact_file(self.log_path, self._secrets)  # the kept server log is an artifact too
        return status_before

    def log_text(self) -> str:
        """Everything the child printed so far (decoded leniently: a server log is evidence, not data)."""
        return redact_text(self.log_path.read_bytes().decode("utf-8", "replace"), self._secrets)

    def __exit__(self, *exc_info) -> None:
        self.stop()


def spawn(
    argv: Sequence[str],
    *,
    log_path: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | str | None = None,
    echo: bool = True,
) -> Spawned:
    """Start argv in a new session (process group) with stdout+stderr going to log_path."""
    argv, secrets = _begin(argv, env, echo, f" > {log_path}")
    sink = open_log(log_path)
    try:
        popen = _popen_group(argv, sink, env, cwd)
    except BaseException:
        sink.close()
        raise
    signals.register_group(popen.pid)
    return Spawned(popen, argv, log_path, sink, secrets)


def _uv_module_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("uv") is not None


def uv_command() -> list[str]:
    """How to call uv: the one on PATH, else the running interpreter's uv module; neither is ToolMissingError
    (exit 4), raised before any cell runs, never an install failure blamed on the cell's pins."""
    found = shutil.which("uv")
    if found:
        return [found]
    if _uv_module_available():
        return [sys.executable, "-m", "uv"]
    raise ToolMissingError("uv not found: no `uv` on PATH and no uv module in " + sys.executable)
