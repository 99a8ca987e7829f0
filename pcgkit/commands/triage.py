"""`pcgkit triage [LOG ...|-] [--json] [--verbose] [--sglang X] [--flashinfer X] [--torch X] [--arch SM]
[--env ENV.json | --python ENV]`: read logs as pasted, print the diagnosis and what to do on the user's release.

The handler reads the input (files, folders, FIFOs, stdin; a long log in bounded memory through
pcgkit.values.paste.excerpt_stream) and the catalog, and hands both down as values; the rest is pure
(read_log -> diagnose -> read_facts -> advise -> personal_answer), rendered on one 80x24 screen unless --verbose.
The user's release: the flags, else the capture, else the log's own versions. Exit 0 when every log got a
diagnosis; 2 when an input could not be read or a flag names no release (one line each, after the others' diagnoses).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import io
import json
import os
import select
import shlex
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from pcgkit import catalog
from pcgkit.advice import compile_unsafe
from pcgkit.commands import wrapped
from pcgkit.errors import ExitCode, UsageError
from pcgkit.triage.advice import (
    Advice,
    CatalogView,
    KitData,
    advise,
    load_data,
    maintainer_steps,
    next_steps,
)
from pcgkit.triage.diagnose import Diagnosis, Kind, diagnose
from pcgkit.triage.facts import FACT_NEEDLES, Fact, read_facts
from pcgkit.triage.personal import ACTION_LINES, Personal, personal_answer, switch_rows_short
from pcgkit.triage.userenv import BadVersion, UserEnv, from_capture, from_facts, from_flags, merged
from pcgkit.util import atomic
from pcgkit.values.logread import LOG_NEEDLES, read_log
from pcgkit.values.paste import LogExcerpt, excerpt_stream

# /2 (issue 36): `personal` holds notes/actions/statements (was `lines`); `inferred`, `also_consistent_with`,
# `maintainer_steps` added; next steps link a reported thread instead of the repro and issue commands.
SCHEMA = "pcgkit.triage/2"


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
    personal: Personal | None = None  # the answer for the user's release (flags, --env/--python, or the log's versions)
    user: UserEnv | None = None
    maintainer_steps: tuple[str, ...] = ()  # --verbose: env capture, repro, issue draft
    switches: tuple[str, ...] = ()  # no release known: each range of releases with its own switch, one line each
    placed_with: str = ""  # the wheels FlashInfer's source table was read from

    def to_dict(self) -> dict:
        return {"source": self.source, "lines": self.lines, **self.diagnosis.to_dict(),
                "facts": [f.to_dict() for f in self.facts], "advice": self.advice.to_dict() if self.advice else None,
                "next_steps": list(self.next_steps), "maintainer_steps": list(self.maintainer_steps),
                "personal": {"environment": dataclasses.asdict(self.user), "notes": list(self.personal.notes),
                             "actions": list(self.personal.actions), "statements": list(self.personal.full),
                             "sources": list(self.personal.sources),
                             "advice": self.personal.answer.to_dict() if self.personal.answer else None}
                if self.user and self.personal else None}


def catalog_view() -> CatalogView:
    """The catalog's failure modes and attempted fixes, as values for triage: the handler assembles, the stage
    judges with whatever modes it is given (a mode added to the catalog is recognised with no triage change)."""
    entries = catalog.CATALOG  # read at call time: the catalog as it stands (a test may extend it)
    judged = [e for e in entries if e.family in (catalog.Family.FAILURE, catalog.Family.FIX)]
    return CatalogView(modes=tuple(e.mode for e in judged), exportable=frozenset(e.id for e in entries if e.exportable),
                       workarounds=tuple((e.id, e.workaround) for e in entries if e.workaround))


def decode_log(data: bytes | LogExcerpt, source: str) -> LogExcerpt:
    """The log's text (an excerpt of a long one); UnreadableLog for empty or binary input."""
    excerpt = data if isinstance(data, LogExcerpt) else LogExcerpt(data.decode("utf-8", errors="replace"), None)
    text = excerpt.text
    if not text.strip():
        raise UnreadableLog(f"{source}: empty input, nothing to triage")
    if "\x00" in text[:65536]:
        raise UnreadableLog(f"{source}: binary data (NUL bytes), not a text log")
    if text[:65536].count("\ufffd") > len(text[:65536]) // 10:
        raise UnreadableLog(f"{source}: not text (more than 10% undecodable bytes)")
    return excerpt


def prog_name(environ: Mapping[str, str] = os.environ) -> str:
    """How the user runs the kit, for the commands printed back: what the checkout's bootstrap was called as
    (it exports PCGKIT_PROG: `bin/pcgkit`), else `pcgkit` (installed, or the venv's own script)."""
    return environ.get("PCGKIT_PROG") or "pcgkit"


def triage_text(text: str | LogExcerpt, source: str, data: KitData, view: CatalogView, user: UserEnv | None = None,
                prog: str = "pcgkit") -> Triage:
    """One log's triage. Pure (the catalog view, the kit's data and the user's versions come in as values). The
    user's release: `user` (flags, --env, --python) where it says, the log's own versions elsewhere. A long log
    comes as its excerpt (LogExcerpt: head, tail and the lines that can matter, with their own numbers)."""
    numbers = text.numbers if isinstance(text, LogExcerpt) else None
    text = text.text if isinstance(text, LogExcerpt) else text
    reading = read_log(text, numbers=numbers)
    diagnosis = diagnose(reading, view.modes, data.source)
    facts = read_facts(text, numbers)
    from_log = from_facts(facts)
    who = merged(user, from_log) if user is not None else (from_log if from_log.known else None)
    sglang = who.sglang if who is not None else None
    # an SGLang user unless the log shows FlashInfer called directly (no SGLang anywhere) and no release is given
    sglang_user = bool(sglang) or "sglang" in reading.packages_named or "sglang" in text[:65536].lower()
    log = "-" if source == "<stdin>" else shlex.quote(source)  # the log as the user named it
    safety = None
    if diagnosis.kind is Kind.RELATED:  # what a trace-safety certificate says of its FlashInfer call, if it lists it
        safety = compile_unsafe(data.evidence, diagnosis.flashinfer_calls, who.flashinfer if who is not None else None)
    if safety is not None:
        diagnosis = dataclasses.replace(diagnosis, compile_safety=safety.headline)
    advice = advise(diagnosis, facts, data, view, sglang, prog, sglang_user, log, safety)
    steps = advice.next_steps if advice else next_steps(diagnosis, facts, data, sglang, prog, sglang_user, log)
    personal = personal_answer(diagnosis, who, data.evidence) if who is not None else None
    acts = personal is not None and bool(personal.actions)
    switches = tuple(switch_rows_short(data.evidence)) if advice is not None and not acts else ()
    placed_with = ", ".join(data.source.read_from) if data.source is not None else ""
    return Triage(source, reading.lines, diagnosis, facts, advice, steps, personal, who,
                  maintainer_steps(diagnosis, data, view, prog), switches, placed_with)


SCREEN_ROWS, SCREEN_COLUMNS = 24, 80


def _fit(line: str) -> str:
    """A quoted log line at most SCREEN_COLUMNS wide: a longer quote ends in ' [...]' (an elided quote, not a cut
    sentence of the kit's)."""
    return line if len(line) <= SCREEN_COLUMNS else line[: SCREEN_COLUMNS - 6].rstrip() + " [...]"


def _head(t: Triage, verbose: bool = False) -> list[str]:
    d = t.diagnosis
    mode = f", {d.mode or 'mode undetermined'}" if d.kind is Kind.KNOWN_BUG else ""
    head = f"== {t.source} ({t.lines} lines)"
    head = head if len(head) <= SCREEN_COLUMNS or verbose else f"== {Path(t.source).name} ({t.lines} lines)"
    out = [*wrapped(head), f"diagnosis: {d.kind}{mode} (confidence {d.confidence})"]
    out += wrapped(d.summary, "  ")
    return out + (wrapped(d.compile_safety, "  ") if d.compile_safety else [])


def _what_to_do(t: Triage) -> list[str]:
    """Diagnosis first, then this: the user's release and what to do on it (at most ACTION_LINES), then next steps."""
    d, out = t.diagnosis, []
    if t.personal is not None:
        out += t.personal.environment.split("\n")
        out += list(t.personal.notes)
    if d.kind in (Kind.KNOWN_BUG, Kind.RELATED):
        if t.personal is not None and t.personal.actions:
            out.append("what to do on your release:")
            out += list(t.personal.actions)[:ACTION_LINES]
        else:  # no release known: each range's own switch, the release table's words
            out.append("what to do on SM120, per release (--sglang X answers for yours):")
            out += list(t.switches)[: ACTION_LINES - 1]
    if t.next_steps:
        out.append("next:")
        out += [ln for step in t.next_steps for ln in wrapped(step.strip(), "    " if step[:2] == "  " else "  ", command=True)]
    return out


def _evidence_lines(d: Diagnosis, short: bool = False) -> list[str]:
    """Each evidence line with why it counts; `short`: one per log line, the text first."""
    if not short:
        return [f"  line {e.line}: {e.text.strip()}  [{e.why}]" for e in d.evidence]
    seen = dict.fromkeys((e.line, e.text.strip()) for e in d.evidence)
    return [f"  line {line}: {text}" for line, text in seen]


def _screen(top: list[str], tail: list[str], evidence: list[str], notes: list[str], notes_head: str) -> list[str]:
    """One SCREEN_ROWS screen: the answer whole, then as many evidence lines (at least one) and whole notes as fit,
    then what --verbose adds. Pure."""
    room = SCREEN_ROWS - len(top) - len(tail) - 1  # the evidence heading
    shown = evidence[: max(1, room - min(len(notes), room // 2) - (1 if notes else 0))]
    left = room - len(shown) - 1
    shown_notes = notes[:left] if notes and left > 0 else []
    more = len(evidence) - len(shown) + len(notes) - len(shown_notes)
    out = top + [f"evidence ({len(shown)} of {len(evidence)} lines; --verbose: {more} more lines):" if more else "evidence:"]
    out += (shown or ["  (none)"]) + tail
    return out + ([notes_head, *shown_notes] if shown_notes else [])


def render(t: Triage, verbose: bool = False) -> str:
    """Diagnosis, then what to do on the user's release, then the evidence. Default: fits SCREEN_ROWS x
    SCREEN_COLUMNS (evidence and notes cut to fit, `--verbose` says how much more); verbose: everything."""
    d = t.diagnosis
    top = _head(t, verbose) + _what_to_do(t)
    tail = wrapped(f"piecewise: {d.piecewise} ({d.piecewise_reason})")
    notes = [f"  {m}" for m in d.missing] + [f"  also consistent with {m} (its rule accepts the same text)" for m in d.also]
    if not verbose:
        return "\n".join(_screen(top, tail, [_fit(line) for line in _evidence_lines(d, short=True)],
                                  [row for n in notes for row in wrapped(n.strip(), "  ")], "the paste lacks:" if d.missing else "also:"))
    out = top + ["evidence:"] + (_evidence_lines(d) or ["  (none)"]) + tail
    if d.survived:
        out.append("survived in the paste: " + ", ".join(d.survived))
    if d.missing:
        out += ["the paste lacks:"] + [f"  {m}" for m in d.missing]
    if d.also:
        out += ["also:"] + [f"  consistent with {m} (its rule accepts the same text)" for m in d.also]
    if d.inferred:
        out += [f"placed with FlashInfer's source ({t.placed_with}):"] + [f"  {x}" for x in d.inferred]
    out.append("facts: " + ("; ".join(f"{f.name}={f.value} (line {f.line}, {f.how})" for f in t.facts) or "none in the log"))
    if t.personal is not None:
        out += ["the answer for your release, each statement whole:"] + [f"  {s}" for s in t.personal.full]
    if t.advice is not None:
        a = t.advice
        if t.personal is None:  # with a release, the answer's statements above say these once
            out += ["turn piecewise off, per release:"] + [f"  {w}" for w in a.workaround]
            out += [f"cost: {a.cost}", "fixed in:"] + [f"  {f}" for f in a.fixed_in]
        out += [f"certificate: {c}" for c in a.compile_safety]
        out += ["dead ends (measured by the kit):"] + [f"  {x}" for x in a.dead_ends]
        out += list(a.matrix) + ["upstream:"] + [f"  {link}" for link in a.links]
    if t.maintainer_steps:
        out += ["to reproduce and report (maintainers):"] + [f"  {s}" for s in t.maintainer_steps]
    if t.personal is not None and t.personal.sources:
        out += ["sources:"] + [f"  {s}" for s in t.personal.sources]
    return "\n".join(out)


Reader = Callable[[], LogExcerpt]  # an input, read when its turn comes (UnreadableLog when it cannot be)
# A log is read to its end in bounded memory (pcgkit.values.paste.excerpt_stream keeps its head, its tail and the
# lines that can matter between): a regular file to the size it had when opened; a pipe, which may never end
# (`yes | pcgkit triage`), up to this many bytes (~30 s of reading).
MAX_LOG_BYTES = 1024**3
_CHUNK = 4 * 1024**2


IDLE_S = 60.0  # a pipe that sends nothing for this long (`docker logs -f` of an idle server) is triaged as it stands


def _read_bounded(stream, source: str, limit: int | None = None) -> LogExcerpt:
    """A binary stream to its end, or to `limit` bytes (default MAX_LOG_BYTES: a pipe may never end), or, for a
    pipe that stops sending without ending, to IDLE_S seconds of silence; a note on stderr when cut."""
    cut, idle = False, False
    limit = MAX_LOG_BYTES if limit is None else limit
    try:
        fd = stream.fileno()
        waits = not os.isatty(fd) and stat.S_ISFIFO(os.fstat(fd).st_mode)
    except (OSError, ValueError, io.UnsupportedOperation):  # a stream with no descriptor (a test's, a wrapper's)
        fd, waits = -1, False

    def read(count: int) -> bytes:
        nonlocal idle
        if waits and not select.select([fd], [], [], IDLE_S)[0]:
            idle = True
            return b""
        return os.read(fd, count) if waits else stream.read(count)

    def chunks():
        nonlocal cut
        size = 0
        while size < limit:
            chunk = read(min(_CHUNK, limit - size))
            if not chunk:
                return
            size += len(chunk)
            yield chunk
        cut = bool(read(1))

    excerpt = excerpt_stream(chunks(), (*LOG_NEEDLES, *FACT_NEEDLES))
    if cut:
        size = f"{limit // 1024**3} GiB" if limit >= 1024**3 else f"{limit // 1024**2} MiB"
        print(f"pcgkit triage: {source}: input truncated at {size}; "
              "the diagnosis is of that part (pass the end of the log, e.g. `tail -c 50M`)", file=sys.stderr)
    if idle:
        print(f"pcgkit triage: {source}: nothing new for {IDLE_S:.0f} s and no end: triaged what came (a log that is "
              "still being written, `docker logs -f`, never ends: drop -f)", file=sys.stderr)
    return excerpt


def _read_stdin() -> LogExcerpt:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise UnreadableLog("<stdin>: stdin is closed; pass a log file, or pipe one in (`docker logs x 2>&1 | pcgkit triage -`)")
    try:
        return _read_bounded(stream, "<stdin>")
    except (OSError, ValueError) as exc:
        raise UnreadableLog(f"<stdin>: cannot read ({exc}); pass a log file instead") from None


def _read_file(path: Path, name: str) -> LogExcerpt:
    """One file or FIFO (`<(docker logs x)`), bounded; a device (/dev/zero) or a socket is refused, not read."""
    try:
        mode = path.stat().st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise UnreadableLog(f"{name}: a device or socket, not a log file")
        with path.open("rb") as stream:  # a FIFO opens and reads like a file
            # a file, however large, to the end it had when opened (one still written to is not chased)
            return _read_bounded(stream, name, os.fstat(stream.fileno()).st_size if stat.S_ISREG(mode) else None)
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
        return [(str(f), functools.partial(_read_file, f, str(f))) for f in files]
    if not (path.exists() or path.is_symlink()):
        raise UnreadableLog(f"{name}: no such file")
    return [(name, functools.partial(_read_file, path, name))]


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
    def read() -> LogExcerpt:
        raise exc
    return read


def _user_env(args: argparse.Namespace) -> UserEnv | None:
    """The user's release: named with --sglang/--flashinfer/--torch/--arch (each wins), over a capture file (--env)
    or a capture taken now in that interpreter (--python)."""
    try:
        named = from_flags(args.sglang, args.flashinfer, args.torch, args.arch)
    except BadVersion as exc:
        raise UsageError(str(exc)) from None
    captured = _captured_env(args)
    if named is not None and captured is not None:
        return merged(named, captured)
    return named or captured


def _captured_env(args: argparse.Namespace) -> UserEnv | None:
    from pcgkit.util.untrusted import UntrustedValueError

    if args.env:
        path = Path(args.env)
        if not (path.exists() or path.is_symlink()):
            # `<(...)` names a descriptor of the shell's: a wrapper between (sudo, a runner) closes it on the way
            gone = ("the pipe of `<(...)` did not reach pcgkit (sudo and some wrappers close it); "
                    if str(path).startswith(("/dev/fd/", "/proc/self/fd/")) else "")
            raise UsageError(f"--env {args.env}: no such file ({gone}write one with "
                             f"`{prog_name()} env --json --out env.json` and pass that)")
        # bounded, and a pipe is read like a file: `--env <(pcgkit env --json)`
        capture: dict = atomic.read_json_object(path, "--env")
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
    data, view, prog = load_data(), catalog_view(), prog_name()
    entries: list[dict] = []
    shown: list[str] = []  # sources whose answer is printed
    problems: list[str] = []
    for source, read in inputs:
        try:
            result = triage_text(decode_log(read(), source), source, data, view, user, prog)
        except UnreadableLog as exc:
            problems.append(str(exc))
            entries.append({"source": source, "error": str(exc)})
            continue
        entries.append(result.to_dict())
        if not args.json:  # each answer as soon as it is known, before the next log is read
            print(("\n\n" if shown else "") + render(result, args.verbose), flush=True)
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
                    "then what to do on your release, then the evidence (one screen; --verbose for all).",
        epilog="examples:\n  %(prog)s server.log\n  %(prog)s server.log --sglang 0.5.11 --arch sm121\n"
               "  %(prog)s server.log --python /path/to/venv/bin/python\n"
               "  docker logs sglang 2>&1 | %(prog)s -\n  %(prog)s --json server.log --env env.json")
    parser.add_argument("logs", nargs="*", metavar="LOG", help="log files; '-' or none reads stdin")
    parser.add_argument("--json", action="store_true", help=f"machine-readable output ({SCHEMA})")
    parser.add_argument("--verbose", "-v", action="store_true", help="everything: every evidence line, the full "
                        "statements with their sources, dead ends, the matrix and upstream links (default: one screen)")
    mine = parser.add_argument_group("your release (no environment needed; each wins over the log's own versions)")
    mine.add_argument("--sglang", metavar="X", help="your SGLang release, e.g. 0.5.11 (`pip show sglang`, the image tag)")
    mine.add_argument("--flashinfer", metavar="X", help="your flashinfer-python release")
    mine.add_argument("--torch", metavar="X", help="your torch release")
    mine.add_argument("--arch", metavar="SM", help="your GPU's architecture: sm120 (RTX PRO 6000, RTX 5090), sm121 "
                      "(GB10, DGX Spark), or a compute capability such as 12.1")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--env", metavar="ENV.json", help="your environment (`pcgkit env --json --out env.json`): "
                       "answers for your versions first")
    where.add_argument("--python", metavar="ENV", help="the interpreter that crashed: capture its environment now and answer for its versions")
    parser.set_defaults(func=run)
