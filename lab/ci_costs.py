"""The nightly cost's Markdown tables the docs show (docs/ci.md's generated block, docs/gpu-and-ci.md's one-runner
table), from pcgkit.ci.costs' values: the workshop's, read by docs/gen_facts.py and its tests, not by a user
command. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from pcgkit.ci.costs import (
    OTHER_JOBS,
    GpuMeasured,
    NightlyCost,
    first_night_seconds,
    later_night_seconds,
    runner_order,
)
from pcgkit.ci.plan import CellJob


def render_runner_plan(jobs: Sequence[CellJob], gpu: GpuMeasured) -> list[str]:
    """One GPU runner's night, job by job in runner_order: the Markdown table docs/gpu-and-ci.md shows. Pure."""
    first, later = first_night_seconds(jobs, gpu), later_night_seconds(jobs, gpu)
    lines = ["| # | cell | torch | SGLang | first night | later nights | later nights, cumulative |",
             "|---|---|---|---|---|---|---|"]
    total = 0.0
    for n, (job, f, s) in enumerate(zip(runner_order(jobs), first, later), start=1):
        total += s
        lines.append(f"| {n} | `{job.cell_id}` | {job.torch or '-'} | {job.sglang or '-'} | {f / 60:.1f} min | "
                     f"{s / 60:.1f} min | {total / 60:.0f} min |")
    lines.append(f"| | **{len(jobs)} jobs** | | | **{sum(first) / 60:.0f} min** | **{sum(later) / 60:.0f} min** | |")
    return lines


def _pair(values: tuple[int, int] | None, unit: str) -> tuple[str, str]:
    if values is None:
        return ("not measured", "not measured")
    return (f"{values[0]} {unit}", f"{values[1]} {unit}")


def render_table(cost: NightlyCost) -> list[str]:
    """The Markdown table of docs/ci.md's generated block (`pcgkit ci github` prints its header_lines). Pure."""
    lines = [f"{cost.cells} cells, {cost.cell_jobs} cell jobs + {len(OTHER_JOBS)} ({', '.join(OTHER_JOBS)}) per night; "
             f"hosted concurrency assumed {cost.hosted_concurrency} jobs (`--hosted-concurrency`: your plan's limit); "
             f"the report waits {cost.gpu_wait_minutes} min for GPU jobs, then names the rest `not run`.", "",
             "| runner | jobs (with a recorded time) | runner-minutes, first night | later nights | wall, first night | "
             "later nights | most a night can bill (timeouts) | disk per job | cache |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in cost.runners:
        first_m, later_m = _pair(r.runner_minutes, "min")
        first_w, later_w = _pair(r.wall_minutes, "min")
        lines.append(f"| {r.runner} [{', '.join(r.labels)}] | {r.jobs} ({r.jobs - len(r.unmeasured)}) | {first_m} | {later_m} | "
                     f"{first_w} | {later_w} | {r.limit_minutes} min | {r.disk} | {r.cache} |")
    if cost.gpu_wait_minutes:
        lines += ["", f"The report job runs on a hosted runner and waits up to {cost.gpu_wait_minutes} min for the GPU jobs: "
                  "up to that many more hosted runner-minutes on a night a GPU runner is slow or offline."]
    lines += ["", "Sources: " + "; ".join(cost.sources) + "."]
    unmeasured = [f"{r.runner}: {', '.join(r.unmeasured)}" for r in cost.runners if r.unmeasured]
    if unmeasured:
        lines.append("No recorded time (not counted above): " + "; ".join(unmeasured) + ".")
    return lines
