"""The kit's file locks and the stamp that says a folder is the kit's: one way to take each, never through a link.

Every lock file (an environment's build lock `.NAME.lock`, a matrix cell's use lock `.NAME.use`) is opened by
`open_lock`: never through a symbolic link (a planted `.NAME.lock -> ~/x` is refused, not emptied), never
truncated, never blocking on a FIFO, and read-only: flock(2) needs no write permission, so another user can lock
a shared environment it may only read. A lock file is never unlinked: a process blocked on the old inode would
hold a lock nobody else sees.

Two kit processes sharing a cache must not install into one environment at once: the second waits on
`build_lock`, then finds the first's completion stamp and reuses it. `pcgkit cache remove` takes both locks
without waiting (`try_exclusive`) and keeps an environment being built or used, naming the holder (`holders`).
It deletes only folders that carry `OWNED_MARK`, the stamp the kit writes into every folder it creates.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from pcgkit.errors import EnvironmentSetupError

OWNED_MARK = ".pcgkit-owned"
_MARK_TEXT = (
    "made by pcgkit: `pcgkit cache remove` may delete this folder; the kit deletes no folder without this file\n"
)


class LockFileError(EnvironmentSetupError):
    """A lock path the kit cannot use (a link, a FIFO, a folder, no permission): exit 4, one line."""

    hint = "the kit's lock files are plain files it creates beside each environment; nothing was built or changed"


class NotRegularFile(OSError):
    """`why`: "is a symbolic link" / "is a named pipe (FIFO)" / ...; `refused` False: the open itself failed."""

    def __init__(self, why: str, refused: bool = True) -> None:
        super().__init__(why)
        self.why, self.refused = why, refused


def open_regular(path: Path, flags: int, mode: int = 0o644) -> int:
    """The one way the kit opens its own files (locks, stamps, manifests, child logs): never through a symbolic link
    (the kit would write or truncate what it names), never blocking on a FIFO, only a regular file (NotRegularFile
    otherwise); close-on-exec."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotRegularFile("is a symbolic link") from None
        raise NotRegularFile(f"cannot open ({exc.strerror or exc})", refused=False) from None
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        raise NotRegularFile("is a named pipe (FIFO)" if stat.S_ISFIFO(kind) else "is not a regular file")
    return fd


def open_lock(path: Path) -> IO[bytes]:
    """The lock file at `path` through open_regular, read-only (created 0644 when absent)."""
    try:
        return os.fdopen(open_regular(path, os.O_RDONLY | os.O_CREAT), "rb")
    except NotRegularFile as exc:
        remove = " (remove the link)" if "link" in exc.why else " (remove it)"
        detail = f", not the kit's lock file{remove}" if exc.refused else ""
        raise LockFileError(f"lock {path}: {exc.why}{detail}") from None


@contextlib.contextmanager
def held(path: Path, *, shared: bool = False) -> Iterator[IO[bytes]]:
    """Hold the lock file at `path` (exclusive, or shared) until the block ends, waiting for it."""
    with open_lock(path) as handle:
        fcntl.flock(handle, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield handle


def try_exclusive(path: Path) -> IO[bytes] | None:
    """The lock at `path` held exclusively without waiting (closing it releases), or None while another holds it."""
    handle = open_lock(path)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def holders(path: Path) -> list[str]:
    """'pid 123 (pcgkit matrix ...)' for each process /proc/locks says holds a lock on `path` (Linux; else [])."""
    try:
        info = os.stat(path, follow_symlinks=False)
        table = Path("/proc/locks").read_text()
    except OSError:
        return []
    found = []
    for line in table.splitlines():
        fields = line.split()
        if len(fields) < 6 or "->" in fields:  # a waiter, not a holder
            continue
        pid, inode = fields[4], fields[5].rsplit(":", 1)[-1]
        if inode == str(info.st_ino) and pid.isdigit() and pid not in found:
            found.append(pid)
    return [f"pid {pid} ({_command_line(int(pid))})" for pid in found]


def _command_line(pid: int) -> str:
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "gone"
    return " ".join(" ".join(w.decode("utf-8", "replace") for w in words).split())[:120] or "?"  # one line


def is_owned(folder: Path) -> bool:
    """True when `folder` is a real folder (not a link) that carries the kit's stamp."""
    try:
        return stat.S_ISDIR(os.lstat(folder).st_mode) and stat.S_ISREG(os.lstat(folder / OWNED_MARK).st_mode)
    except OSError:
        return False


def owned_dir(folder: Path) -> Path:
    """mkdir -p `folder`, stamping every folder this call creates as the kit's (a folder that was there is not
    claimed: the user's $HOME set as the cache stays the user's). Returns `folder`."""
    missing = []
    for candidate in (folder, *folder.parents):
        if candidate.exists() or candidate.is_symlink():
            break
        missing.append(candidate)
    folder.mkdir(parents=True, exist_ok=True)
    for created in missing:
        stamp(created)
    return folder


def stamp(folder: Path) -> None:
    """Write the kit's stamp into `folder` (best effort: a folder this user cannot write stays unstamped, and then
    the kit never deletes it)."""
    with contextlib.suppress(OSError):
        fd = open_regular(folder / OWNED_MARK, os.O_WRONLY | os.O_CREAT)
        with os.fdopen(fd, "w") as handle:
            if os.fstat(fd).st_size == 0:
                handle.write(_MARK_TEXT)


def build_lock_path(env_dir: Path) -> Path:
    return env_dir.parent / f".{env_dir.name}.lock"


def use_lock_path(env_dir: Path) -> Path:
    """The lock a matrix cell holds shared on its environment while it runs in it (pcgkit.matrix.backends.venv)."""
    return env_dir.parent / f".{env_dir.name}.use"


@contextlib.contextmanager
def build_lock(env_dir: Path) -> Iterator[None]:
    """Hold the exclusive build lock of `env_dir` (its parent made and stamped). The environment's folder is stamped
    when the lock is let go: the builder made it under this lock (or an older kit did, before the stamp existed:
    the name is the kit's own hash-named folder)."""
    owned_dir(env_dir.parent)
    with held(build_lock_path(env_dir)):
        try:
            yield
        finally:
            if env_dir.is_dir() and not env_dir.is_symlink() and not is_owned(env_dir):
                stamp(env_dir)
