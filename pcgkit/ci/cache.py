"""uv's cache on the hosted CI jobs, sized against GitHub's per-repository cache limit. Pure.

The generated workflow keeps one cache entry per (torch version, torch build) of its hosted jobs, saved by the nightly
after `uv cache prune --ci` (uv's documented CI practice: it keeps only wheels built from source; pre-built wheels
download again, as fast as a cache restore). What one entry weighs is measured, not guessed: benchmarks/uv_cache_size.py
installs a cell into a fresh uv cache and records its size before and after the prune, as actions/cache archives it
(fixtures/measurements/uv-cache-size.json). `cache_budget` multiplies the planned keys by that size and compares the sum
with the limit; `pcgkit ci github` refuses a plan over it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from pcgkit.ci.plan import CiPlan

# "the total size of all caches in a repository is limited to 10 GB" (GitHub's @actions/cache README,
# actions/toolkit packages/cache, read 2026-12-02); over it GitHub evicts the oldest entries. Decimal
# gigabytes: the smaller reading of "GB".
GITHUB_CACHE_LIMIT_BYTES = 10 * 10**9
# Entries of the previous generation stay until 7 days unused: a lock refresh (a new hashFiles in every
# key) holds two generations for up to a week.
GENERATIONS = 2
MEASUREMENTS = "measurements/uv-cache-size.json"  # under fixtures/
SAVED = "after_prune_ci"  # what the workflow saves (it prunes first); "before_prune" is what it would save without


class CacheBudgetError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class CacheBudget:
    keys: tuple[tuple[str, str], ...]  # (torch version or "none", torch build) of each planned entry
    bytes_per_key: Mapping[str, int]  # measured, per torch build

    @property
    def planned_bytes(self) -> int:
        return GENERATIONS * sum(self.bytes_per_key[build] for _torch, build in self.keys)

    @property
    def over(self) -> bool:
        return self.planned_bytes > GITHUB_CACHE_LIMIT_BYTES

    def describe(self) -> str:
        sizes = ", ".join(f"{build} {_mb(n)}" for build, n in sorted(self.bytes_per_key.items()))
        return (f"uv cache: {len(self.keys)} key(s) x {GENERATIONS} generations x measured size per key "
                f"({sizes}; fixtures/{MEASUREMENTS}) = {_mb(self.planned_bytes)} of GitHub's {_mb(GITHUB_CACHE_LIMIT_BYTES)} per repository")


def _mb(n: int) -> str:
    return f"{n / 10**6:,.1f} MB" if n < 10**9 else f"{n / 10**9:.1f} GB"


def measured_bytes_per_build(measurements: Mapping, saved: str = SAVED) -> dict[str, int]:
    """The largest measured entry per torch build, as actions/cache archives it. Pure."""
    out: dict[str, int] = {}
    for record in measurements.get("measurements", ()):
        size = int(record[saved]["archived_bytes"])
        out[record["torch_build"]] = max(size, out.get(record["torch_build"], 0))
    return out


def cache_keys(plan: CiPlan) -> tuple[tuple[str, str], ...]:
    """One uv cache entry per (torch, build) of the hosted jobs (GPU runners keep their own disk). Pure."""
    keys = {(job.torch or "none", job.torch_build) for group in plan.groups if group.runner.hosted for job in group.jobs}
    return tuple(sorted(keys))


def cache_budget(plan: CiPlan, bytes_per_build: Mapping[str, int]) -> CacheBudget:
    """The plan's cache entries against the limit; CacheBudgetError when a build has no measurement. Pure."""
    keys = cache_keys(plan)
    unmeasured = sorted({build for _torch, build in keys} - set(bytes_per_build))
    if unmeasured:
        raise CacheBudgetError(f"no uv cache measurement for torch build {', '.join(unmeasured)} in fixtures/{MEASUREMENTS}: "
                               "record one with benchmarks/uv_cache_size.py")
    return CacheBudget(keys, {build: bytes_per_build[build] for _torch, build in keys})
