"""`pcgkit triage [LOG ...|-] [--json]`: read logs as pasted, print the diagnosis and what to do.

Input is read here (files, or stdin for `-` / no argument); everything after is pure
(pcgkit.values.signature.read_log -> diagnose -> read_facts -> advise) and rendered at the end.
Exit 0 when every log got a diagnosis; 2, with one line, for input that cannot be read.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from pcgkit.errors import UsageError
from pcgkit.triage.advice import Advice, KitData, advise, load_data, next_steps
from pcgkit.triage.diagnose import Diagnosis, Kind, diagnose
from pcgkit.triage.facts import Fact, read_facts
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

    def to_dict(self) -> dict:
        return {"source": self.source, "lines": self.lines, **self.diagnosis.to_dict(),
                "facts": [f.to_dict() for f in self.facts], "advice": self.advice.to_dict() if self.advice else None,
                "next_steps": list(self.advice.next_steps if self.advice else next_steps(self.diagnosis))}


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


def triage_text(text: str, source: str, data: KitData) -> Triage:
    reading = read_log(text)
    diagnosis = diagnose(reading)
    facts = read_facts(text)
    return Triage(source, reading.lines, diagnosis, facts, advise(diagnosis, facts, data))


def render(t: Triage) -> str:
    d = t.diagnosis
    mode = f" ({d.mode or 'mode undetermined'})" if d.kind is Kind.KNOWN_BUG else ""
    out = [f"== {t.source} ({t.lines} lines)", f"diagnosis: {d.kind}{mode}   confidence: {d.confidence}",
           f"  {d.summary}", f"piecewise: {d.piecewise} ({d.piecewise_reason})", "evidence:"]
    out += [f"  line {e.line}: {e.text[:160]}  [{e.why}]" for e in d.evidence] or ["  (none)"]
    if d.missing:
        out += ["missing:"] + [f"  {m}" for m in d.missing]
    out.append("facts: " + ("; ".join(f"{f.name}={f.value} (line {f.line}, {f.how})" for f in t.facts) or "none in the log"))
    if t.advice is not None:
        a = t.advice
        out += ["what to do:", "  turn piecewise off:"] + [f"    {w}" for w in a.workaround]
        out += [f"    cost: {a.cost}", "  fixed in:"] + [f"    {f}" for f in a.fixed_in]
        out += ["  dead ends (measured by the kit):"] + [f"    {x}" for x in a.dead_ends]
        out += ["  " + m for m in a.matrix] + ["  upstream: " + ", ".join(a.links)]
    if d.kind in (Kind.KNOWN_BUG, Kind.RELATED):
        out += ["next steps:"] + [f"  {s}" for s in (t.advice.next_steps if t.advice else next_steps(d))]
    return "\n".join(out)


def _inputs(paths: list[str]) -> list[tuple[str, bytes]]:
    if not paths or paths == ["-"]:
        return [("<stdin>", sys.stdin.buffer.read())]
    out = []
    for name in paths:
        path = Path(name)
        if name == "-":
            out.append(("<stdin>", sys.stdin.buffer.read()))
        elif not path.is_file():
            raise UnreadableLog(f"{name}: no such file")
        else:
            out.append((name, path.read_bytes()))
    return out


def run(args: argparse.Namespace) -> int:
    texts = [(source, decode_log(data, source)) for source, data in _inputs(args.logs)]
    data = load_data()
    results = [triage_text(text, source, data) for source, text in texts]
    if args.json:
        print(json.dumps({"schema": SCHEMA, "logs": [r.to_dict() for r in results]}, indent=1))
    else:
        print("\n\n".join(render(r) for r in results))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "triage", help="diagnose a pasted crash log: this bug (which mode), related, another failure, or none",
        description="Diagnose a crash log as pasted: this bug (which mode), a related one, another failure, or none; "
                    "with the evidence lines and what to do.",
        epilog="examples:\n  %(prog)s server.log\n  docker logs sglang 2>&1 | %(prog)s -\n  %(prog)s --json server.log",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("logs", nargs="*", metavar="LOG", help="log files; '-' or none reads stdin")
    parser.add_argument("--json", action="store_true", help=f"machine-readable output ({SCHEMA})")
    parser.set_defaults(func=run)
