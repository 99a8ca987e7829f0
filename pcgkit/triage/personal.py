"""The answer for the user's release: what to do on it, and (only when the log shows this bug) whether the kit's
measurements call that release affected. Pure: no I/O.

Every sentence is the advice model's (pcgkit.advice.advise: measured cells, dated upstream reads, each release's
own parser); this module only chooses which of them a crashed user needs first and how much of each fits the
first screen. `lines` are the short form (the actions of each statement, at most ACTION_LINES in all); `full`
keeps every statement whole for `--verbose`. Each ends in numbered sources, listed with `--verbose`.
The user's release may come from `--sglang` and friends, an env capture, or the log itself (banner, pip list,
paths): whichever it came from is named, and where the GPU is not known the answer is SM120's, said so.
"""

from __future__ import annotations

import dataclasses
import re

from pcgkit.advice import Evidence, Statement, Versions, advise, arch_family
from pcgkit.sglang import facts as sglang_facts
from pcgkit.triage.diagnose import Diagnosis, Kind
from pcgkit.triage.userenv import UserEnv

ACTION_LINES = 10  # "what to do on your release" on the first screen
WIDTH = 80
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`])")
# The FP4 module SGLang's log names on a DGX Spark (GB10, sm121): FlashInfer builds the SM120 family's module there.
SM12X_EVIDENCE = "sglang#23386's DGX Spark log"


@dataclasses.dataclass(frozen=True)
class Personal:
    environment: str  # "your release: SGLang 0.5.11 [--sglang]; GPU not known: answered for SM120"
    notes: tuple[str, ...]  # the arch note and (known-bug only) affected, indented, wrapped at WIDTH
    actions: tuple[str, ...]  # what to do on this release, at most ACTION_LINES, indented, wrapped at WIDTH
    full: tuple[str, ...]  # every statement whole, for --verbose
    sources: tuple[str, ...]  # "[n] kind: ref (as of date)"
    answer: dict  # the advice model's own JSON (pcgkit.advice/1)


def arch_note(arch: str | None) -> str | None:
    """One line on the GPU's family: an SM12x GPU other than sm120 is answered as SM120 (with why); a GPU outside SM12x
    is told the kit's SM120 answer is not its own. None for sm120 itself or an unknown GPU. Pure."""
    family = arch_family(arch)
    if arch is None or family is None:
        return None
    name = arch.lower().replace("_", "").replace(".", "")
    name = name if name.startswith("sm") else f"sm{name}"
    if family == "sm120" and name.rstrip("af") != "sm120":
        return (f"{name} is SM12x: FlashInfer builds it the same sm120f FP4 module as sm120 ({SM12X_EVIDENCE}), "
                f"so SM120's answer is yours.")
    if family != "sm120":
        return (f"{name} is not SM12x: the kit measured this bug on SM120 (simulated) and SM90, so an answer "
                f"given for SM120 here is not yours.")
    return None


def _sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_RE.split(text.strip()) if s]


def _cut(text: str, lines: int, indent: int = 2) -> list[str]:
    """`text` wrapped at WIDTH (the first line indented by `indent`, the rest by two more), at most `lines` lines, the
    last ending in '…' when cut. Pure."""
    words, current = text.split(), ""
    out: list[str] = []
    for word in words:
        room = WIDTH - indent - (2 if out else 0)
        if current and len(current) + 1 + len(word) > room:
            out.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        out.append(current)
    if len(out) > lines:
        out = out[:lines]
        out[-1] = out[-1][: WIDTH - indent - (2 if lines > 1 else 0) - 1].rstrip() + "…"
    return [" " * indent + line if i == 0 else " " * (indent + 2) + line for i, line in enumerate(out)]


_ACTION_RE = re.compile(r"`--|^(?:Upgrade|First try|To run|Pass|Do not pass)\b")
# A sentence that qualifies the action before it ("The kit has not run it: ... not measured."): kept with it.
_CAVEAT_RE = re.compile(r"\bnot (?:run|measured|tested|been run)\b|\bunmeasured\b")


def _actions(statement: Statement) -> list[str]:
    """The sentences of a statement that tell the user what to do (a flag, an upgrade), each with the caveat that
    follows it; the first sentence when none acts. The statement's own words, fewer of them. Pure."""
    sentences = _sentences(statement.text)
    found = []
    for i, sentence in enumerate(sentences):
        if _ACTION_RE.search(sentence):
            found.append(sentence)
            if i + 1 < len(sentences) and _CAVEAT_RE.search(sentences[i + 1]) and not _ACTION_RE.search(sentences[i + 1]):
                found.append(sentences[i + 1])
    return found or sentences[:1]


def personal_answer(diagnosis: Diagnosis, user: UserEnv, evidence: Evidence) -> Personal:
    """The short answer for the user's release (actions, each with its sources) and the full statements. Pure."""
    answer = advise(Versions(user.sglang, user.flashinfer, user.torch), user.arch or "sm120", evidence)
    sources: list[str] = []

    def refs(statement: Statement) -> str:
        numbers = []
        for source in statement.sources:
            text = source.cite()
            if text not in sources:
                sources.append(text)
            numbers.append(str(sources.index(text) + 1))
        return f"[{','.join(numbers)}]" + (" (simulated)" if statement.simulated else "")

    gpu = "" if user.arch else "; GPU not known: answered for SM120"
    environment = "\n".join(_cut(f"your release: {user.line()}{gpu}", 2, 0))
    notes: list[str] = []
    if diagnosis.kind in (Kind.KNOWN_BUG, Kind.RELATED) and (note := arch_note(user.arch)) is not None:
        notes += _cut(note, 2)
    if diagnosis.kind is Kind.KNOWN_BUG and user.known:  # affectedness only where the log shows this bug
        notes += _cut(f"measured for it: {answer.affected.text} {refs(answer.affected)}", 2)
    budget = ACTION_LINES
    actions: list[str] = []
    for label, statement in (("switch", answer.switch), ("upgrade", answer.upgrade)):
        if statement is None or diagnosis.kind not in (Kind.KNOWN_BUG, Kind.RELATED):
            continue
        for sentence in _actions(statement):
            wrapped = _cut(f"{label}: {sentence} {refs(statement)}", min(2, budget))
            actions += wrapped
            budget -= len(wrapped)
            if budget <= 0:
                break
    full = [f"{s.topic}: {s.text} {refs(s)}" for s in answer.statements()]
    return Personal(environment, tuple(notes), tuple(actions), tuple(full),
                    tuple(f"[{i}] {s}" for i, s in enumerate(sources, start=1)), answer.to_dict())


def switch_rows_short(evidence: Evidence) -> list[str]:
    """Without a known release: each range of releases with its own switch, one short line each (the release
    table's own wording, read from the wheels), for the first screen. Pure."""
    out = []
    for row in sglang_facts.switch_rows(r.flags for r in evidence.releases):
        span = row.releases[0] if len(row.releases) == 1 else f"{row.releases[0]}-{row.releases[-1]}"
        out += _cut(f"SGLang {span}: {row.turn_off.split(';')[0]}", 1)  # the first clause: the switch itself
    return out
