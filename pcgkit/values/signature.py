"""Turn a dynamo failure (an exception object, or the text of one in a log) into a Signature.

Pure: no torch import. The parser reads the message text that torch prints, so the same code
works on a live exception, on a failure in a server log (pcgkit.values.logread reads the whole log and
calls parse_message on each failure it finds) and on fixtures captured from older torch releases.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterable, Sequence

# "File "/x/site-packages/flashinfer/jit/cpp_ext.py", line 69, in get_cuda_version"
# (Python's fault handler prints the same without the comma: 'File "...", line 373 in ncclAllReduce'.)
FRAME_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+),? in (?P<function>[^\s]+)')
# Graph-break registry ids appear from torch 2.9 on as ".../gb/gb0007.html"; 2.8 and older print none.
_GRAPH_BREAK_ID_RE = re.compile(r"\b(gb\d{4})\b")
_EXPLANATION_RE = re.compile(r"^\s*Explanation:\s*(?P<text>.+)$", re.MULTILINE)
# Dynamo prints "module: <unknown module>, qualname: datetime.now" when it cannot name the module.
SKIPPED_CALLABLE_RE = re.compile(r"module: (?P<module><unknown module>|[^,\s]+), qualname: (?P<qualname>[^,\s)]+)")

LIBRARY_PACKAGES: tuple[str, ...] = ("flashinfer",)


@dataclasses.dataclass(frozen=True)
class Frame:
    file: str  # path relative to the package root when inside one ("flashinfer/jit/cpp_ext.py")
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.function}"

    @property
    def short(self) -> str:
        """basename:line:function, the form used in tables."""
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line}:{self.function}"


@dataclasses.dataclass(frozen=True)
class Signature:
    exception_type: str
    message_head: str
    graph_break_id: str | None = None
    explanation: str | None = None
    skipped_callable: str | None = None  # "_thread.allocate_lock" when dynamo names the builtin
    innermost_library_frame: Frame | None = None
    frame_chain: tuple[Frame, ...] = ()
    lru_cache_warnings: tuple[str, ...] = ()

    def short(self) -> str:
        """One line for tables: graph-break id, innermost library frame, message head."""
        parts = [self.graph_break_id or "", str(self.innermost_library_frame.short) if self.innermost_library_frame else ""]
        return " ".join(p for p in parts if p) or self.message_head[:80]

    def frames_in(self, fragment: str) -> list[Frame]:
        return [f for f in self.frame_chain if fragment in f.file]

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["innermost_library_frame"] = str(self.innermost_library_frame) if self.innermost_library_frame else None
        data["frame_chain"] = [str(f) for f in self.frame_chain]
        data["lru_cache_warnings"] = list(self.lru_cache_warnings)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Signature:
        inner = data.get("innermost_library_frame")
        return cls(
            exception_type=data["exception_type"],
            message_head=data["message_head"],
            graph_break_id=data.get("graph_break_id"),
            explanation=data.get("explanation"),
            skipped_callable=data.get("skipped_callable"),
            innermost_library_frame=parse_frame_str(inner) if inner else None,
            frame_chain=tuple(parse_frame_str(f) for f in data.get("frame_chain", ())),
            lru_cache_warnings=tuple(data.get("lru_cache_warnings", ())),
        )


def parse_frame_str(text: str) -> Frame:
    file, line, function = text.rsplit(":", 2)
    return Frame(file, int(line), function)


def package_relative(path: str) -> str:
    """'/v/lib/python3.12/site-packages/flashinfer/jit/cpp_ext.py' -> 'flashinfer/jit/cpp_ext.py'."""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return path.rsplit(marker, 1)[1]
    for package in LIBRARY_PACKAGES + ("torch", "sglang"):
        token = f"/{package}/"
        if token in path:
            return package + "/" + path.rsplit(token, 1)[1]
    return path


def parse_frames(text: str) -> tuple[Frame, ...]:
    return tuple(
        Frame(package_relative(m["file"]), int(m["line"]), m["function"]) for m in FRAME_RE.finditer(text)
    )


def innermost_library_frame(frames: Sequence[Frame], packages: Iterable[str] = LIBRARY_PACKAGES) -> Frame | None:
    prefixes = tuple(f"{p}/" for p in packages)
    return next((frame for frame in reversed(frames) if frame.file.startswith(prefixes)), None)


def skipped_callable_name(match: re.Match | None) -> str | None:
    if match is None:
        return None
    if match["module"].startswith("<"):  # no module name to report: the qualname alone says it
        return match["qualname"]
    return f"{match['module']}.{match['qualname']}"


def _user_code_section(message: str) -> str:
    """The 'from user code:' block that dynamo appends: the traced frames, outermost first."""
    _, sep, rest = message.partition("from user code:")
    return rest if sep else ""


def parse_message(
    exception_type: str,
    message: str,
    lru_cache_warnings: Sequence[str] = (),
    extra_frames_text: str = "",
) -> Signature:
    """Build a Signature from an exception's type name and its full message text."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    head = lines[0] if lines else ""
    gb = _GRAPH_BREAK_ID_RE.search(message)
    explanation = _EXPLANATION_RE.search(message)
    skipped = SKIPPED_CALLABLE_RE.search(message)
    frames = parse_frames(_user_code_section(message)) or parse_frames(extra_frames_text)
    return Signature(
        exception_type=exception_type,
        message_head=head[:200],
        graph_break_id=gb.group(1) if gb else None,
        explanation=explanation["text"].strip()[:300] if explanation else None,
        skipped_callable=skipped_callable_name(skipped),
        innermost_library_frame=innermost_library_frame(frames),
        frame_chain=frames,
        lru_cache_warnings=tuple(lru_cache_warnings),
    )


def parse_exception(exc: BaseException, lru_cache_warnings: Sequence[str] = ()) -> Signature:
    """Signature of a live exception. Falls back to dynamo's real_stack, then the traceback, for frames."""
    import traceback

    exc_type = f"{type(exc).__module__}.{type(exc).__qualname__}"
    extra = ""
    real_stack = getattr(exc, "real_stack", None)
    if real_stack:
        extra = "".join(traceback.format_list(real_stack))
    elif exc.__traceback__ is not None:
        extra = "".join(traceback.format_tb(exc.__traceback__))
    return parse_message(exc_type, str(exc), lru_cache_warnings, extra_frames_text=extra)
