"""What the nightly costs, derived from a matrix run's own timings: per runner kind, first night vs later. Pure.

Read, never guessed: each cell job's time is the cell's recorded wall time in the kit's newest matrix
(fixtures/matrix_snapshot.json, written from the matrix sample's compat.json) plus the measured install
of one cell into an empty uv cache (fixtures/measurements/uv-cache-size.json): the hosted jobs restore a
cache pruned with `uv cache prune --ci`, which keeps only wheels built from source, so every night, the
first included, downloads the pre-built wheels again. A job whose cell has no recorded time is counted
and named, never given a made-up one. What was not measured (job set-up, a GPU runner's cells, its image
build) is said as such, with the plan's limits as the only bound.

The wall per night packs the hosted jobs longest first onto the concurrency the account allows (an
input: GitHub sets it per plan); runner-minutes round each job up to a whole minute.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections.abc import Mapping, Sequence

from pcgkit.ci.plan import CellJob, CiPlan, JobGroup

DEFAULT_HOSTED_CONCURRENCY = 20  # an input, not a fact about your account: set it to your plan's
DEFAULT_GPU_RUNNERS = 1
OTHER_JOBS = ("report", "deploy")  # the jobs after the cells (pcgkit.ci.github)


@dataclasses.dataclass(frozen=True)
class Measured:
    """What the derivation reads, each with where it came from."""

    cell_seconds: Mapping[str, float]  # cell id -> recorded wall time of one matrix run (its install included)
    cells_source: str  # which run, when, on what machine
    cold_install_s: Mapping[str, float]  # torch build -> install of one cell into an empty uv cache
    disk_bytes: Mapping[str, int]  # torch build -> that uv cache's size on disk before the prune
    sizes_source: str


@dataclasses.dataclass(frozen=True)
class RunnerCost:
    """One runner kind's night."""

    runner: str  # "hosted", "sm120", "gpu"
    labels: tuple[str, ...]
    jobs: int
    unmeasured: tuple[str, ...]  # cell ids with no recorded time on this runner kind
    runner_minutes: tuple[int, int] | None  # (first night, later nights); None: nothing measured
    wall_minutes: tuple[int, int] | None
    limit_minutes: int  # the sum of the jobs' timeout-minutes: the most a night can bill (an upper bound)
    disk: str
    cache: str

    @property
    def measured_jobs(self) -> int:
        return self.jobs - len(self.unmeasured)


@dataclasses.dataclass(frozen=True)
class NightlyCost:
    cells: int  # planned cells (each runs once per runner kind it is planned on)
    cell_jobs: int
    other_jobs: int
    runners: tuple[RunnerCost, ...]
    gpu_wait_minutes: int  # how long the report job waits for GPU jobs before naming them `not run`
    hosted_concurrency: int
    sources: tuple[str, ...]

    @property
    def jobs(self) -> int:
        return self.cell_jobs + self.other_jobs


def _minutes(seconds: float) -> int:
    return max(1, math.ceil(seconds / 60.0))


def makespan(seconds: Sequence[float], slots: int) -> float:
    """Wall time of jobs packed longest first onto `slots` parallel runners (LPT). Pure."""
    if not seconds:
        return 0.0
    finish = [0.0] * max(1, min(slots, len(seconds)))
    heapq.heapify(finish)
    for s in sorted(seconds, reverse=True):
        heapq.heappush(finish, heapq.heappop(finish) + s)
    return max(finish)


def _hosted(group_jobs: Sequence[CellJob], measured: Measured, concurrency: int, cache_line: str) -> RunnerCost:
    times = []
    unmeasured = []
    for job in group_jobs:
        cell_s = measured.cell_seconds.get(job.cell_id)
        if cell_s is None:
            unmeasured.append(job.cell_id)
            continue
        times.append(cell_s + measured.cold_install_s.get(job.torch_build, 0.0))
    runner = group_jobs[0].runner
    billed = sum(_minutes(t) for t in times)
    wall = _minutes(makespan(times, concurrency)) if times else 0
    builds = sorted({j.torch_build for j in group_jobs})
    disk = "; ".join(f"{b} torch: {_gb(measured.disk_bytes[b])} (one cell's uv cache, the venv hard-linked from it)"
                     for b in builds if b in measured.disk_bytes) or "not measured"
    return RunnerCost(runner.id, runner.labels, len(group_jobs), tuple(unmeasured),
                      (billed, billed) if times else None, (wall, wall) if times else None,
                      sum(j.timeout_minutes for j in group_jobs), disk, cache_line)


def _self_hosted(group_jobs: Sequence[CellJob]) -> RunnerCost:
    runner = group_jobs[0].runner
    return RunnerCost(runner.id, runner.labels, len(group_jobs), tuple(j.cell_id for j in group_jobs), None, None,
                      sum(j.timeout_minutes for j in group_jobs),
                      "not measured (uv cache and docker image layers on the runner's own disk)",
                      "the runner's own disk (kept between nights: later nights reuse the image layers)")


def _merge(groups: Sequence[JobGroup]) -> dict[str, list[CellJob]]:
    by_runner: dict[str, list[CellJob]] = {}
    for group in groups:  # a plan over 256 jobs is split into groups of one runner kind
        by_runner.setdefault(group.runner.id, []).extend(group.jobs)
    return by_runner


def nightly_cost(plan: CiPlan, measured: Measured, cache_line: str, gpu_wait_minutes: int,
                 hosted_concurrency: int = DEFAULT_HOSTED_CONCURRENCY) -> NightlyCost:
    """The night of this plan, from these measurements. Pure."""
    runners = []
    for jobs in _merge(plan.groups).values():
        if jobs[0].runner.hosted:
            runners.append(_hosted(jobs, measured, hosted_concurrency, cache_line))
        else:
            runners.append(_self_hosted(jobs))
    cells = len({j.cell_id for j in plan.jobs} | {c for c, _ in plan.excluded})
    return NightlyCost(cells, len(plan.jobs), len(OTHER_JOBS), tuple(runners), gpu_wait_minutes, hosted_concurrency,
                       (measured.cells_source, measured.sizes_source))


def _gb(n: int) -> str:
    return f"{n / 10**9:.1f} GB" if n >= 10**9 else f"{n / 10**6:.0f} MB"


def _pair(values: tuple[int, int] | None, unit: str) -> tuple[str, str]:
    if values is None:
        return ("not measured", "not measured")
    return (f"{values[0]} {unit}", f"{values[1]} {unit}")


def render_table(cost: NightlyCost) -> list[str]:
    """The Markdown table (docs/ci.md's generated block; `pcgkit ci github` prints it). Pure."""
    lines = [f"{cost.cells} cells, {cost.cell_jobs} cell jobs + {cost.other_jobs} ({', '.join(OTHER_JOBS)}) per night; "
             f"hosted concurrency assumed {cost.hosted_concurrency} jobs (`--hosted-concurrency`: your plan's limit); "
             f"the report waits {cost.gpu_wait_minutes} min for GPU jobs, then names the rest `not run`.", "",
             "| runner | jobs (with a recorded time) | runner-minutes, first night | later nights | wall, first night | "
             "later nights | most a night can bill (timeouts) | disk per job | cache |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in cost.runners:
        first_m, later_m = _pair(r.runner_minutes, "min")
        first_w, later_w = _pair(r.wall_minutes, "min")
        lines.append(f"| {r.runner} [{', '.join(r.labels)}] | {r.jobs} ({r.measured_jobs}) | {first_m} | {later_m} | "
                     f"{first_w} | {later_w} | {r.limit_minutes} min | {r.disk} | {r.cache} |")
    if cost.gpu_wait_minutes:
        lines += ["", f"The report job runs on a hosted runner and waits up to {cost.gpu_wait_minutes} min for the GPU jobs: "
                  "up to that many more hosted runner-minutes on a night a GPU runner is slow or offline."]
    lines += ["", "Sources: " + "; ".join(cost.sources) + "."]
    unmeasured = [f"{r.runner}: {', '.join(r.unmeasured)}" for r in cost.runners if r.unmeasured]
    if unmeasured:
        lines.append("No recorded time (not counted above): " + "; ".join(unmeasured) + ".")
    return lines


def header_lines(cost: NightlyCost) -> list[str]:
    """The same, one line per runner kind, for the workflow file's header. Pure."""
    out = [f"Cost per night: {cost.cells} cells, {cost.cell_jobs} cell jobs + {cost.other_jobs} others "
           f"(derived from {cost.sources[0]})."]
    for r in cost.runners:
        if r.runner_minutes is None:
            out.append(f"  {r.runner}: {r.jobs} jobs, no recorded time on this runner kind; at most {r.limit_minutes} "
                       f"runner-minutes (their timeouts); the report waits {cost.gpu_wait_minutes} min for them "
                       "(variable PCGKIT_GPU_WAIT_MINUTES)")
        else:
            first, later = r.runner_minutes
            wall_first, wall_later = r.wall_minutes or (0, 0)
            out.append(f"  {r.runner}: {r.jobs} jobs, {first} runner-minutes and {wall_first} min wall the first night, "
                       f"{later} and {wall_later} later (at {cost.hosted_concurrency} concurrent jobs); disk per job {r.disk}")
    return out


def measured_from(snapshot: Mapping, uv_cache: Mapping, snapshot_name: str, uv_cache_name: str) -> Measured:
    """Measured, from the matrix snapshot (per-cell `duration_s` of a run) and the uv cache measurements. Pure.
    A cell with no recorded time is left out (and named by the table), never given one."""
    cells = {c["id"]: float(c["duration_s"]) for c in snapshot.get("cells", ()) if c.get("duration_s") is not None}
    installs: dict[str, float] = {}
    disks: dict[str, int] = {}
    dates = set()
    for record in uv_cache.get("measurements", ()):
        build = record["torch_build"]
        installs[build] = max(float(record.get("install_s") or 0.0), installs.get(build, 0.0))
        disks[build] = max(int(record["before_prune"]["raw_bytes"]), disks.get(build, 0))
        dates.add(str(record.get("date", "")))
    created = str(snapshot.get("matrix_created") or "")[:10]
    cells_source = (f"cell wall times of the matrix of {created} ({snapshot_name}, from {snapshot.get('source', '?')}; "
                    "recorded with a warm uv cache on the machine that ran it)")
    sizes_source = (f"install into an empty uv cache and its size, per torch build ({uv_cache_name}, "
                    f"{', '.join(sorted(d for d in dates if d)) or 'undated'})")
    return Measured(cells, cells_source, installs, disks, sizes_source)
