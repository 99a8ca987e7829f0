"""The one signal policy for the whole process tree (installed by cli.main for every command).

proc.py starts every child in its own session, so a terminal's Ctrl-C (sent to the foreground process group)
and a CI runner's SIGTERM (sent to pcgkit alone) never reach the children: the kit stops them itself, from the
process groups proc.py registers here while they run.

The stop signals are those a terminal or a CI runner sends: SIGINT (Ctrl-C), SIGTERM (a cancelled job), SIGHUP
(a closed terminal, a dropped ssh session) and SIGQUIT (Ctrl-\\). On the first: every group gets SIGTERM, and
SIGKILL after GRACE_S (a child that is itself a kit -- `ci local` runs `pcgkit matrix` -- can stop its own
children and keep its finished results; a hung pytest or a server holding a GPU is killed anyway), and
`Interrupted` is raised in the main thread, or at the end of a `deferred()` block (a report being written is
finished, not torn). A child started after the signal is killed at registration and its `proc.run` raises
Interrupted. Later signals SIGKILL any group at once and are otherwise ignored: no second traceback, no orphan.
Interrupted exits with 128 + the signal's number.

A SIGKILL runs no handler: the children die with the kit (PR_SET_PDEATHSIG, pcgkit.util.proc), and the kit's
temp files live in one folder per process, `<tmp>/pcgkit-<uid>/run-*` (`claim_temp_dir`), locked while the
process lives: each command removes its own when it ends and sweeps those whose owner is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from pcgkit.errors import EnvironmentSetupError, Interrupted

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
GRACE_S = 10.0  # how long the children get to stop on SIGTERM before SIGKILL


class _State:
    def __init__(self) -> None:
        # RLock: the handler runs in the main thread, which may itself be inside register().
        self.lock = threading.RLock()
        self.groups: set[int] = set()
        self.signum: int | None = None
        self.defer_depth = 0
        self.installed = False
        self.temp_owner: int | None = None  # the pid whose temp folder claim_temp_dir made
        self.shared_temp: str | None = None  # the temp dir before the claim: what outlives this process
        self.run_temp: str | None = None  # the claimed run folder itself


_STATE = _State()


def _signal_groups(signum: int, groups: Iterable[int] | None = None) -> list[int]:
    """Send signum to each group (every registered one by default); the groups that still had a member."""
    if groups is None:
        with _STATE.lock:
            groups = list(_STATE.groups)
    live = []
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signum)
            live.append(pgid)
    return live


def stop_all_groups(grace_s: float = GRACE_S) -> None:
    """SIGTERM every group, SIGKILL what is still there after grace_s (checked every 50 ms)."""
    live = _signal_groups(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while live and time.monotonic() < deadline:
        time.sleep(0.05)
        running = _running_groups()
        live = [g for g in live if g in running] if running is not None else _signal_groups(0, live)
    _signal_groups(signal.SIGKILL, live)


def _running_groups() -> set[int] | None:
    """Process groups with a member that is not a zombie (from /proc; None without it): a leader not reaped yet
    (the main thread is in the handler, not in wait()) would otherwise hold every stop for the whole grace."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    groups = set()
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != b"Z":
            groups.add(int(fields[2]))
    return groups


def register_group(pgid: int) -> None:
    """Track a live child group; one that starts after a stop signal is killed at once."""
    with _STATE.lock:
        _STATE.groups.add(pgid)
        stopping = _STATE.signum is not None
    if stopping:
        _signal_groups(signal.SIGKILL)


def unregister_group(pgid: int) -> None:
    with _STATE.lock:
        _STATE.groups.discard(pgid)


def raise_if_stopping() -> None:
    """In any thread: raise Interrupted when a stop signal has arrived (no new work after it)."""
    if _STATE.signum is not None:
        raise Interrupted(_STATE.signum)


def request_stop(signum: int) -> None:
    """Act as if signum had arrived (a KeyboardInterrupt seen without the policy installed)."""
    with _STATE.lock:
        if _STATE.signum is None:
            _STATE.signum = signum
    _signal_groups(signal.SIGKILL)


def _handler(signum: int, frame) -> None:
    if _STATE.signum is not None:  # a later signal
        _signal_groups(signal.SIGKILL)
        return
    _STATE.signum = signum
    stop_all_groups()
    if _STATE.defer_depth == 0:
        raise Interrupted(signum)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Finish this block (a report being written) before a stop signal takes effect: Interrupted at its end, only
    for a signal that arrived during it (a report written *because* of an earlier signal is not cut short)."""
    before = _STATE.signum
    _STATE.defer_depth += 1
    try:
        yield
    finally:
        _STATE.defer_depth -= 1
    if _STATE.defer_depth == 0 and before is None:
        raise_if_stopping()


TEMP_HELD = ".held"  # the lock a live process holds in its temp folder
_UNFINISHED_AGE_S = 60.0  # a `new-*` folder older than this lost its process before it could lock it


def _private_base(base: Path) -> bool:
    """The shared temp dir's pcgkit-<uid> folder is ours alone: a real folder, this user's, mode 0700."""
    try:
        base.mkdir(mode=0o700, exist_ok=True)
        info = os.lstat(base)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def sweep_temp(base: Path) -> None:
    """Remove the run folders in `base` whose process is gone (its lock is free); a live one is never touched."""
    from pcgkit.util.envlock import try_exclusive

    for folder in base.iterdir():
        if folder.name.startswith("new-"):
            with contextlib.suppress(OSError):
                if time.time() - os.lstat(folder).st_mtime > _UNFINISHED_AGE_S:
                    shutil.rmtree(folder, ignore_errors=True)
            continue
        if not folder.name.startswith("run-") or folder.is_symlink() or not folder.is_dir():
            continue
        try:
            hold = try_exclusive(folder / TEMP_HELD)
        except EnvironmentSetupError:
            continue
        if hold is not None:
            with hold:
                shutil.rmtree(folder, ignore_errors=True)


def lasting_temp_dir() -> Path:
    """The temp dir for a file the user is told to read after the kit exits (an internal error's traceback):
    the shared one, never this process's run folder, which is removed at exit."""
    current = tempfile.gettempdir()
    return Path(_STATE.shared_temp if _STATE.shared_temp and current == _STATE.run_temp else current)


def claim_temp_dir() -> Path | None:
    """This process's temp folder (once per process): `tempfile` creates everything under it from now on; it is
    removed at exit, and a later command sweeps it if this one was killed. None where the shared temp dir holds
    no private pcgkit-<uid> folder (then tempfile's default stays)."""
    if _STATE.temp_owner == os.getpid():
        return Path(tempfile.gettempdir())
    from pcgkit.util.envlock import open_lock

    base = Path(tempfile.gettempdir()) / f"pcgkit-{os.getuid()}"
    if not _private_base(base):
        return None
    with contextlib.suppress(OSError):
        sweep_temp(base)
    try:
        fresh = Path(tempfile.mkdtemp(prefix="new-", dir=base))
        hold = open_lock(fresh / TEMP_HELD)  # O_CLOEXEC: no child keeps it
        fcntl.flock(hold, fcntl.LOCK_EX)
        folder = fresh.with_name("run-" + fresh.name[len("new-") :])
        os.rename(fresh, folder)  # a sweeper only looks at run-* folders, and only at those whose lock is free
    except (OSError, EnvironmentSetupError):
        return None
    owner = os.getpid()
    _STATE.temp_owner = owner
    _STATE.shared_temp = tempfile.gettempdir()
    _STATE.run_temp = tempfile.tempdir = str(folder)

    def remove() -> None:
        if os.getpid() == owner:
            shutil.rmtree(folder, ignore_errors=True)
            hold.close()

    atexit.register(remove)
    return folder


@contextlib.contextmanager
def stop_policy() -> Iterator[None]:
    """Install the handlers for STOP_SIGNALS (main thread only; elsewhere a no-op)."""
    if _STATE.installed:
        yield
        return
    if threading.current_thread() is not threading.main_thread():
        try:
            yield
        finally:
            _STATE.signum = None  # a request_stop off the main thread must not outlive its run
        return
    claim_temp_dir()
    previous = {sig: signal.signal(sig, _handler) for sig in STOP_SIGNALS}
    _STATE.installed, _STATE.signum = True, None
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _STATE.installed, _STATE.signum, _STATE.defer_depth = False, None, 0
