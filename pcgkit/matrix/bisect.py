"""Find the first version along one axis where a mode's verdict changes. The search is pure: it is
handed an ordered list of versions and an evaluator (version -> verdict, None when the cell could
not give one), and evaluates O(log N) of them, stepping around versions whose cells broke.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

Evaluate = Callable[[str], "str | None"]


@dataclasses.dataclass(frozen=True)
class Probe:
    version: str
    verdict: str | None  # None: the cell errored (install/import/run), no statement about the bug


@dataclasses.dataclass(frozen=True)
class BisectResult:
    before: Probe | None  # the last version with the first endpoint's verdict
    after: Probe | None  # the first version with a different verdict
    probes: tuple[Probe, ...]  # every evaluation, in order
    message: str

    @property
    def found(self) -> bool:
        return self.before is not None and self.after is not None


def _nearest_usable(lo: int, hi: int, broken: set[int]) -> int | None:
    """The untried index closest to the middle of (lo, hi) whose cell has not already broken."""
    middle = (lo + hi) // 2
    inner = [i for i in range(lo + 1, hi) if i not in broken]
    return min(inner, key=lambda i: (abs(i - middle), i)) if inner else None


def bisect(versions: Sequence[str], evaluate: Evaluate) -> BisectResult:
    """Boundary where the verdict stops being the first version's. Assumes one change along the axis."""
    probes: list[Probe] = []
    seen: dict[int, str | None] = {}

    def probe(i: int) -> str | None:
        if i not in seen:
            seen[i] = evaluate(versions[i])
            probes.append(Probe(versions[i], seen[i]))
        return seen[i]

    if len(versions) < 2:
        return BisectResult(None, None, (), "need at least two versions to bisect")
    # Endpoints: step inwards past cells that give no verdict.
    lo = next((i for i in range(len(versions)) if probe(i) is not None), None)
    if lo is None:
        return BisectResult(None, None, tuple(probes), "no version gave a verdict (every cell errored)")
    hi = next((i for i in range(len(versions) - 1, lo, -1) if probe(i) is not None), None)
    if hi is None:
        return BisectResult(None, None, tuple(probes), f"only {versions[lo]} gave a verdict")
    start = seen[lo]
    if seen[hi] == start:
        return BisectResult(
            None, None, tuple(probes),
            f"{versions[lo]} and {versions[hi]} both give {start}: no change to bisect between them",
        )
    broken: set[int] = set()
    while hi - lo > 1:
        mid = _nearest_usable(lo, hi, broken)
        if mid is None:
            break  # every version strictly between lo and hi errored: the boundary is as narrow as it gets
        verdict = probe(mid)
        if verdict is None:
            broken.add(mid)
        elif verdict == start:
            lo = mid
        else:
            hi = mid
    before, after = Probe(versions[lo], seen[lo]), Probe(versions[hi], seen[hi])
    gap = [versions[i] for i in range(lo + 1, hi)]
    note = f" (versions between them errored: {', '.join(gap)})" if gap else ""
    return BisectResult(
        before, after, tuple(probes),
        f"{before.version} is the last {before.verdict}; {after.version} is the first {after.verdict}{note}",
    )


def versions_between(known: Sequence[str], first: str, last: str) -> list[str]:
    """The known releases from first to last inclusive, in the known (oldest-first) order."""
    if first not in known or last not in known:
        missing = [v for v in (first, last) if v not in known]
        raise ValueError(f"not a known release: {', '.join(missing)} (refresh with `bin/pcgkit lab pins`)")
    i, j = known.index(first), known.index(last)
    if i > j:
        raise ValueError(f"{first} comes after {last}")
    return list(known[i : j + 1])
