"""Progress for anything that runs longer than a few seconds: a live line on a terminal (rich, on
stderr), one-line heartbeats elsewhere (CI logs: `pcgkit: LABEL: still running, 30 s`), every
PCGKIT_HEARTBEAT_S seconds (default 30; 0 turns them off). `heartbeat_lines` is pure; `activity` is
the edge: a context manager, so the line or the heartbeat thread always stops with the work.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator

HEARTBEAT_VAR = "PCGKIT_HEARTBEAT_S"
DEFAULT_HEARTBEAT_S = 30.0


def heartbeat_interval(environ: dict[str, str] | None = None) -> float:
    """Seconds between heartbeats (PCGKIT_HEARTBEAT_S; 0 = none). Pure given environ."""
    raw = (environ if environ is not None else dict(os.environ)).get(HEARTBEAT_VAR, "")
    try:
        return max(0.0, float(raw)) if raw else DEFAULT_HEARTBEAT_S
    except ValueError:
        return DEFAULT_HEARTBEAT_S


def heartbeat_line(label: str, elapsed_s: float) -> str:
    """One heartbeat: 'pcgkit: LABEL: still running, 1 min 30 s'. Pure."""
    minutes, seconds = divmod(int(elapsed_s), 60)
    return f"pcgkit: {label}: still running, " + (f"{minutes} min {seconds} s" if minutes else f"{seconds} s")


@contextlib.contextmanager
def activity(label: str | Callable[[], str], stream=None, interval_s: float | None = None,
             live: bool = True) -> Iterator[None]:
    """Show that LABEL is running until the block ends: live on a TTY, heartbeats otherwise. A callable
    label is asked again at each heartbeat (a matrix's running cells). live=False: heartbeats only
    (the caller draws its own live display on a terminal)."""
    stream = stream if stream is not None else sys.stderr
    interval = heartbeat_interval() if interval_s is None else interval_s
    is_tty = getattr(stream, "isatty", lambda: False)()
    if is_tty and live:
        assert isinstance(label, str), "a live line needs a fixed label"
        from rich.console import Console

        with Console(file=stream).status(f"{label}…", spinner="dots"):
            yield
        return
    if is_tty or interval <= 0:  # the caller draws its own live line, or heartbeats are off
        yield
        return
    done = threading.Event()
    start = time.monotonic()

    def beat() -> None:
        while not done.wait(interval):
            text = label() if callable(label) else label
            print(heartbeat_line(text, time.monotonic() - start), file=stream, flush=True)

    thread = threading.Thread(target=beat, name=f"heartbeat: {label}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
