"""The recorded baseline (fixtures/expectations.toml): expected verdict per mode and versions.

The file is the user's to edit (docs/reference/matrix-file.md): it is checked whole against TABLES when read,
its `[[cannot-run]]` table too (pcgkit.matrix.uninstallable reads that one)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
from pathlib import Path
from typing import Any, Mapping

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from pcgkit import resources
from pcgkit.errors import UsageError
from pcgkit.util import tomlschema
from pcgkit.util.tomlfile import tomllib
from pcgkit.values.verdict import Verdict

DEFAULT_EXPECTATIONS = resources.fixture("expectations.toml")


@dataclasses.dataclass(frozen=True)
class Expectation:
    mode: str
    expect: Verdict
    when: tuple[tuple[str, str], ...]
    why: str
    # Targets ("sim-sm120", "gpu", "sm120") the rule is limited to; empty: all. Needed where only
    # running the kernel shows the behaviour (a simulated run traces but never executes).
    targets: tuple[str, ...] = ()

    def applies_to(self, versions: Mapping[str, str | None], target: str | None = None) -> bool:
        if self.targets and target not in self.targets:
            return False
        for dist, spec in self.when:
            installed = versions.get(dist)
            if installed is None:
                return False
            try:
                # local labels (+cu128) are irrelevant to which behaviour a release has
                if Version(installed.split("+")[0]) not in SpecifierSet(spec):
                    return False
            except InvalidVersion:
                return False
        return True


def _date(value: Any) -> str | None:
    if isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
        return None
    return f"is {value!r}, expected a date written YYYY-MM-DD (no quotes)"


def _retry_days(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    return None if ok else f"is {value!r}, expected a whole number of days >= 1"


# The file's two tables, each field declared once with its check, and the fields each must have. A rule without
# `when` would apply to every version, so a misspelt `when` is an unknown key and a missing one a problem.
RULE_FIELDS: dict[str, tomlschema.Check] = {
    "mode": tomlschema.string, "expect": tomlschema.one_of(tuple(v.value for v in Verdict)),
    "when": tomlschema.specifiers, "why": tomlschema.string, "link": tomlschema.string,
    "targets": tomlschema.list_of_strings,
}
CANNOT_RUN_FIELDS: dict[str, tomlschema.Check] = {
    "when": tomlschema.specifiers, "match": tomlschema.text, "why": tomlschema.text, "link": tomlschema.text,
    "tried": _date, "retry-days": _retry_days,
}
TABLES = {"rule": (RULE_FIELDS, ("mode", "expect", "when")),
          "cannot-run": (CANNOT_RUN_FIELDS, tuple(CANNOT_RUN_FIELDS))}


def read_expectations_file(path: Path | None = None, text: str | None = None) -> dict[str, Any]:
    """The expectations file parsed and checked against TABLES: a problem (TOML syntax, an unknown key, a wrong
    type, a bad specifier) is one UsageError line naming the file, the line, the table and the key."""
    path = DEFAULT_EXPECTATIONS if path is None else Path(path)
    if text is None:
        text = path.read_text()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    problems = tomlschema.check_array_tables(data, text, str(path), TABLES)
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise UsageError(problems[0] + more)
    return data


def load_expectations(path: Path = DEFAULT_EXPECTATIONS) -> tuple[Expectation, ...]:
    data = read_expectations_file(path)
    return tuple(
        Expectation(
            r["mode"], Verdict(r["expect"]), tuple(sorted(r.get("when", {}).items())), r.get("why", ""),
            tuple(r.get("targets", ())),
        )
        for r in data.get("rule", ())
    )


def expected_for(
    mode: str, versions: Mapping[str, str | None], rules: tuple[Expectation, ...], target: str | None = None
) -> Expectation | None:
    """First matching rule for the mode (and target); None when no baseline covers these versions."""
    return next((rule for rule in rules if rule.mode == mode and rule.applies_to(versions, target)), None)
