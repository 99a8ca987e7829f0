"""Install rules as data (fixtures/install_rules.toml): resolver constraints derived from a cell's
versions at plan time, so a rule such as `cuda-python>=12.8` for flashinfer >= 0.6.18 is written
once and reaches every cell it concerns. Pure, apart from reading the TOML file."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from pcgkit import resources
from pcgkit.matrix.cells import Cell
from pcgkit.util.tomlfile import tomllib
from pcgkit.values.axes import AXIS_IDS

RULES_SCHEMA = "pcgkit.install-rules/1"
DEFAULT_RULES_FILE = resources.fixture("install_rules.toml")


class RulesError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class InstallRule:
    when: tuple[tuple[str, str], ...]  # (axis, specifier)
    constraints: tuple[str, ...]
    why: str
    link: str = ""

    def matches(self, cell: Cell) -> bool:
        return versions_match(self.when, cell.axes())


def versions_match(when: Iterable[tuple[str, str]], axes: Mapping[str, str | None]) -> bool:
    """Every (axis, specifier) of `when` holds for these axes (a local +label ignored); a missing or
    unparsable version does not match. Pure."""
    for axis, spec in when:
        value = axes.get(axis)
        try:
            if value is None or Version(value.split("+")[0]) not in SpecifierSet(spec):
                return False
        except InvalidVersion:
            return False
    return True


def parse_rules(text: str, source: str = "install_rules.toml") -> tuple[InstallRule, ...]:
    data = tomllib.loads(text)
    if data.get("schema") != RULES_SCHEMA:
        raise RulesError(f"{source}: schema {data.get('schema')!r}, expected {RULES_SCHEMA!r}")
    rules = []
    for i, table in enumerate(data.get("rule", ())):
        when = table.get("when", {})
        if not when or set(when) - set(AXIS_IDS):
            raise RulesError(f"{source}: rule {i + 1}: `when` needs some of {AXIS_IDS}, got {sorted(when)}")
        for axis, spec in when.items():
            try:
                SpecifierSet(spec)
            except InvalidSpecifier as exc:
                raise RulesError(f"{source}: rule {i + 1}: {axis} = {spec!r} is not a version specifier") from exc
        if not table.get("constraints") or not table.get("why"):
            raise RulesError(f"{source}: rule {i + 1}: needs `constraints` and `why`")
        rules.append(InstallRule(tuple(sorted(when.items())), tuple(table["constraints"]), table["why"], table.get("link", "")))
    return tuple(rules)


def load_rules(path: Path = DEFAULT_RULES_FILE) -> tuple[InstallRule, ...]:
    return parse_rules(path.read_text(), str(path))


def apply_rules(cells: Iterable[Cell], rules: tuple[InstallRule, ...]) -> list[Cell]:
    """Each cell with the constraints of every rule it matches added (explicit ones kept first)."""
    out = []
    for cell in cells:
        extra = [c for rule in rules if rule.matches(cell) for c in rule.constraints]
        merged = tuple(dict.fromkeys((*cell.constraints, *extra)))
        out.append(dataclasses.replace(cell, constraints=merged) if merged != cell.constraints else cell)
    return out
