"""Cells that cannot install today, as expectations (`[[uninstallable]]` in fixtures/expectations.toml).

A cell whose install fails exactly as recorded (its versions match `when`, and the failure names
`match`) is *expected-uninstallable*: the report shows it as skipped with the reason and link, and
it does not make `pcgkit matrix` fail. Strict like pytest's xfail_strict: a cell so marked that
installs and runs is a change against the baseline (remove the expectation). Any other install
failure stays an error. Pure, apart from reading the TOML file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import tomllib
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import STAGE_INSTALL, CellOutcome
from pcgkit.verdicts.expectations import DEFAULT_EXPECTATIONS

LABEL = "expected-uninstallable"


@dataclasses.dataclass(frozen=True)
class Uninstallable:
    when: tuple[tuple[str, str], ...]  # cell axis -> specifier
    match: str  # text the install failure must contain
    why: str
    link: str

    def covers(self, cell: Cell) -> bool:
        return self.covers_axes(cell.axes())

    def covers_axes(self, axes: Mapping[str, str | None]) -> bool:
        """`covers` for a cell known only by its axes (a report read back from compat.json)."""
        for axis, spec in self.when:
            value = axes.get(axis)
            try:
                if value is None or Version(value.split("+")[0]) not in SpecifierSet(spec):
                    return False
            except InvalidVersion:
                return False
        return True

    def describe(self) -> str:
        return f"{LABEL}: {self.why}" + (f" ({self.link})" if self.link else "")


def parse_uninstallable(text: str, source: str = "expectations.toml") -> tuple[Uninstallable, ...]:
    rules = []
    for i, table in enumerate(tomllib.loads(text).get("uninstallable", ())):
        missing = [k for k in ("when", "match", "why", "link") if not table.get(k)]
        if missing:
            raise ValueError(f"{source}: [[uninstallable]] {i + 1} lacks {', '.join(missing)}")
        rules.append(Uninstallable(tuple(sorted(table["when"].items())), table["match"], table["why"], table["link"]))
    return tuple(rules)


def load_uninstallable(path: Path = DEFAULT_EXPECTATIONS) -> tuple[Uninstallable, ...]:
    return parse_uninstallable(path.read_text(), str(path))


def expected_failure(outcome: CellOutcome, rules: tuple[Uninstallable, ...]) -> Uninstallable | None:
    """The rule that explains this error cell's install failure; None when none does. Pure."""
    if not outcome.is_error or outcome.stage != STAGE_INSTALL:
        return None
    text = f"{outcome.reason}\n{outcome.log_tail}"
    return next((r for r in rules if r.covers(outcome.cell) and r.match in text), None)


def unexpectedly_installed(outcome: CellOutcome, rules: tuple[Uninstallable, ...]) -> Uninstallable | None:
    """The rule a cell contradicts by having installed and run (the baseline changed). Pure."""
    if outcome.is_error:
        return None
    return next((r for r in rules if r.covers(outcome.cell)), None)
