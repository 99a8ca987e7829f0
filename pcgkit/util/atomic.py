"""The one file writer and the one reader of files the user points at: atomic, redacted, bounded, one-line errors.

Every report, result and log the kit writes goes through `write_text` / `write_json`:
- written to a uniquely named temp file in the target's folder, fsynced, then `os.replace`d over the target: a
  reader sees the old file or the new one, never half of one, and a killed writer leaves the old file (and no
  temp file); a symlink at the target is replaced, never written through; a symlinked *folder* is followed;
- redacted on the way out (pcgkit.util.redact);
- a folder as target, a file as parent, a read-only folder or a full disk is one OutputPathError /
  UnwritableOutputError line; a device, a FIFO or anything under /dev or /proc is never a target (as root,
  renaming over /dev/null would make it a regular file): `-` is how a command writes to stdout.

What the user owns is never replaced unasked: a command that writes into a folder the user named (`repro --out`,
`e2e checkpoint --out`, `docker context DEST`, `ci github`, `env --out`, `issue --out`) goes through
`OutputFolder`, which replaces an existing file only when the folder's manifest (`.pcgkit-written.json`: names
and SHA-256 of what the kit wrote) says the kit wrote exactly those bytes, or with `--force`; `write_output` is
the same rule for one file, its record kept in the kit's state folder (`state_dir()`, LEDGER_NAME).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import json
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pcgkit.errors import OutputPathError, UnwritableOutputError, UsageError
from pcgkit.util.redact import REDACTED, redact_text, redact_tree, secret_values

# In XML and HTML the marker must be text, not a tag: '<redacted>' would vanish (HTML) or break the file (XML).
MARKUP_SUFFIXES = (".xml", ".html", ".htm")
ESCAPED_MARKER = REDACTED.replace("<", "&lt;").replace(">", "&gt;")

_UMASK = os.umask(0)
os.umask(_UMASK)  # read once at import: os.umask cannot be read without setting it


def ensure_dir(path: Path, what: str = "folder") -> Path:
    """mkdir -p with the kit's one-line errors (a file in the way, read-only, disk full)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputPathError(f"{what} {path}: exists and is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as exc:
        raise OutputPathError(f"{what} {path}: a parent is a file, not a folder ({exc.filename})") from exc
    except OSError as exc:
        raise as_kit_error(path, exc) from exc
    return path


def check_writable_dir(path: Path, what: str = "reports folder") -> Path:
    """Fail early, before an hour of work, when the output folder cannot take files."""
    ensure_dir(path, what)
    if not os.access(path, os.W_OK | os.X_OK):
        raise UnwritableOutputError(f"{what} {path}: read-only (no write permission)")
    return path


STDOUT = "-"  # the one spelling of "write to stdout" for every output option
DEVICE_ROOTS = (Path("/dev"), Path("/proc"), Path("/sys"))
SHARED_MEMORY = Path("/dev/shm")  # a tmpfs of plain files: a temp dir may live there


def is_device_path(path: Path) -> bool:
    """A device node, FIFO or socket, or a path under /dev, /proc or /sys (itself or what a link at it names)."""
    path = Path(path)
    for candidate in {Path(os.path.abspath(path)), Path(os.path.realpath(path))}:
        if SHARED_MEMORY in candidate.parents:
            continue
        if any(candidate == root or root in candidate.parents for root in DEVICE_ROOTS):
            return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def check_file_target(path: Path, what: str = "--out") -> Path:
    """A file to be written must not be an existing folder or a device, and its parent must not be a file."""
    path = Path(path)
    if is_device_path(path):
        raise OutputPathError(f"{what} {path}: is a device or pipe, not a file; use '{STDOUT}' to write to stdout")
    if path.is_dir():
        raise OutputPathError(f"{what} {path}: is a folder; give a file name")
    return path


def as_kit_error(path: Path | str, exc: OSError) -> OutputPathError | UnwritableOutputError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return UnwritableOutputError(f"cannot write {path}: disk full ({exc.strerror})")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return UnwritableOutputError(f"cannot write {path}: read-only ({exc.strerror})")
    if exc.errno == errno.EISDIR:
        return OutputPathError(f"cannot write {path}: is a folder")
    if exc.errno == errno.EEXIST:
        return OutputPathError(f"{path}: exists and is not a folder")
    if exc.errno == errno.ENOTDIR:
        return OutputPathError(f"cannot write {path}: a parent is a file, not a folder")
    return UnwritableOutputError(f"cannot write {path}: {exc.strerror or exc}")


MAX_INPUT_BYTES = 64 << 20  # any one file the user points at: a log, a capture, a config, the history
PIPE_WAIT_S = 60.0  # a pipe the user named that sends nothing (and does not end) for this long is one line


def _read_pipe(path: Path, what: str, limit: int) -> bytes:
    """A FIFO read without ever blocking for good: opened non-blocking (a FIFO nobody writes to reads as empty,
    where a plain open() waits for a writer forever), each read waiting at most PIPE_WAIT_S for data."""
    import select

    silent = UsageError(f"{what} {path}: a pipe that sent nothing for {PIPE_WAIT_S:.0f} s and did not end; give a file")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        chunks: list[bytes] = []
        size = 0
        deadline = time.monotonic() + PIPE_WAIT_S
        while size < limit:
            try:  # a writer with nothing yet: wait for it, boundedly
                chunk = os.read(fd, min(1 << 20, limit - size))
            except BlockingIOError:
                if not select.select([fd], [], [], PIPE_WAIT_S)[0]:
                    raise silent from None
                continue
            if not chunk and not chunks:  # no writer yet (a named pipe's writer may open it after us): wait for one
                if time.monotonic() > deadline:
                    raise silent
                time.sleep(0.05)
                continue
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_user_bytes_checks(path: Path, what: str, *, allow_pipe: bool = False) -> bool:
    """read_user_bytes's refusals, before a byte is read (one UsageError line each): missing, a folder, a device or
    socket, a FIFO unless allowed. True for an allowed FIFO."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise UsageError(f"{what} {path}: no such file") from None
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise UsageError(f"{what} {path}: is a folder, expected a file")
    pipe = stat.S_ISFIFO(mode)
    if not (stat.S_ISREG(mode) or (pipe and allow_pipe)):
        kind = "a named pipe (FIFO)" if pipe else "a device or socket, not a regular file"
        raise UsageError(f"{what} {path}: is {kind}; give a regular file")
    return pipe


def read_user_bytes(path: Path, what: str, *, limit: int = MAX_INPUT_BYTES, allow_pipe: bool = False) -> bytes:
    """The bytes of a file the user pointed at or the kit found by name: a regular file of at most `limit` bytes,
    else one UsageError line (a folder, /dev/zero, a socket, too large). A FIFO is read (bounded) only with
    `allow_pipe`, for inputs named on the command line (`--env <(pcgkit env --json)`); one the kit finds by name
    (history.jsonl, a checkpoint's config.json) is refused, so nobody has to SIGKILL the kit."""
    path = Path(path)
    try:
        if read_user_bytes_checks(path, what, allow_pipe=allow_pipe):
            data = _read_pipe(path, what, limit + 1)
        else:
            with open(path, "rb") as handle:
                data = handle.read(limit + 1)
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise UsageError(f"{what} {path}: larger than {limit >> 20} MiB, more than such a file ever needs")
    return data


MAX_LINE_BYTES = 1 << 20  # a line-per-record file's line longer than this is yielded in pieces


def iter_user_lines(path: Path, what: str) -> Iterator[bytes]:
    """The lines (bytes, line ends kept) of a line-per-record file the kit keeps (history.jsonl), one in memory at a
    time (at most MAX_LINE_BYTES a piece); refused as read_user_bytes refuses a FIFO or a folder."""
    path = Path(path)
    read_user_bytes_checks(path, what)
    try:
        with open(path, "rb") as handle:
            while line := handle.readline(MAX_LINE_BYTES):
                yield line
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot read ({exc.strerror or exc})") from None


def read_user_text(path: Path, what: str) -> str:
    """read_user_bytes (a pipe allowed) as UTF-8 text (a matrix file, a launch file, a --pins file)."""
    data = read_user_bytes(path, what, allow_pipe=True)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} {path}: not UTF-8 text (byte {exc.start})") from None


def parse_json(text: str | bytes, what: str) -> Any:
    """json.loads with every failure one ValueError line: not UTF-8, not JSON, nested too deeply (a 200,000-deep
    document is a RecursionError in the stdlib parser, not a JSONDecodeError)."""
    try:
        return json.loads(text)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except RecursionError:
        raise ValueError(f"{what}: JSON nested too deeply to read") from None


def read_json_object(path: Path, what: str) -> dict:
    """A JSON object the user pointed at (--env, --diff, a capture; a pipe too): one-line UsageError otherwise."""
    path = Path(path)
    data = read_user_bytes(path, what, allow_pipe=True)
    try:
        data = parse_json(data, f"{what} {path}")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not isinstance(data, dict):
        raise UsageError(f"{what} {path}: the top level is a JSON {type(data).__name__}, expected an object")
    return data


def write_bytes(path: Path, data: bytes | Iterable[bytes]) -> Path:
    """Atomically replace path with data (see the module docstring), unredacted: bytes are opaque. `-` is stdout
    for every writer, never a file named '-'. `data` may be pieces (a file streamed through, as append_line does)."""
    path = Path(path)
    pieces: Iterable[bytes] = (bytes(data),) if isinstance(data, (bytes, bytearray)) else data
    if str(path) == STDOUT:
        sys.stdout.flush()  # the text printed before goes first
        stream = getattr(sys.stdout, "buffer", None)
        for piece in pieces:
            if stream is None:
                sys.stdout.write(piece.decode("utf-8", "replace"))
            else:
                stream.write(piece)
        sys.stdout.flush()
        return path
    check_file_target(path, "output")
    ensure_dir(path.parent)
    tmp_name = None
    try:
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            for piece in pieces:
                handle.write(piece)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o666 & ~_UMASK)  # mkstemp makes 0600; a report is as readable as any file
        os.replace(tmp_name, path)
        tmp_name = None
    except OSError as exc:
        raise as_kit_error(path, exc) from exc
    finally:
        if tmp_name is not None:  # failed or interrupted (Interrupted is a BaseException): no litter
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
    return path


def append_line(path: Path, line: str, *, drop: str | None = None, what: str = "history") -> Path:
    """Append one line to a line-per-record file by rewriting it through write_bytes: a full disk or a kill leaves
    the old file whole, and a cut line an older writer left is ended first (never glued to the new one). Bytes
    that are not UTF-8 are kept; lines containing `drop` are replaced by this one (a run reported again). The
    file must be a regular file: a FIFO in its place is one line, never a hang."""
    path = Path(path)
    exists = path.exists() or path.is_symlink()
    if exists:
        read_user_bytes_checks(path, what)  # refused before the temp file is made
    old: Iterable[bytes] = iter_user_lines(path, what) if exists else ()
    key = drop.encode("utf-8") if drop is not None else None
    text = redact_text(line.rstrip("\n"), secret_values(dict(os.environ))) + "\n"

    def body() -> Iterator[bytes]:  # the old file streamed through, whatever its size: one line in memory
        last = b"\n"
        for old_line in old:
            if key is None or key not in old_line:
                yield old_line
                last = old_line
        if not last.endswith(b"\n"):
            yield b"\n"
        yield text.encode("utf-8")

    return write_bytes(path, body())


def _encoded(path: Path, text: str, redact: bool) -> bytes:
    """text as UTF-8, redacted unless the caller did (the marker escaped for XML and HTML files)."""
    if redact:
        markup = Path(path).suffix.lower() in MARKUP_SUFFIXES
        text = redact_text(text, secret_values(dict(os.environ)), marker=ESCAPED_MARKER if markup else REDACTED)
    return text.encode("utf-8", "replace")


def write_text(path: Path, text: str, *, redact: bool = True) -> Path:
    return write_bytes(path, _encoded(path, text, redact))


def write_json(path: Path, data: Any, *, indent: int | None = 2) -> Path:
    """Atomically write JSON, every string redacted *before* serialising (no replacement crosses a string's end)."""
    clean = redact_tree(data, secret_values(dict(os.environ)))
    return write_text(path, json.dumps(clean, indent=indent, sort_keys=True) + "\n", redact=False)


MANIFEST_NAME = ".pcgkit-written.json"  # in a folder the kit fills (repro --out DIR): what it wrote there
MANIFEST_SCHEMA = "pcgkit.written/1"
LEDGER_NAME = "written.json"  # in the kit's state folder: the single files the user named (`env --out FILE`)
_MAX_MANIFEST_BYTES = 1 << 20
MAX_HASHED_BYTES = 256 << 20  # above this (an 8B model's weight shards) a file is known by size and mtime


def state_dir() -> Path:
    """The kit's own state (not a cache: deleting it only costs a --force): $XDG_STATE_HOME/pcgkit, else
    ~/.local/state/pcgkit (the XDG rule: an empty or relative value is unset)."""
    value = os.environ.get("XDG_STATE_HOME", "").strip()
    base = Path(value) if value and os.path.isabs(value) else Path.home() / ".local" / "state"
    return base / "pcgkit"


def _digest(path: Path) -> str | None:
    """SHA-256 of a regular file's bytes (size and modification time for one over MAX_HASHED_BYTES: rewriting
    16 GB of weights must not cost a minute of hashing, and any edit changes the time); None for anything else."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > MAX_HASHED_BYTES:
            return f"size {info.st_size} mtime_ns {info.st_mtime_ns}"
        sha = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
        return sha.hexdigest()
    except OSError:
        return None


@contextlib.contextmanager
def _folder_locked(folder: Path) -> Iterator[None]:
    """flock on the folder itself (no lock file dropped beside the user's files): one manifest writer at a time."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise as_kit_error(folder, exc) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _read_manifest(path: Path) -> dict[str, frozenset[str]]:
    """{key: digests the kit accepts as its own}; a missing, unreadable or non-regular manifest is empty (opened
    without blocking: a FIFO there is no hang)."""
    from pcgkit.util.envlock import open_regular

    try:
        fd = open_regular(path, os.O_RDONLY)
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as handle:
        try:
            data = json.loads(handle.read(_MAX_MANIFEST_BYTES).decode("utf-8"))
        except (OSError, ValueError):
            return {}
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        return {}
    out = {}
    for key, value in files.items():  # one digest, or several while a write is under way (_begin/_finish)
        digests = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        if isinstance(key, str) and digests and all(isinstance(d, str) for d in digests):
            out[key] = frozenset(digests)
    return out


@dataclasses.dataclass(frozen=True)
class OutputFolder:
    """A folder the user named for the kit's output (see the module docstring): `check(names)` before writing
    anything; `write_text` / `write_bytes` for the kit's own output; `record(name)` for a file a library wrote.

    The manifest is changed under a lock on its folder (concurrent writers lose no entry), in two steps: the new
    digest joins the old before the file is replaced, the old goes after, so a failure at any point (a full disk)
    leaves a file the manifest accepts. With `ledger` (`env --out FILE`) the record is kept in the kit's state
    folder, keyed by absolute path, never beside the user's file.
    """

    root: Path
    force: bool = False
    what: str = "--out"
    ledger: bool = False

    @property
    def manifest_path(self) -> Path:
        return state_dir() / LEDGER_NAME if self.ledger else Path(self.root) / MANIFEST_NAME

    def _key(self, name: str) -> str:
        return os.path.join(os.path.abspath(self.root), name) if self.ledger else name

    def written(self) -> dict[str, frozenset[str]]:
        """{key: digests} of what the kit wrote (keys: names in the folder, or absolute paths in the ledger; a
        ledger also honours what an older kit recorded beside the file)."""
        if not self.ledger:
            return _read_manifest(self.manifest_path)
        beside = {self._key(k): v for k, v in _read_manifest(Path(self.root) / MANIFEST_NAME).items()}
        return {**beside, **_read_manifest(self.manifest_path)}

    def foreign(self, names: Iterable[str]) -> list[str]:
        """The names among `names` that exist here and are not the kit's unchanged output. Reads only."""
        root = Path(self.root)
        if str(root) == STDOUT:
            raise OutputPathError(
                f"{self.what} -: this output is a folder of files, it cannot go to stdout; name a folder"
            )
        if is_device_path(root):
            raise OutputPathError(f"{self.what} {root}: is a device, not a folder")
        if root.exists() and not root.is_dir():
            raise OutputPathError(f"{self.what} {root}: exists and is not a folder")
        written = self.written()
        out = []
        for name in names:
            path = root / name
            if is_device_path(path):
                raise OutputPathError(f"{self.what} {path}: is a device or pipe, not a file")
            if not (path.exists() or path.is_symlink()):
                continue
            if path.is_symlink() or path.is_dir() or _digest(path) not in written.get(self._key(name), ()):
                out.append(name)
        return out

    def check(self, names: Iterable[str]) -> OutputFolder:
        """Refuse (one line, nothing written) when any of `names` would replace a file the kit did not write."""
        foreign = [] if self.force else self.foreign(names)
        if foreign:
            shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise OutputPathError(
                f"{self.what} {self.root}: would replace {shown}, which pcgkit did not write (or which changed since); "
                "pass --force to replace, or choose another folder"
            )
        ensure_dir(Path(self.root), self.what)
        return self

    def _update(self, changes: dict[str, frozenset[str]], *, merge: bool = False) -> None:
        """Set (or with `merge`, add to) each key's digests in the manifest, under its folder's lock. The ledger
        is a convenience (a home that cannot take it costs a --force next time): failing to keep it is a note."""
        try:
            with _folder_locked(ensure_dir(self.manifest_path.parent)):
                written = _read_manifest(self.manifest_path)
                written.update({k: (written.get(k, frozenset()) | v) if merge else v for k, v in changes.items()})
                if self.ledger:  # the ledger outlives its files: forget the ones that are gone
                    written = {k: v for k, v in written.items() if k in changes or os.path.lexists(k)}
                files = {k: sorted(v)[0] if len(v) == 1 else sorted(v) for k, v in sorted(written.items()) if v}
                write_json(self.manifest_path, {"schema": MANIFEST_SCHEMA, "files": files})
        except (OutputPathError, UnwritableOutputError) as exc:
            if not self.ledger:
                raise
            print(f"pcgkit: note: not recorded as the kit's ({exc}): replacing it later needs --force", file=sys.stderr)

    def record(self, *names: str) -> None:
        """Note in the manifest that the kit has just written these files (their current digests)."""
        digests = {self._key(name): _digest(Path(self.root) / name) for name in names}
        self._update({key: frozenset([digest]) for key, digest in digests.items() if digest is not None})

    def write_text(self, name: str, text: str, *, redact: bool = True) -> Path:
        return self.write_bytes(name, _encoded(Path(name), text, redact))

    def write_bytes(self, name: str, data: bytes) -> Path:
        """Check, then: the new digest joins the old in the manifest, the file is replaced, the old digest goes."""
        self.check([name])
        path, key = Path(self.root) / name, self._key(name)
        if len(data) > MAX_HASHED_BYTES:  # known by size and time: only once it is written
            write_bytes(path, data)
            self.record(name)
            return path
        new = frozenset([hashlib.sha256(data).hexdigest()])
        self._update({key: new}, merge=True)
        write_bytes(path, data)
        self._update({key: new})
        return path


def write_output(out: str | Path, text: str, *, force: bool = False, what: str = "--out") -> Path | None:
    """One output file the user named: `-` is stdout (None returned); otherwise written atomically under the
    OutputFolder rule (a file the kit did not write is replaced only with force)."""
    if str(out) == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        return None
    path = check_file_target(Path(out), what)
    return OutputFolder(path.parent, force=force, what=what, ledger=True).write_text(path.name, text)
