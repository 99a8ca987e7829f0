"""Cells that cannot run here, as a planned state (`[[cannot-run]]` in fixtures/expectations.toml).

A rule records a measured fact: the cells it covers (`when`), the text their failure shows (`match`),
why, the upstream link, when it was last tried and how often to try again. Between retry days a covered
cell is not run but written as *cannot-run* with that reason and date (no install, no verdict, not an
error). On a retry day (or `matrix --retry-cannot-run`) it runs: failing as recorded it stays cannot-run;
installing and running is a change against the baseline (like pytest's xfail_strict), so a fixed index
turns the cell back on within one retry period. Pure, apart from reading the TOML file.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Iterable, Mapping
from pathlib import Path

from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import ERROR, STAGE_CANNOT_RUN, STAGE_INSTALL, CellOutcome
from pcgkit.matrix.rules import versions_match
from pcgkit.values.verdict import CANNOT_RUN
from pcgkit.verdicts.expectations import DEFAULT_EXPECTATIONS, read_expectations_file

LABEL = CANNOT_RUN
TABLE = "cannot-run"


@dataclasses.dataclass(frozen=True)
class Uninstallable:
    when: tuple[tuple[str, str], ...]  # cell axis -> specifier
    match: str  # text the failure must contain
    why: str
    link: str
    tried: _dt.date = _dt.date(1970, 1, 1)  # the date the failure was last measured
    retry_days: int = 7  # run the cell again every this many days after `tried`

    def covers(self, cell: Cell) -> bool:
        return self.covers_axes(cell.axes())

    def covers_axes(self, axes: Mapping[str, str | None]) -> bool:
        """`covers` for a cell known only by its axes (a report read back from compat.json)."""
        return versions_match(self.when, axes)

    def due(self, today: _dt.date) -> bool:
        """A retry day: every `retry_days` days counted from `tried` (and `tried` itself). Pure."""
        days = (today - self.tried).days
        return days >= 0 and days % self.retry_days == 0

    def next_retry(self, today: _dt.date) -> _dt.date:
        days = max((today - self.tried).days, 0)
        return self.tried + _dt.timedelta(days=(days // self.retry_days + 1) * self.retry_days)

    def describe(self) -> str:
        return (f"{LABEL}: {self.why}; last tried {self.tried.isoformat()}, retried every {self.retry_days} days"
                + (f" ({self.link})" if self.link else ""))


def parse_uninstallable(text: str, source: str = "expectations.toml") -> tuple[Uninstallable, ...]:
    """The `[[cannot-run]]` rules of an expectations file (the whole file checked first: one UsageError line)."""
    data = read_expectations_file(Path(source), text)
    return tuple(Uninstallable(tuple(sorted(table["when"].items())), table["match"], table["why"], table["link"],
                               table["tried"], table["retry-days"]) for table in data.get(TABLE, ()))


def load_uninstallable(path: Path = DEFAULT_EXPECTATIONS) -> tuple[Uninstallable, ...]:
    return parse_uninstallable(path.read_text(), str(path))


def planned_cannot_run(cells: Iterable[Cell], rules: tuple[Uninstallable, ...], today: _dt.date,
                       retry: bool = False) -> dict[str, Uninstallable]:
    """Cell id -> the rule that plans it as cannot-run today (not a retry day, no --retry-cannot-run). Pure."""
    if retry:
        return {}
    planned = {}
    for cell in cells:
        rule = next((r for r in rules if r.covers(cell)), None)
        if rule is not None and not rule.due(today):
            planned[cell.id] = rule
    return planned


def cannot_run_outcome(cell: Cell, rule: Uninstallable, today: _dt.date) -> CellOutcome:
    """The row a cell planned as cannot-run gets: the rule's reason and dates; nothing was installed. Pure."""
    return CellOutcome(cell, ERROR, 0.0, STAGE_CANNOT_RUN,
                       f"{rule.why} (last tried {rule.tried.isoformat()}; next retry {rule.next_retry(today).isoformat()}, "
                       f"or `pcgkit matrix --retry-cannot-run`)", rule.match)


def expected_failure(outcome: CellOutcome, rules: tuple[Uninstallable, ...]) -> Uninstallable | None:
    """The rule that explains this error cell (planned cannot-run, or failed as recorded); None when none does. Pure."""
    if not outcome.is_error or outcome.stage not in (STAGE_INSTALL, STAGE_CANNOT_RUN):
        return None
    text = f"{outcome.reason}\n{outcome.log_tail}"
    return next((r for r in rules if r.covers(outcome.cell) and r.match in text), None)


def unexpectedly_installed(outcome: CellOutcome, rules: tuple[Uninstallable, ...]) -> Uninstallable | None:
    """The rule a cell contradicts by having installed and run (the baseline changed). Pure."""
    if outcome.is_error:
        return None
    return next((r for r in rules if r.covers(outcome.cell)), None)
