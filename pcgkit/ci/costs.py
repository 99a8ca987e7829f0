"""What the nightly costs, derived from a matrix run's own timings: per runner kind, first night vs later. Pure.

Read, never guessed. A hosted job is its cell's recorded wall time in the kit's newest matrix
(fixtures/matrix_snapshot.json) plus one cell's install into an empty uv cache
(fixtures/measurements/uv-cache-size.json): the hosted jobs restore a cache pruned with `uv cache prune --ci`,
which keeps only wheels built from source, so every night downloads the pre-built wheels again. A job whose
cell has no recorded time is counted and named, never given a made-up one. A GPU runner's jobs come from
`GpuMeasured` (fixtures/measurements/gpu-runner.json: the cases' durations on a real GPU, the committed H200
samples, as no SM120 run exists; the CUDA cell image's build, reuse and run overhead measured on the CPU
machine). What was not measured (job set-up, an image pull) is said as such.

The wall per night packs the hosted jobs longest first onto the concurrency the account allows (an
input: GitHub sets it per plan); runner-minutes round each job up to a whole minute. `cache_budget` sizes uv's
cache on the hosted jobs against GitHub's per-repository limit (the section at the end).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import re
from collections.abc import Mapping, Sequence

from pcgkit.ci.plan import CellJob, CiPlan, JobGroup

DEFAULT_HOSTED_CONCURRENCY = 20  # an input, not a fact about your account: set it to your plan's
DEFAULT_GPU_RUNNERS = 1
GPU_MEASUREMENTS = "measurements/gpu-runner.json"  # under fixtures/: GpuMeasured's numbers and their sources
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
class GpuMeasured:
    """What one GPU runner's job costs, each part measured somewhere named in `sources`."""

    flashinfer_cases_s: float  # the case suite's own durations on a real GPU, summed (every cell runs them)
    sglang_cases_s: float  # the SGLang-level and end-to-end cases' durations (cells with an SGLang pin)
    run_overhead_s: float  # a case container's start, imports and pytest around the cases
    base_s: float  # the CUDA base: Debian base + toolkit from PyPI's wheels, once per runner
    torch_layer_s: float  # one torch layer, once per torch version (cells sharing torch reuse it)
    cell_layers_s: float  # FlashInfer & deps, the JIT modules compiled with nvcc, the kit: per cell
    image_reuse_s: float  # finding a cell's image again by its context hash (later nights)
    image_bytes: int  # one cell image on disk
    sources: tuple[str, ...]

    def job_seconds(self, job: CellJob) -> float:
        """One job's cases in its container, image aside."""
        return self.run_overhead_s + self.flashinfer_cases_s + (self.sglang_cases_s if job.sglang else 0.0)


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


@dataclasses.dataclass(frozen=True)
class NightlyCost:
    cells: int  # planned cells (each runs once per runner kind it is planned on)
    cell_jobs: int  # and len(OTHER_JOBS) jobs after them
    runners: tuple[RunnerCost, ...]
    gpu_wait_minutes: int  # how long the report job waits for GPU jobs before naming them `not run`
    hosted_concurrency: int
    sources: tuple[str, ...]


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
    unmeasured = [j.cell_id for j in group_jobs if j.cell_id not in measured.cell_seconds]
    times = [measured.cell_seconds[j.cell_id] + measured.cold_install_s.get(j.torch_build, 0.0)
             for j in group_jobs if j.cell_id in measured.cell_seconds]
    runner = group_jobs[0].runner
    billed = sum(_minutes(t) for t in times)
    wall = _minutes(makespan(times, concurrency)) if times else 0
    builds = sorted({j.torch_build for j in group_jobs})
    disk = "; ".join(f"{b} torch: {_gb(measured.disk_bytes[b])} (one cell's uv cache, the venv hard-linked from it)"
                     for b in builds if b in measured.disk_bytes) or "not measured"
    return RunnerCost(runner.id, runner.labels, len(group_jobs), tuple(unmeasured),
                      (billed, billed) if times else None, (wall, wall) if times else None,
                      sum(j.timeout_minutes for j in group_jobs), disk, cache_line)


def runner_order(jobs: Sequence[CellJob]) -> list[CellJob]:
    """One runner's jobs in the order that builds each torch layer once: by torch version, the cells
    without SGLang first in each torch group (no server launch: minutes sooner), then by cell id. Pure."""
    def torch_version(job: CellJob) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", job.torch))

    return sorted(jobs, key=lambda j: (torch_version(j), bool(j.sglang), j.cell_id))


def first_night_seconds(jobs: Sequence[CellJob], gpu: GpuMeasured) -> list[float]:
    """Per job in runner_order: the first night builds the base once and each torch layer once. Pure."""
    out, torches = [], set()
    for n, job in enumerate(runner_order(jobs)):
        image = gpu.cell_layers_s + (gpu.base_s if n == 0 else 0.0)
        if job.torch not in torches:
            torches.add(job.torch)
            image += gpu.torch_layer_s
        out.append(image + gpu.job_seconds(job))
    return out


def later_night_seconds(jobs: Sequence[CellJob], gpu: GpuMeasured) -> list[float]:
    """Per job in runner_order: the image found again, the cases run. Pure."""
    return [gpu.image_reuse_s + gpu.job_seconds(j) for j in runner_order(jobs)]


def _gpu_measured(group_jobs: Sequence[CellJob], gpu: GpuMeasured, runners: int) -> RunnerCost:
    runner = group_jobs[0].runner
    first, later = first_night_seconds(group_jobs, gpu), later_night_seconds(group_jobs, gpu)
    return RunnerCost(runner.id, runner.labels, len(group_jobs), (),
                      (sum(_minutes(s) for s in first), sum(_minutes(s) for s in later)),
                      (_minutes(makespan(first, runners)), _minutes(makespan(later, runners))),
                      sum(j.timeout_minutes for j in group_jobs),
                      f"{_gb(gpu.image_bytes)} per cell image (layers shared by torch)",
                      "the runner's own docker engine (later nights reuse each image by its context hash)")


def _merge(groups: Sequence[JobGroup]) -> dict[str, list[CellJob]]:
    by_runner: dict[str, list[CellJob]] = {}
    for group in groups:  # a plan over 256 jobs is split into groups of one runner kind
        by_runner.setdefault(group.runner.id, []).extend(group.jobs)
    return by_runner


def nightly_cost(plan: CiPlan, measured: Measured, gpu: GpuMeasured, cache_line: str, gpu_wait_minutes: int,
                 hosted_concurrency: int = DEFAULT_HOSTED_CONCURRENCY) -> NightlyCost:
    """The night of this plan, from these measurements. Pure."""
    runners = [_hosted(jobs, measured, hosted_concurrency, cache_line) if jobs[0].runner.hosted
               else _gpu_measured(jobs, gpu, DEFAULT_GPU_RUNNERS) for jobs in _merge(plan.groups).values()]
    cells = len({j.cell_id for j in plan.jobs} | {c for c, _ in plan.excluded})
    sources = (measured.cells_source, measured.sizes_source) + (
        gpu.sources if any(not j.runner.hosted for j in plan.jobs) else ())
    return NightlyCost(cells, len(plan.jobs), tuple(runners), gpu_wait_minutes, hosted_concurrency, sources)


def _gb(n: int) -> str:
    return f"{n / 10**9:.1f} GB" if n >= 10**9 else f"{n / 10**6:.0f} MB"


def header_lines(cost: NightlyCost) -> list[str]:
    """The same, one line per runner kind, for the workflow file's header. Pure."""
    out = [f"Cost per night: {cost.cells} cells, {cost.cell_jobs} cell jobs + {len(OTHER_JOBS)} others "
           f"(derived from {cost.sources[0]})."]
    for r in cost.runners:
        if r.runner_minutes is None:
            out.append(f"  {r.runner}: {r.jobs} jobs, no recorded time on this runner kind; at most {r.limit_minutes} "
                       f"runner-minutes (their timeouts); the report waits {cost.gpu_wait_minutes} min for them "
                       "(variable PCGKIT_GPU_WAIT_MINUTES)")
        else:
            first, later = r.runner_minutes
            wall_first, wall_later = r.wall_minutes or (0, 0)
            slots = f"{cost.hosted_concurrency} concurrent jobs" if r.runner == "hosted" else f"{DEFAULT_GPU_RUNNERS} runner"
            out.append(f"  {r.runner}: {r.jobs} jobs, {first} runner-minutes and {wall_first} min wall the first night, "
                       f"{later} and {wall_later} later (at {slots}); disk per job {r.disk}")
    return out


def gpu_measured_from(data: Mapping, name: str) -> GpuMeasured:
    """GpuMeasured from fixtures/measurements/gpu-runner.json (its case sums are gpu_case_seconds of the
    samples it names: tests/test_ci_costs.py re-derives them from the committed files). Pure."""
    cases, image = data["cases"], data["image"]
    flashinfer, sglang = float(cases["flashinfer_cases_s"]), float(cases["sglang_cases_s"])
    steps = image["steps_s"]
    sources = (f"GPU cases: the gpu target's own durations in {cases['flashinfer_sample']} ({flashinfer:.0f} s) and "
               f"{cases['sglang_sample']} ({sglang:.0f} s), {cases['device']}; no SM120 run exists",
               f"CUDA cell image and case-run overhead: {name} ({image['measured']})")
    return GpuMeasured(flashinfer, sglang, float(image["run_overhead_s"]), float(steps["base"]),
                       float(steps["torch"]), float(steps["flashinfer"] + steps["jit"] + steps["kit"]),
                       float(image["reuse_s"]), int(image["bytes"]), sources)


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


# --- uv's cache on the hosted jobs against GitHub's per-repository limit ----------------------------------
# One entry per (torch version, torch build), saved by the nightly after `uv cache prune --ci`; one entry's weight
# is measured by benchmarks/uv_cache_size.py as actions/cache archives it. `pcgkit ci github` refuses a plan over:
# "the total size of all caches in a repository is limited to 10 GB" (GitHub's @actions/cache README,
# actions/toolkit packages/cache, read 2026-12-02); over it GitHub evicts the oldest entries. Decimal
# gigabytes: the smaller reading of "GB".
GITHUB_CACHE_LIMIT_BYTES = 10 * 10**9
# Entries of the previous generation stay until 7 days unused: a lock refresh (a new hashFiles in every
# key) holds two generations for up to a week.
GENERATIONS = 2
UV_CACHE_MEASUREMENTS = "measurements/uv-cache-size.json"  # under fixtures/
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
                f"({sizes}; fixtures/{UV_CACHE_MEASUREMENTS}) = {_mb(self.planned_bytes)} of GitHub's {_mb(GITHUB_CACHE_LIMIT_BYTES)} per repository")


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
        raise CacheBudgetError(f"no uv cache measurement for torch build {', '.join(unmeasured)} in fixtures/{UV_CACHE_MEASUREMENTS}: "
                               "record one with benchmarks/uv_cache_size.py")
    return CacheBudget(keys, {build: bytes_per_build[build] for _torch, build in keys})
