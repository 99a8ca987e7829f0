"""Bisect-like attribution over the matrix cells: which version axis explains where a case changes. Pure.

For one case, each cell is an observation (its versions on every axis, and the outcome compared:
the verdict, or the verdict and failure point). An axis *matters* when two cells that agree on every
other axis give different outcomes; it has *no effect* when every such group gives one outcome.
Axes shown to have no effect stop being held fixed, but only inside the version interval where that
was shown (a release outside it may still be the cause). When no controlled pair exists, an axis along
which the outcome is a clean function of the version is a *candidate*; one candidate explains the
change (inferred), several are *confounded* (they changed together in every cell that ran), and the
report says which cell would separate them. Axes that merely co-vary are never the answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pcgkit.util.ranges import version_key

MATTERS = "matters"
NO_EFFECT = "no-effect"
UNTESTED = "untested"
CONSTANT = "constant"
MIXED = "mixed"

# How the explanation was reached, strongest first.
CONTROLLED = "controlled"  # a pair of cells differing only on this axis (others held or shown irrelevant)
INFERRED = "inferred"  # the only axis the outcome follows; no pair isolates it
CONFOUNDED = "confounded"  # several axes changed together in every cell that ran
SAME = "same"  # one outcome in every cell
UNEXPLAINED = "unexplained"  # the outcome varies, but along no single axis
NONE = "none"  # no cell gave an outcome


@dataclasses.dataclass(frozen=True)
class Observation:
    cell: str
    axes: Mapping[str, str | None]  # None: not installed in this cell (e.g. no sglang)
    outcome: str


@dataclasses.dataclass(frozen=True)
class Span:
    outcome: str  # or "mixed" when cells at one version disagree
    first: str | None
    last: str | None
    cells: tuple[str, ...]
    values: tuple[str, ...] = ()  # the versions measured in it, oldest first (a range may skip releases)


@dataclasses.dataclass(frozen=True)
class AxisFinding:
    axis: str
    effect: str  # MATTERS | NO_EFFECT | UNTESTED | CONSTANT
    pair: tuple[str, str] | None = None  # the two cells that show it matters
    held: tuple[str, ...] = ()  # axes held fixed in that comparison
    intervals: tuple[tuple[str | None, str | None], ...] = ()  # where NO_EFFECT was shown (first, last)
    values: tuple[str | None, ...] = ()  # every measured value, oldest first


@dataclasses.dataclass(frozen=True)
class Attribution:
    case: str
    basis: str  # CONTROLLED | INFERRED | CONFOUNDED | SAME | UNEXPLAINED | NONE
    explaining: tuple[str, ...]  # the axes that explain the change (several only when confounded)
    findings: tuple[AxisFinding, ...]
    spans: Mapping[str, tuple[Span, ...]]  # per explaining axis (or the first varying one), oldest first
    cells: int
    # Per axis, the releases a stated range may span (pcgkit.matrix.plan.axis_releases): a range is
    # printed only over measured ones, the others named as gaps (pcgkit.util.ranges). Empty: unknown.
    releases: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    def finding(self, axis: str) -> AxisFinding | None:
        return next((f for f in self.findings if f.axis == axis), None)


def _key(value: str | None) -> tuple:
    return (0,) if value is None else (1, version_key(value))


def sorted_versions(values: Iterable[str | None]) -> list[str | None]:
    """Distinct versions, oldest first, None (not installed) before any."""
    return sorted(set(values), key=_key)


def spans_along(observations: Sequence[Observation], axis: str) -> tuple[Span, ...]:
    """Runs of equal outcomes along one axis, oldest first ("mixed" where one version disagrees)."""
    by_value: dict[str | None, list[Observation]] = {}
    for obs in observations:
        by_value.setdefault(obs.axes.get(axis), []).append(obs)
    spans: list[Span] = []
    for value in sorted_versions(by_value):
        group = by_value[value]
        outcomes = {o.outcome for o in group}
        outcome = outcomes.pop() if len(outcomes) == 1 else MIXED
        cells = tuple(o.cell for o in group)
        # "not installed" never merges with a version: absence is its own state.
        if spans and spans[-1].outcome == outcome and spans[-1].last is not None and value is not None:
            spans[-1] = Span(outcome, spans[-1].first, value, spans[-1].cells + cells, spans[-1].values + (value,))
        else:
            spans.append(Span(outcome, value, value, cells, () if value is None else (value,)))
    return tuple(spans)


def _in(value: str | None, interval: tuple[str | None, str | None]) -> bool:
    return _key(interval[0]) <= _key(value) <= _key(interval[1])


def _stratum_key(obs: Observation, held: Sequence[str], scoped: Mapping[str, tuple]) -> tuple:
    key = []
    for axis in held:
        value = obs.axes.get(axis)
        intervals = scoped.get(axis, ())
        # Inside an interval where this axis was shown not to matter, its exact version is irrelevant.
        key.append(next((("interval", i) for i, iv in enumerate(intervals) if _in(value, iv)), ("value", value)))
    return tuple(key)


def _judge(observations, axis, others, scoped) -> AxisFinding:
    """Group by the other axes (scoped), compare outcomes where this axis varies inside a group."""
    groups: dict[tuple, list[Observation]] = {}
    for obs in observations:
        groups.setdefault(_stratum_key(obs, others, scoped), []).append(obs)
    intervals = []
    for group in groups.values():
        values = sorted_versions(o.axes.get(axis) for o in group)
        if len(values) < 2:
            continue
        differing = next(((a, b) for a in group for b in group
                          if a.outcome != b.outcome and a.axes.get(axis) != b.axes.get(axis)), None)
        if differing is not None:
            pair = tuple(sorted((differing[0].cell, differing[1].cell)))
            return AxisFinding(axis, MATTERS, pair, tuple(others))  # type: ignore[arg-type]
        intervals.append((values[0], values[-1]))
    effect = NO_EFFECT if intervals else UNTESTED
    # Sorted on both ends: a set's order follows string hashing, which differs per process, and the
    # interval order decides which pair of cells the report names.
    ordered = sorted(set(intervals), key=lambda iv: (_key(iv[0]), _key(iv[1])))
    return AxisFinding(axis, effect, None, tuple(others), tuple(ordered))


def _is_function(observations: Sequence[Observation], axis: str) -> bool:
    """Each measured value of the axis gives exactly one outcome (and the outcome does change)."""
    seen: dict[str | None, set[str]] = {}
    for obs in observations:
        seen.setdefault(obs.axes.get(axis), set()).add(obs.outcome)
    return all(len(v) == 1 for v in seen.values()) and len({o.outcome for o in observations}) > 1


def attribute(case: str, observations: Sequence[Observation], axes: Sequence[str]) -> Attribution:
    """Which of `axes` explains the change in this case's outcome over the cells. Pure."""
    obs = list(observations)
    values = {a: tuple(sorted_versions(o.axes.get(a) for o in obs)) for a in axes}
    varying = [a for a in axes if len(values[a]) > 1]
    findings: dict[str, AxisFinding] = {a: AxisFinding(a, CONSTANT, values=values[a]) for a in axes if a not in varying}
    if not obs:
        return Attribution(case, NONE, (), tuple(findings.values()), {}, 0)
    if len({o.outcome for o in obs}) == 1:
        first = varying[0] if varying else axes[0]
        return Attribution(case, SAME, (), tuple(findings[a] for a in axes if a in findings), {first: spans_along(obs, first)},
                           len(obs))
    scoped: dict[str, tuple] = {}
    changed = True
    while changed:  # every axis shown irrelevant loosens the comparison for the others
        changed = False
        for axis in varying:
            if axis in findings and findings[axis].effect in (MATTERS, NO_EFFECT):
                continue
            finding = _judge(obs, axis, [a for a in varying if a != axis], scoped)
            findings[axis] = dataclasses.replace(finding, values=values[axis])
            if finding.effect == NO_EFFECT:
                scoped[axis] = finding.intervals
                changed = True
    for axis in varying:  # a final look with everything learnt: an interaction turns no-effect into matters
        if findings[axis].effect == NO_EFFECT:
            again = _judge(obs, axis, [a for a in varying if a != axis], {k: v for k, v in scoped.items() if k != axis})
            if again.effect == MATTERS:
                findings[axis] = dataclasses.replace(again, values=values[axis])
    matters = tuple(a for a in varying if findings[a].effect == MATTERS)
    if matters:
        basis, explaining = CONTROLLED, matters
    else:
        candidates = tuple(a for a in varying if _is_function(obs, a) and not _covers_change(obs, a, findings[a]))
        basis = INFERRED if len(candidates) == 1 else CONFOUNDED if candidates else UNEXPLAINED
        explaining = candidates
    spans = {a: spans_along(obs, a) for a in (explaining or tuple(varying[:1]))}
    return Attribution(case, basis, explaining, tuple(findings[a] for a in axes), spans, len(obs))


def _covers_change(obs: Sequence[Observation], axis: str, finding: AxisFinding) -> bool:
    """True when the axis was shown irrelevant across every boundary where its outcome changes."""
    if finding.effect != NO_EFFECT:
        return False
    spans = spans_along(obs, axis)
    boundaries = [(a.last, b.first) for a, b in zip(spans, spans[1:])]
    return bool(boundaries) and all(any(_in(lo, iv) and _in(hi, iv) for iv in finding.intervals) for lo, hi in boundaries)


def observations_for(cells: Sequence, case: str, axes: Sequence[str], outcome: Callable[[Any], str | None]):
    """Observations from report cells (anything with .id, .axis_value(axis), and an entry per case)."""
    found = []
    for cell in cells:
        entry = cell.entries.get(case)
        key = outcome(entry) if entry is not None else None
        if key is not None:
            found.append(Observation(cell.id, {a: cell.axis_value(a) for a in axes}, key))
    return found
