"""The one verdict vocabulary used in the terminal, JUnit, JSON and every report."""

from __future__ import annotations

import enum


class Verdict(str, enum.Enum):
    REPRODUCED = "reproduced"  # fails with the mode's known signature
    FIXED = "fixed"  # traced cleanly under fullgraph=True
    DRIFTED = "drifted"  # fails, but not with the mode's known signature
    NOT_APPLICABLE = "not-applicable"  # this version lacks the code path the mode exercises
    SKIPPED = "skipped"  # hardware or an optional dependency is missing (reason says which)
    ERROR = "error"  # the kit or the install broke: never a statement about the bug

    def __str__(self) -> str:  # so f-strings print "reproduced", not "Verdict.REPRODUCED"
        return self.value

    @property
    def ran(self) -> bool:
        """False only for `skipped`: the case did not run here (every other verdict is a row to show)."""
        return self is not Verdict.SKIPPED

    @property
    def is_bug_verdict(self) -> bool:
        """True when the verdict says something about the bug itself."""
        return self in (Verdict.REPRODUCED, Verdict.FIXED, Verdict.DRIFTED, Verdict.NOT_APPLICABLE)
