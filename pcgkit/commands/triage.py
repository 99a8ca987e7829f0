"""`pcgkit triage [LOG ...|-] [--json] [--env ENV.json | --python ENV]`: read logs as pasted, print the
diagnosis and what to do, personal to the user's environment when one is given.

The command handler: input is read here (files, stdin for `-` / no argument, the env capture); the
case catalog is read here and handed down as values (CatalogView: the stage never imports it);
everything after is pure (pcgkit.values.signature.read_log -> diagnose -> read_facts -> advise ->
personal_answer) and rendered at the end, the personal answer first so 80x24 shows it.
Exit 0 when every log got a diagnosis; 2 when an input could not be read (one line each, after the
diagnoses of the others). Input is bounded (MAX_LOG_BYTES); a FIFO or a folder of logs is read too.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path

from pcgkit import catalog
from pcgkit.errors import ExitCode, UsageError
from pcgkit.triage.advice import Advice, CatalogView, KitData, advise, load_data, next_steps
from pcgkit.triage.diagnose import Diagnosis, Kind, diagnose
from pcgkit.triage.facts import Fact, read_facts
from pcgkit.triage.personal import Personal, personal_answer
from pcgkit.triage.userenv import UserEnv, from_capture, from_facts, merged
from pcgkit.util import atomic
from pcgkit.values.signature import read_log

SCHEMA = "pcgkit.triage/1"


class UnreadableLog(UsageError):
    """Empty, binary or missing input: a usage error (exit 2), one line."""


@dataclasses.dataclass(frozen=True)
class Triage:
    source: str
    lines: int
    diagnosis: Diagnosis
    facts: tuple[Fact, ...]
    advice: Advice | None
    next_steps: tuple[str, ...]
    personal: Personal | None = None  # the answer for the user's own versions (--env / --python), first on screen
    user: UserEnv | None = None

    def to_dict(self) -> dict:
        return {"source": self.source, "lines": self.lines, **self.diagnosis.to_dict(),
                "facts": [f.to_dict() for f in self.facts], "advice": self.advice.to_dict() if self.advice else None,
                "next_steps": list(self.next_steps),
                "personal": {"environment": dataclasses.asdict(self.user), "lines": list(self.personal.lines),
                             "sources": list(self.personal.sources), "advice": self.personal.answer}
                if self.user and self.personal else None}


def catalog_view() -> CatalogView:
    """The catalog's failure modes and attempted fixes, as values for triage: the handler assembles, the stage
    judges with whatever modes it is given (a mode added to the catalog is recognised with no triage change)."""
    entries = catalog.CATALOG  # read at call time: the catalog as it stands (a test may extend it)
    judged = [e for e in entries if e.family in (catalog.Family.FAILURE, catalog.Family.FIX)]
    return CatalogView(modes=tuple(e.mode for e in judged), exportable=frozenset(e.id for e in entries if e.exportable),
                       workarounds=tuple((e.id, e.workaround) for e in entries if e.workaround))


def decode_log(data: bytes, source: str) -> str:
    """The log's text; UnreadableLog for empty or binary input."""
    if not data.strip():
        raise UnreadableLog(f"{source}: empty input, nothing to triage")
    if b"\x00" in data[:65536]:
        raise UnreadableLog(f"{source}: binary data (NUL bytes), not a text log")
    text = data.decode("utf-8", errors="replace")
    if text[:65536].count("\ufffd") > len(text[:65536]) // 10:
        raise UnreadableLog(f"{source}: not text (more than 10% undecodable bytes)")
    return text


def triage_text(text: str, source: str, data: KitData, view: CatalogView, user: UserEnv | None = None) -> Triage:
    """One log's triage. Pure (the catalog view, the kit's data and the user's capture come in as values)."""
    reading = read_log(text)
    diagnosis = diagnose(reading, view.modes)
    facts = read_facts(text)
    who = merged(user, from_facts(facts)) if user is not None else None
    sglang = who.sglang if who is not None else None
    advice = advise(diagnosis, facts, data, view, sglang)
    steps = advice.next_steps if advice else next_steps(diagnosis, facts, data, view, sglang)
    personal = personal_answer(diagnosis, who, data.evidence) if who is not None else None
    return Triage(source, reading.lines, diagnosis, facts, advice, steps, personal, who)


def render(t: Triage) -> str:
    d = t.diagnosis
    mode = f" ({d.mode or 'mode undetermined'})" if d.kind is Kind.KNOWN_BUG else ""
    out = [f"== {t.source} ({t.lines} lines)", f"diagnosis: {d.kind}{mode}   confidence: {d.confidence}",
           f"  {d.summary}"]
    out += [f"  {line}" for line in (t.personal.lines if t.personal else ())]
    if d.kind is not Kind.NO_FAILURE and t.next_steps:
        out += ["next steps:"] + [f"  {s}" for s in t.next_steps]
    out += [f"piecewise: {d.piecewise} ({d.piecewise_reason})"]
    if d.survived:
        out.append("survived in the paste: " + ", ".join(d.survived))
    out.append("evidence:")
    out += [f"  line {e.line}: {e.text[:160]}  [{e.why}]" for e in d.evidence] or ["  (none)"]
    if d.missing:
        out += ["missing:"] + [f"  {m}" for m in d.missing]
    out.append("facts: " + ("; ".join(f"{f.name}={f.value} (line {f.line}, {f.how})" for f in t.facts) or "none in the log"))
    if t.advice is not None:
        a = t.advice
        out += ["what to do:", "  turn piecewise off:"] + [f"    {w}" for w in a.workaround]
        out += [f"    cost: {a.cost}", "  fixed in:"] + [f"    {f}" for f in a.fixed_in]
        out += ["  dead ends (measured by the kit):"] + [f"    {x}" for x in a.dead_ends]
        out += ["  " + m for m in a.matrix] + ["  upstream:"] + [f"    {link}" for link in a.links]
    if t.personal and t.personal.sources:
        out += ["sources of the answer above:"] + [f"  {s}" for s in t.personal.sources]
    return "\n".join(out)


Reader = Callable[[], bytes]  # an input's bytes, read when its turn comes (UnreadableLog when it cannot be)
MAX_LOG_BYTES = 64 * 1024**2  # a server log is MBs; `yes | pcgkit triage` must not eat the memory
_CHUNK = 1024**2


def _read_bounded(stream, source: str) -> bytes:
    """At most MAX_LOG_BYTES from a binary stream (a pipe may never end); a note on stderr when cut."""
    chunks: list[bytes] = []
    size = 0
    while size < MAX_LOG_BYTES:
        chunk = stream.read(min(_CHUNK, MAX_LOG_BYTES - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    if stream.read(1):
        print(f"pcgkit triage: {source}: input truncated at {MAX_LOG_BYTES // 1024**2} MiB; "
              "the diagnosis is of that part (pass the end of the log, e.g. `tail -c 50M`)", file=sys.stderr)
    return b"".join(chunks)


def _read_stdin() -> bytes:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise UnreadableLog("<stdin>: stdin is closed; pass a log file, or pipe one in (`docker logs x 2>&1 | pcgkit triage -`)")
    try:
        return _read_bounded(stream, "<stdin>")
    except (OSError, ValueError) as exc:
        raise UnreadableLog(f"<stdin>: cannot read ({exc}); pass a log file instead") from None


def _read_file(path: Path, name: str) -> bytes:
    """One file or FIFO (`<(docker logs x)`), bounded; a device (/dev/zero) or a socket is refused, not read."""
    import stat

    try:
        mode = path.stat().st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise UnreadableLog(f"{name}: a device or socket, not a log file")
        with path.open("rb") as stream:  # a FIFO opens and reads like a file
            return _read_bounded(stream, name)
    except OSError as exc:
        raise UnreadableLog(f"{name}: cannot read ({exc.strerror or exc})") from None


def _read_path(name: str) -> list[tuple[str, Reader]]:
    """A file, a FIFO or a folder (each file inside, sorted), each as a reader called when its turn comes:
    a folder of 30 large logs holds one log at a time, and the first diagnosis prints before the second is read."""
    path = Path(name)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file())
        if not files:
            raise UnreadableLog(f"{name}: a folder with no files in it; give the log files")
        return [(str(f), _reader(f, str(f))) for f in files]
    if not (path.exists() or path.is_symlink()):
        raise UnreadableLog(f"{name}: no such file")
    return [(name, _reader(path, name))]


def _reader(path: Path, name: str) -> Reader:
    def read() -> bytes:
        return _read_file(path, name)
    return read


def _inputs(paths: list[str]) -> list[tuple[str, Reader]]:
    """(source, reader) per input; a reader returns the bytes or raises UnreadableLog when called, so one bad
    input never stops the others and nothing is read before its turn."""
    out: list[tuple[str, Reader]] = []
    for name in paths or ["-"]:
        try:
            out += [("<stdin>", _read_stdin)] if name == "-" else _read_path(name)
        except UnreadableLog as exc:
            out.append((name if name != "-" else "<stdin>", _raiser(exc)))
    return out


def _raiser(exc: UnreadableLog) -> Reader:
    def read() -> bytes:
        raise exc
    return read


def _user_env(args: argparse.Namespace) -> UserEnv | None:
    """The user's environment: a capture file (--env) or a capture taken now in that interpreter (--python)."""
    from pcgkit.util.untrusted import UntrustedValueError

    if args.env:
        path = Path(args.env)
        if not (path.exists() or path.is_symlink()):
            raise UsageError(f"--env {args.env}: no such file (write one with `pcgkit env --json --out env.json`)")
        # bounded, and a pipe is read like a file: `--env <(pcgkit env --json)`
        capture: dict = atomic.read_json_object(path, "--env", allow_pipe=True)
        if not str(capture.get("schema", "")).startswith("pcgkit.env/"):
            raise UsageError(f"--env {args.env}: not a pcgkit env capture (no pcgkit.env schema)")
        source = args.env
    elif args.python:
        from pcgkit.util.foreign_env import capture_in

        capture, source = capture_in(args.python), f"--python {args.python}"
    else:
        return None
    try:
        return from_capture(capture, source)
    except UntrustedValueError as exc:
        raise UsageError(f"not a pcgkit env capture: {exc}") from None


def run(args: argparse.Namespace) -> int:
    inputs = _inputs(args.logs)
    user = _user_env(args)
    data, view = load_data(), catalog_view()
    entries: list[dict] = []
    shown: list[str] = []  # sources whose answer is printed
    problems: list[str] = []
    for source, read in inputs:
        try:
            result = triage_text(decode_log(read(), source), source, data, view, user)
        except UnreadableLog as exc:
            problems.append(str(exc))
            entries.append({"source": source, "error": str(exc)})
            continue
        entries.append(result.to_dict())
        if not args.json:  # each answer as soon as it is known, before the next log is read
            print(("\n\n" if shown else "") + render(result), flush=True)
        shown.append(source)
    if args.json:
        print(json.dumps({"schema": SCHEMA, "logs": entries}, indent=1))
    for problem in problems:  # after the diagnoses: one line each, the good logs' answers kept
        print(f"pcgkit: error: {problem}", file=sys.stderr)
    return int(ExitCode.USAGE) if problems else 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "triage", help="diagnose a pasted crash log: this bug (which mode), related, another failure, or none",
        description="Diagnose a crash log as pasted: this bug (which mode), a related one, another failure, or none; "
                    "with the evidence lines and what to do.",
        epilog="examples:\n  %(prog)s server.log\n  %(prog)s server.log --python /path/to/venv/bin/python\n"
               "  docker logs sglang 2>&1 | %(prog)s -\n  %(prog)s --json server.log --env env.json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("logs", nargs="*", metavar="LOG", help="log files; '-' or none reads stdin")
    parser.add_argument("--json", action="store_true", help=f"machine-readable output ({SCHEMA})")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--env", metavar="ENV.json", help="your environment (`pcgkit env --json --out env.json`): "
                       "answers for your versions first")
    where.add_argument("--python", metavar="ENV", help="the interpreter that crashed: capture its environment now and "
                       "answer for its versions")
    parser.set_defaults(func=run)
