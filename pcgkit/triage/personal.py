"""The personal answer: this diagnosis on the user's own versions, first on the screen. Pure: no I/O.

What a crashed user needs before any evidence: affected or not on THEIR versions, the switch for
THEIR release, the smallest upgrade that fixes it. The sentences are the advice model's
(pcgkit.advice.advise: measured cells, dated upstream reads, each release's own parser), never typed
here; each carries numbered sources, listed at the end of the output so the answer fits 80x24.
"""

from __future__ import annotations

import dataclasses

from pcgkit.advice import Evidence, Statement, Versions, advise
from pcgkit.triage.diagnose import Diagnosis, Kind
from pcgkit.triage.userenv import UserEnv


@dataclasses.dataclass(frozen=True)
class Personal:
    lines: tuple[str, ...]  # the answer, each statement ending in its source numbers
    sources: tuple[str, ...]  # "[n] kind: ref (as of date)"
    answer: dict  # the advice model's own JSON (pcgkit.advice/1)


def personal_answer(diagnosis: Diagnosis, user: UserEnv, evidence: Evidence) -> Personal:
    """affected / not affected on the user's versions, their release's switch, the upgrade path. Pure."""
    answer = advise(Versions(user.sglang, user.flashinfer, user.torch), user.arch or "sm120", evidence)
    sources: list[str] = []

    def numbered(statement: Statement) -> str:
        refs = []
        for source in statement.sources:
            text = source.cite()
            if text not in sources:
                sources.append(text)
            refs.append(str(sources.index(text) + 1))
        return f"{statement.text} [{','.join(refs)}]" + (" (simulated)" if statement.simulated else "")

    lines = [f"your environment: {user.line()}" + ("" if user.arch else " (GPU unknown: answered for SM120)")]
    if diagnosis.kind is Kind.KNOWN_BUG:
        lines.append("AFFECTED: your log shows this bug" + (f" ({diagnosis.mode})" if diagnosis.mode else "")
                     + (f"; on your versions the kit's measurements say: {answer.state}" if answer.state else ""))
    else:
        lines.append(f"{answer.state.upper()} on your versions: " + numbered(answer.affected))
    # the switch first: it works today, on the release they run; the upgrade is the lasting fix
    for label, statement in (("switch: ", answer.switch), ("upgrade: ", answer.upgrade)):
        if statement is not None:
            lines.append(label + numbered(statement))
    if diagnosis.kind is Kind.KNOWN_BUG:
        lines.append("measured: " + numbered(answer.affected))
    return Personal(tuple(lines), tuple(f"[{i}] {s}" for i, s in enumerate(sources, start=1)), answer.to_dict())
