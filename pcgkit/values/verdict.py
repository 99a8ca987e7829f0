"""The one verdict vocabulary used in the terminal, JUnit, JSON and every report, and its legend."""

from __future__ import annotations

import dataclasses
import enum


class Word(str, enum.Enum):
    """A vocabulary of words: f-strings and str() print the word ("reproduced"), not "Verdict.REPRODUCED"."""

    def __str__(self) -> str:
        return self.value


class Verdict(Word):
    REPRODUCED = "reproduced"  # fails with the mode's known signature
    FIXED = "fixed"  # traces under fullgraph=True AND its call path ran with the caller's arguments (see LEGEND)
    TRACES_BUT_FAILS = "traces-but-fails"  # traces under fullgraph=True, but the call path fails when run
    DRIFTED = "drifted"  # fails, but not with the mode's known signature
    NOT_APPLICABLE = "not-applicable"  # this version lacks the code path the mode exercises
    SKIPPED = "skipped"  # hardware or an optional dependency is missing (reason says which)
    ERROR = "error"  # the kit or the install broke: never a statement about the bug

    @property
    def ran(self) -> bool:
        """False only for `skipped`: the case did not run here (every other verdict is a row to show)."""
        return self is not Verdict.SKIPPED

    @property
    def is_bug_verdict(self) -> bool:
        """True when the verdict says something about the bug itself."""
        return self in (Verdict.REPRODUCED, Verdict.FIXED, Verdict.TRACES_BUT_FAILS, Verdict.DRIFTED,
                        Verdict.NOT_APPLICABLE)

    @property
    def works(self) -> bool:
        """True only for `fixed`: traced, and the call path ran with the caller's arguments."""
        return self is Verdict.FIXED

    @property
    def broken(self) -> bool:
        """True for a verdict that says the thing measured does not work for a user: it fails to trace
        (`reproduced`, `drifted`) or traces and then fails when run (`traces-but-fails`)."""
        return self in (Verdict.REPRODUCED, Verdict.DRIFTED, Verdict.TRACES_BUT_FAILS)


# The verdict strings by what they say, declared once (reports, advice and drafts compare strings).
BUG_VERDICTS: tuple[str, ...] = tuple(v.value for v in Verdict if v.is_bug_verdict)
BROKEN: tuple[str, ...] = tuple(v.value for v in Verdict if v.broken)
JUDGED: tuple[str, ...] = tuple(v.value for v in Verdict if v.works or v.broken)  # works or not: a judgement


@dataclasses.dataclass(frozen=True)
class Legend:
    """How every report shows one verdict: declared once here, read by the grid, the terminal, the
    dashboard, the history timelines and compat.md/json."""

    symbol: str  # one character in grids (the colour rides along where there is colour)
    letter: str  # history.jsonl / the dashboard's timelines: one letter per run (an on-disk format)
    colour: str  # the dashboard; Okabe-Ito, distinguishable with every common colour-vision deficiency
    style: str  # the terminal (rich markup)
    meaning: str  # what it says, in the reports' legend


LEGEND: dict[Verdict, Legend] = {
    Verdict.REPRODUCED: Legend("✗", "R", "#D55E00", "bold red",
                               "fails under fullgraph=True with the mode's known signature"),
    Verdict.FIXED: Legend("✓", "F", "#009E73", "bold green",
                          "traces under fullgraph=True and its call path ran with the caller's arguments "
                          "(numbers checked where a kernel ran, otherwise the evidence says not checked)"),
    Verdict.TRACES_BUT_FAILS: Legend("↯", "T", "#CC79A7", "bold magenta",
                                     "traces under fullgraph=True, but the call path fails when run with the "
                                     "caller's arguments (raises, misbinds an argument, or computes wrong numbers)"),
    Verdict.DRIFTED: Legend("≈", "D", "#E69F00", "bold yellow",
                            "fails, but not with the mode's known signature (the bug changed shape)"),
    Verdict.NOT_APPLICABLE: Legend("–", "N", "#CCCCCC", "dim", "this version lacks the code path the mode exercises"),
    Verdict.SKIPPED: Legend("○", "S", "#56B4E9", "cyan", "hardware or an optional dependency is missing"),
    Verdict.ERROR: Legend("!", "E", "#333333", "bold white on red",
                          "the install, the import or the kit broke: no statement about the bug"),
}


# A cell STATE, not a verdict: the cell could not run here, for a measured reason recorded with the date
# it was last tried (fixtures/expectations.toml [[cannot-run]]). It says nothing about the bug or the
# kit, is counted apart, never makes `report` or `matrix` exit non-zero, and is retried on a schedule.
CANNOT_RUN = "cannot-run"
CANNOT_RUN_LEGEND = Legend("⊘", "C", "#0072B2", "blue",
                           "cannot run here (a measured reason and the date last tried): no verdict, not an "
                           "error; retried on a schedule")
