"""The matrix as CI jobs: one job per cell x target, grouped by the runner that can run it. Pure.

Planned from the kit's own matrix plan (pcgkit.matrix.plan), never a second list of cells:
- simulated SM120 (the `cpu_sim` marker) on a hosted runner (`ubuntu-latest`), venv backend;
- each real-hardware target (`sm120`, `gpu`) the user gave runner labels for on those
  self-hosted runners, through the docker backend with `--gpus all` and `--require-hardware`, so
  a runner without the GPU fails instead of going green by skipping.
Each job writes one cell folder and uploads it as an artifact; a final report job merges them all
with `pcgkit report --from ...`. No CI syntax here: renderers (pcgkit.ci.github; another CI is one
more renderer) turn a CiPlan into a workflow file.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence

from pcgkit.matrix import backends
from pcgkit.matrix.cells import EXISTING, TORCH_BUILD_CUDA, TORCH_BUILDS, Cell
from pcgkit.values import targets

HOSTED_LABELS: tuple[str, ...] = ("ubuntu-latest",)
CELLS_DIR = "pcgkit-out"  # each job's --reports folder; its cell lands in CELLS_DIR/matrix/cells/<id>
ARTIFACTS_DIR = "pcgkit-artifacts"  # where the report job downloads every cell artifact
REPORT_ARTIFACT = "pcgkit-report"
HISTORY_RUNS_KEPT = 100  # the dashboard's timeline reads this many previous runs
DEFAULT_CELL_TIMEOUT_S = 1800.0
SETUP_MINUTES = 15  # checkout, uv, the kit, artifact upload: on top of the cell's own limit
IMAGE_BUILD_MINUTES = 45  # a docker cell's first image build (torch + CUDA layers) on a GPU runner
MAX_JOBS_PER_MATRIX = 256  # GitHub's limit on one matrix strategy; larger plans split into groups
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclasses.dataclass(frozen=True)
class RunnerClass:
    """A kind of machine a job runs on: who selects it (labels) and what it can run."""

    id: str  # "hosted" or the target id ("sm120", "gpu")
    labels: tuple[str, ...]
    hosted: bool  # interchangeable machines the CI provides (no GPU, no persistent cache)
    target: targets.Target
    backend: str  # pcgkit.matrix.backends: FOR_SIMULATION on hosted runners, FOR_REAL_HARDWARE on GPU runners


@dataclasses.dataclass(frozen=True)
class CellJob:
    cell_id: str
    python: str
    torch: str  # "" for a cell without a torch pin: keys the uv cache, so cells sharing torch share it
    runner: RunnerClass
    timeout_s: float  # the cell's own limit (pcgkit matrix --timeout)
    timeout_minutes: int  # the CI job's: the cell's limit plus setup (and an image build on GPU runners)
    artifact: str  # unique per run: cell-<id>-<target>
    command: tuple[str, ...]  # the pcgkit argv (without the leading interpreter)
    torch_build: str = TORCH_BUILD_CUDA  # which build of the locked torch it installs: keys the uv cache too
    sglang: str = ""  # the cell's SGLang pin: its jobs also run the SGLang-level and end-to-end cases

    @property
    def cell_folder(self) -> str:
        return f"{CELLS_DIR}/matrix/cells/{self.cell_id}"


@dataclasses.dataclass(frozen=True)
class JobGroup:
    """Jobs one matrix strategy runs: same runner class, at most MAX_JOBS_PER_MATRIX."""

    id: str  # a CI job id: "simulated", "sm120", "simulated-2"
    runner: RunnerClass
    jobs: tuple[CellJob, ...]


@dataclasses.dataclass(frozen=True)
class CiPlan:
    groups: tuple[JobGroup, ...]
    excluded: tuple[tuple[str, str], ...]  # (cell id, why it has no CI job)
    report_command: tuple[str, ...]

    @property
    def jobs(self) -> tuple[CellJob, ...]:
        return tuple(j for g in self.groups for j in g.jobs)


class CiPlanError(ValueError):
    """A plan that cannot be made (bad runner labels, an unknown cell, nothing left to run): a usage error."""


_LABEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]{0,99}")


def parse_runner_labels(items: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """'sm120=self-hosted,gpu,sm120' -> {'sm120': ('self-hosted', 'gpu', 'sm120')}. Pure. Only real-hardware
    targets take labels: the simulation runs on hosted runners."""
    real = [t.id for t in targets.TARGETS if not t.simulated]
    out: dict[str, tuple[str, ...]] = {}
    for item in items:
        target, sep, labels = item.partition("=")
        names = tuple(x.strip() for x in labels.split(",") if x.strip())
        if not sep or target not in real or not names:
            raise CiPlanError(f"--runner-labels {item!r}: expected TARGET=LABEL[,LABEL...] with TARGET one of {', '.join(real)}")
        bad = next((name for name in names if not _LABEL_RE.fullmatch(name)), None)
        if bad is not None:  # a newline or a quote would be written into the workflow's YAML and its header
            raise CiPlanError(f"--runner-labels {item!r}: label {bad!r} is not a runner label (letters, digits and "
                              "'.', '_', '-', ':', '+'; at most 100 characters)")
        out[target] = names
    return out


def runner_classes(hardware_labels: Mapping[str, tuple[str, ...]]) -> tuple[RunnerClass, ...]:
    """Hosted for the simulation, then one self-hosted class per configured real target. Pure."""
    classes = [RunnerClass("hosted", HOSTED_LABELS, True, targets.SIM_SM120, backends.FOR_SIMULATION)]
    for target in targets.TARGETS:
        if not target.simulated and target.id in hardware_labels:
            classes.append(RunnerClass(target.id, tuple(hardware_labels[target.id]), False, target,
                                       backends.FOR_REAL_HARDWARE))
    return tuple(classes)


def job_command(cell: Cell, runner: RunnerClass, timeout_s: float, matrix_args: Sequence[str] = (),
                torch_build: str = TORCH_BUILD_CUDA) -> tuple[str, ...]:
    """`pcgkit matrix` for one cell on one runner class, reports into CELLS_DIR. Pure."""
    argv = ["pcgkit", "matrix", *matrix_args, "--cell", cell.id, "--reports", CELLS_DIR, "--jobs", "1",
            "--timeout", f"{timeout_s:g}", "-m", runner.target.marker, "--backend", runner.backend]
    if torch_build != TORCH_BUILD_CUDA:
        argv += ["--torch-build", torch_build]
    argv += backends.ci_arguments(runner.backend)
    if not runner.target.simulated:
        argv += ["--require-hardware", runner.target.marker]
    return tuple(argv)


def plan_ci(
    cells: Sequence[Cell],
    hardware_labels: Mapping[str, tuple[str, ...]] | None = None,
    hardware_cells: Sequence[str] = (),
    default_timeout_s: float = DEFAULT_CELL_TIMEOUT_S,
    matrix_args: Sequence[str] = (),
    local: bool = False,
    hosted_torch_build: str = TORCH_BUILD_CUDA,
) -> CiPlan:
    """The jobs for these cells. Pure. hardware_cells limits the real-hardware jobs (GPU runners are few; the
    simulation runs every cell); matrix_args go into every job so that it plans exactly these cells. A cell of kind
    'existing' names an interpreter of the planning machine, which no runner has: excluded unless `local`
    (`pcgkit ci local`). GPU jobs keep the locked CUDA torch; the hosted ones install hosted_torch_build."""
    if hosted_torch_build not in TORCH_BUILDS:
        raise CiPlanError(f"torch build {hosted_torch_build!r}: expected one of {', '.join(TORCH_BUILDS)}")
    runners = runner_classes(hardware_labels or {})
    known = {c.id for c in cells}
    unknown = [c for c in hardware_cells if c not in known]
    if unknown:
        raise CiPlanError(f"--hardware-cell {', '.join(unknown)}: not in the plan; known: {', '.join(sorted(known))}")
    excluded: list[tuple[str, str]] = []
    by_runner: dict[str, list[CellJob]] = {r.id: [] for r in runners}
    for cell in cells:
        if cell.kind == EXISTING and not local:
            excluded.append((cell.id, f"kind 'existing' runs the interpreter {cell.interpreter} of the planning machine"))
            continue
        timeout_s = cell.timeout_s or default_timeout_s
        for runner in runners:
            if not runner.hosted and hardware_cells and cell.id not in hardware_cells:
                continue
            build = hosted_torch_build if runner.hosted else TORCH_BUILD_CUDA
            by_runner[runner.id].append(CellJob(
                cell_id=cell.id, python=cell.python, torch=cell.torch or "", runner=runner,
                timeout_s=timeout_s,
                timeout_minutes=math.ceil(timeout_s / 60.0) + SETUP_MINUTES + (0 if runner.hosted else IMAGE_BUILD_MINUTES),
                artifact=_SAFE.sub("_", f"cell-{cell.id}-{runner.target.id}"),
                command=job_command(cell, runner, timeout_s, matrix_args, build), torch_build=build,
                sglang=cell.sglang or "",
            ))
    groups = []
    for runner in runners:
        jobs = by_runner[runner.id]
        base = "simulated" if runner.hosted else runner.id
        chunks = [jobs[i:i + MAX_JOBS_PER_MATRIX] for i in range(0, len(jobs), MAX_JOBS_PER_MATRIX)]
        for n, chunk in enumerate(chunks, start=1):
            groups.append(JobGroup(base if n == 1 else f"{base}-{n}", runner, tuple(chunk)))
    if not groups:
        raise CiPlanError("no cell can run on CI: every planned cell was excluded (" +
                          "; ".join(f"{c}: {why}" for c, why in excluded) + ")")
    report = ("pcgkit", "report", "--reports", "reports")  # the --from list is the downloaded artifacts
    return CiPlan(tuple(groups), tuple(excluded), report)
