"""What a case found when the traced call path was RUN, and the one rule that turns it into a verdict. Pure.

Tracing clean is not working. A clean trace is `fixed` only when the call path also ran with the
arguments a caller passes: through the release's public entry point, over FlashInfer's real Python
down to a kernel boundary (pcgkit.fp4.argaudit: a recording kernel on any machine) or the real kernel
(GPU). Where a kernel computed something the numbers are checked against eager and the kit's reference
quantizer; where none can (no SM100+ GPU here), the check says "numbers not checked" and why, and the
verdict's reason carries that sentence: `fixed` then means "runs with the caller's arguments, numbers not
checked", never more. A run that raises, misbinds an argument or computes numbers the reference rejects
is `traces-but-fails`.
"""

from __future__ import annotations

import dataclasses

from pcgkit.values.verdict import Verdict

TRACED_CLEANLY = "traced cleanly under fullgraph=True"
NOT_RUN_TRACE_ONLY = "call path not run by this case (trace only)"
NUMBERS_NEED_SM100 = "numbers not checked (not run: needs SM100+)"
CALL_PATH_RAN = "call path ran"  # what a `fixed` reason says once the call path ran (judge_run writes it)


def says_call_path_ran(reason: str | None) -> bool:
    """Whether a `fixed` verdict's reason says its call path ran: a `fixed` measured before that rule (2026-12-05)
    only traced. Pure."""
    return f"{CALL_PATH_RAN} (" in (reason or "")


@dataclasses.dataclass(frozen=True)
class RunCheck:
    """What a case found when it ran the traced call path (see the module docstring)."""

    compared: bool  # compiled output compared with eager (real kernel only); False: why in `numbers`/`note`
    problem: str | None  # the fake/description disagrees with what the op returns: `drifted`
    note: str = ""
    run_failure: str | None = None  # the call path failed when run with the caller's arguments: `traces-but-fails`
    ran: str = ""  # how the call path ran ("" = it did not): e.g. the argument audit over a recording kernel
    numbers: str = ""  # "checked: ..." or "not checked: <why>" (NUMBERS_NEED_SM100 here)


def judge_run(check: RunCheck, traced_reason: str) -> tuple[Verdict, str]:
    """The verdict for a clean trace whose call path was run (or not). Pure."""
    if check.run_failure:
        return Verdict.TRACES_BUT_FAILS, f"traced, but the call path fails when run: {check.run_failure}"
    if check.problem:
        return Verdict.DRIFTED, f"traced, but {check.problem}"
    if not check.ran:
        return Verdict.ERROR, "kit: the case traced but its call path was not run, so it cannot say `fixed`"
    parts = [traced_reason, f"{CALL_PATH_RAN} ({check.ran})"]
    parts += [text for text in (check.numbers, check.note) if text]
    return Verdict.FIXED, "; ".join(parts)
