"""Triage's template over the one answer (pcgkit.advice.answer) for the user's release. Pure: no I/O.

Every line is pcgkit.advice.render's (one line per question, each ending in its sources' kind and date); this
module only chooses which questions a crashed user sees on the first screen and wraps them at WIDTH, whole:
affected only where the log shows this bug; what to pass, what turning piecewise off costs and where it is fixed
for this bug or a related one. `full` keeps every statement whole, with its sources, for `--verbose`.
The user's release may come from `--sglang` and friends, an env capture, or the log itself (banner, pip list,
paths): whichever it came from is named, and where the GPU is not known the answer is SM120's, said so.
"""

from __future__ import annotations

import dataclasses
import textwrap

from pcgkit.advice import Answer, Evidence, Versions, advise, arch_family, every_release
from pcgkit.advice.render import AFFECTED_Q, COST_Q, FIXED_Q, OFF_Q, PASS_Q, answer_lines, per_release_lines, tag
from pcgkit.triage.diagnose import Diagnosis, Kind
from pcgkit.triage.userenv import UserEnv

ACTION_LINES = 12  # "what to do on your release" on the first screen, wrapped
WIDTH = 80
FIRST_SCREEN = (PASS_Q, OFF_Q, COST_Q, FIXED_Q)  # the questions a crashed user reads first (and `affected`)
# The FP4 module SGLang's log names on a DGX Spark (GB10, sm121): FlashInfer builds the SM120 family's module there.
SM12X_EVIDENCE = "sglang#23386's DGX Spark log"


@dataclasses.dataclass(frozen=True)
class Personal:
    environment: str  # "your release: SGLang 0.5.11 [--sglang]; GPU not known: answered for SM120"
    notes: tuple[str, ...]  # the arch note and (known-bug only) affected, wrapped at WIDTH
    actions: tuple[str, ...]  # what to do on this release, wrapped at WIDTH, whole
    full: tuple[str, ...]  # every statement whole, with its sources' kind and date, for --verbose
    sources: tuple[str, ...]  # each source of the answer, cited with its date
    answer: Answer


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


def wrap(line: str, indent: int = 2) -> list[str]:
    """A line wrapped at WIDTH, whole (never cut): the first row indented by `indent`, the rest by two more. Pure."""
    lead = " " * indent
    return textwrap.wrap(line, WIDTH, initial_indent=lead, subsequent_indent=lead + "  ", break_on_hyphens=False)


def personal_answer(diagnosis: Diagnosis, user: UserEnv, evidence: Evidence) -> Personal:
    """The first screen's lines for the user's release, and every statement for --verbose. Pure."""
    answer = advise(Versions(user.sglang, user.flashinfer, user.torch), user.arch or "sm120", evidence)
    gpu = "" if user.arch else "; GPU: SM120 assumed"
    environment = "\n".join(wrap(f"your release: {user.line()}{gpu}", 0))
    lines = answer_lines(answer)
    notes: list[str] = []
    this_bug = diagnosis.kind in (Kind.KNOWN_BUG, Kind.RELATED)
    if this_bug and (note := arch_note(user.arch)) is not None:
        notes += wrap(note)
    if diagnosis.kind is Kind.KNOWN_BUG and user.known:  # affectedness only where the log shows this bug
        notes += [row for line in lines if line.startswith(f"{AFFECTED_Q}:") for row in wrap(line)]
    actions = [row for line in lines if this_bug and line.startswith(tuple(f"{q}:" for q in FIRST_SCREEN))
               for row in wrap(line)]
    full = tuple(f"{s.topic}: {s.text}{tag(s)}" for s in answer.statements())
    sources = tuple(dict.fromkeys(f"{s.kind}: {s.cite()}" for st in answer.statements() for s in st.sources))
    return Personal(environment, tuple(notes), tuple(actions), full, sources, answer)


def switch_rows_short(evidence: Evidence) -> list[str]:
    """Without a known release: what to pass on SM120, one line per run of releases with the same answer (the one
    answer per release, pcgkit.advice.every_release), for the first screen. Pure."""
    return [row for line in per_release_lines(every_release(evidence)) for row in wrap(line)]
