"""The recorded baseline (fixtures/expectations.toml): expected verdict per mode and versions."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Mapping

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from pcgkit import resources
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


def load_expectations(path: Path = DEFAULT_EXPECTATIONS) -> tuple[Expectation, ...]:
    data = tomllib.loads(path.read_text())
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
    for rule in rules:
        if rule.mode == mode and rule.applies_to(versions, target):
            return rule
    return None
