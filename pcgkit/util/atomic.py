"""The one file writer: atomic, unique temp names, redacted, and a one-line error for a bad path.

Every report, result and log the kit writes goes through `write_text` / `write_json`:
- the text is written to a temp file with a unique name in the target's folder (two processes
  writing one cell.json never share a temp file), flushed and fsynced, then `os.replace`d over the
  target: a reader sees the old file or the new one, never half of one, and a killed or
  interrupted writer leaves the old file intact (its temp file is removed);
- a symlink at the target is replaced, never written through (a planted link cannot redirect a
  report onto another file); a symlinked *folder* is followed, as the user asked for it;
- the text passes through the one redaction pass (pcgkit.util.redact) on the way out;
- a target that is a folder, a parent that is a file, a read-only folder or a full disk raise
  OutputPathError / UnwritableOutputError with the path and the cause on one line.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pcgkit.errors import OutputPathError, UnwritableOutputError
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


def check_file_target(path: Path, what: str = "--out") -> Path:
    """A file to be written must not be an existing folder, and its parent must not be a file."""
    path = Path(path)
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


def read_json_object(path: Path, what: str) -> dict:
    """A JSON object the user pointed at (--env, --diff, a history file): one-line UsageError otherwise."""
    import json as _json

    from pcgkit.errors import UsageError

    path = Path(path)
    try:
        data = _json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{what} {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{what} {path}: is a folder, expected a JSON file") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} {path}: not UTF-8 text (byte {exc.start})") from None
    except _json.JSONDecodeError as exc:
        raise UsageError(f"{what} {path}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except OSError as exc:
        raise UsageError(f"{what} {path}: cannot read ({exc.strerror})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{what} {path}: the top level is a JSON {type(data).__name__}, expected an object")
    return data


def write_bytes(path: Path, data: bytes) -> Path:
    """Atomically replace path with data (see the module docstring). No redaction: bytes are opaque."""
    path = Path(path)
    check_file_target(path, "output")
    ensure_dir(path.parent)
    tmp_name = None
    try:
        fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o666 & ~_UMASK)  # mkstemp makes 0600; a report is as readable as any file
        os.replace(tmp_name, path)
        tmp_name = None
    except OSError as exc:
        raise as_kit_error(path, exc) from exc
    finally:
        if tmp_name is not None:  # failed or interrupted (Interrupted is a BaseException): no litter
            try:
                os.unlink(tmp_name)
            except OSError:
                pass
    return path


def write_text(path: Path, text: str, *, redact: bool = True) -> Path:
    """Atomically write text (UTF-8), redacted unless the caller has redacted it already."""
    if redact:
        markup = Path(path).suffix.lower() in MARKUP_SUFFIXES
        text = redact_text(text, secret_values(dict(os.environ)), marker=ESCAPED_MARKER if markup else REDACTED)
    return write_bytes(path, text.encode("utf-8", "replace"))


def write_json(path: Path, data: Any, *, indent: int | None = 2) -> Path:
    """Atomically write a JSON document, every string redacted *before* serialising (so a
    replacement can never cross a string boundary)."""
    clean = redact_tree(data, secret_values(dict(os.environ)))
    return write_text(path, json.dumps(clean, indent=indent, sort_keys=True) + "\n", redact=False)
