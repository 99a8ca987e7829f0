"""A version range stated only over the releases that were measured, with the gaps named. Pure.

Every output that states a range goes through `measured_ranges`: "0.5.5.post3–0.5.11" only when every release
between was measured, else the measured runs and the gaps ("not measured: 0.5.8.post1; 0.6.4–0.6.6 (3
releases)"). Issue 25: compat.md said "reproduced on 0.5.5.post3-0.5.11" over some twenty releases never installed.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Sequence

from packaging.version import InvalidVersion, Version

DASH = "–"  # en dash: what the report already prints between two ends of a range


def version_order(version: str) -> tuple:
    """Sort key: PEP 440 order, unparsable strings last in text order (never an exception)."""
    try:
        return (0, Version(version), "")
    except InvalidVersion:
        return (1, Version("0"), version)


def version_key(version: str) -> Version:
    """Sort key: PEP 440 order, unparsable strings first (as version 0)."""
    try:
        return Version(version)
    except InvalidVersion:
        return Version("0")


@dataclasses.dataclass(frozen=True)
class MeasuredRanges:
    runs: tuple[tuple[str, str], ...]  # (first, last) of each run of consecutive measured releases, oldest first
    gaps: tuple[tuple[str, str, int], ...]  # (first, last, count) of each run of unmeasured releases inside the span

    @property
    def complete(self) -> bool:
        """Every release between the oldest and the newest measured one was measured."""
        return not self.gaps

    def gaps_text(self) -> str:
        """'not measured: 0.5.8.post1; 0.6.4–0.6.6 (3 releases)', or '' when there is no gap."""
        if not self.gaps:
            return ""
        return "not measured: " + "; ".join(a if n == 1 else f"{a}{DASH}{b} ({n} releases)" for a, b, n in self.gaps)

    def text(self) -> str:
        """The measured runs ('0.5.5–0.5.7, 0.5.9–0.5.11'), then the gaps in parentheses: what a sentence prints."""
        if not self.runs:
            return "no release measured"
        gaps = self.gaps_text()
        span = ", ".join(a if a == b else f"{a}{DASH}{b}" for a, b in self.runs)
        return span + (f" ({gaps})" if gaps else "")


def _runs(ordered: Sequence[str], chosen: set[str]) -> list[tuple[str, str, int]]:
    """(first, last, count) of each maximal run of `ordered` whose members are all in `chosen`."""
    groups = [list(group) for is_chosen, group in itertools.groupby(ordered, key=chosen.__contains__) if is_chosen]
    return [(group[0], group[-1], len(group)) for group in groups]


def measured_runs(releases_in_range: Iterable[str], measured: Iterable[str]) -> MeasuredRanges:
    """The measured releases (those some cell ran) as runs over the range's releases, and the gaps between them.

    releases_in_range: every release the statement could be about (the matrix range's SGLang releases, an axis's
    known releases); when empty, each measured value is listed alone (no run claimed, no gap named). Pure."""
    listed = set(releases_in_range)  # read once: it may be an iterator
    measured_set = {m for m in measured if m}
    universe = sorted(listed | measured_set, key=version_order)
    if not measured_set:
        return MeasuredRanges((), ())
    lo = universe.index(min(measured_set, key=version_order))
    hi = universe.index(max(measured_set, key=version_order))
    inside = universe[lo : hi + 1]
    if not listed:  # nothing says which releases lie between two measured ones: claim no run
        return MeasuredRanges(tuple((v, v) for v in inside), ())
    runs = tuple((a, b) for a, b, _ in _runs(inside, measured_set))
    return MeasuredRanges(runs, tuple(_runs(inside, set(inside) - measured_set)))


def measured_ranges(releases_in_range: Iterable[str], measured: Iterable[str]) -> str:
    """'0.5.5.post3–0.5.11', or the measured runs with the gaps named. Pure; see measured_runs."""
    return measured_runs(releases_in_range, measured).text()
