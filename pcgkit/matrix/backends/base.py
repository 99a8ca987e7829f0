"""What every backend shares: its configuration, the values the cell loop (pcgkit.matrix.backends.loop)
hands it and gets back, and the protocol a backend satisfies."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path
from typing import Any, Callable, ContextManager, Mapping, Protocol

from pcgkit import resources
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.installed import InstalledDistribution
from pcgkit.matrix.outcome import CellOutcome
from pcgkit.matrix.torchbuild import DEFAULT_CPU_INDEX
from pcgkit.values.scopes import SCOPE_ALL


@dataclasses.dataclass(frozen=True)
class BackendConfig:
    cells_root: Path  # reports/matrix/cells
    envs_root: Path = dataclasses.field(default_factory=resources.default_envs_root)
    timeout_s: float = 1800.0
    case_timeout_s: float = 600.0
    backend: str = "venv"  # a key of pcgkit.matrix.backends.BACKENDS: a cached result is reused only by the backend that made it
    select: str | None = None  # pytest -m expression passed into every cell
    require_hardware: tuple[str, ...] = ()  # --require-hardware, passed into every cell
    locks_dir: Path = dataclasses.field(default_factory=lambda: resources.fixture("locks"))  # committed cell locks
    force: bool = False  # --force: rebuild each cell's environment too, not only rerun its cases
    # where a "cpu" torch build gets its torch: an install source, not part of what the result answers for
    torch_cpu_index: str = DEFAULT_CPU_INDEX
    # The case ids each cell must account for: a mode a cell's pytest never reported becomes an `error` row.
    expected_modes: tuple[str, ...] = ()
    # Variables every cell's case run gets (`matrix --preflight FILE` hands the launch file down this way).
    case_env: tuple[tuple[str, str], ...] = ()
    # What a result answers for beyond its definition (e.g. the launch file it preflighted): stamped in its
    # provenance; a cached cell is reused only when these are equal.
    answers_for: tuple[tuple[str, str], ...] = ()
    # The same per narrowed scope (pcgkit.values.scopes): a sglang-level cell owes only its scope's cases.
    scope_modes: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    def modes_for(self, scope: str) -> tuple[str, ...]:
        return tuple(self.scope_modes.get(scope, self.expected_modes))


# Told each stage a cell enters, for the progress rows and for naming where an interrupted cell stopped.
OnStage = Callable[[Cell, str], None]


class RunCell(Protocol):
    """Run one cell to an outcome: verdicts, or an error cell with the reason. Never raises for a bad cell.
    The runner (pcgkit.matrix.runner) always passes on_stage; a backend reports each stage it enters."""

    def __call__(self, cell: Cell, config: BackendConfig, on_stage: OnStage) -> CellOutcome: ...


class Deadline:
    """One deadline for the whole cell, shared by its stages."""

    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return max(1.0, self.end - time.monotonic())


class Stages:
    """Seconds per stage, for the cell's cost breakdown (pcgkit.matrix.costs names the stages)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def timing(self, stage: str):
        start = time.monotonic()
        try:
            yield
        finally:
            self.seconds[stage] = self.seconds.get(stage, 0.0) + time.monotonic() - start


@dataclasses.dataclass(frozen=True)
class CellContext:
    """What the loop hands a backend for one cell; the backend leaves the run's files in cell_dir."""

    cell: Cell
    config: BackendConfig
    cell_dir: Path
    deadline: Deadline
    stages: Stages


@dataclasses.dataclass(frozen=True)
class CaseRequest:
    """The cases the loop asks a prepared environment to run, as `pcgkit run` takes them. Pure."""

    reports_dir: Path
    timeout_s: float
    case_timeout_s: float
    select: str | None = None
    require_hardware: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # variables for the case run (the command's case_env)
    expected_modes: tuple[str, ...] = ()
    scope: str = SCOPE_ALL


@dataclasses.dataclass(frozen=True)
class CasesRan:
    """How a backend's case run ended (the results are the files it left in the request's reports_dir)."""

    ok: bool  # the run's process exited 0
    failure: str = ""  # how it ended otherwise, e.g. "exit status 3" (said in an error cell's reason)
    tail: str = ""  # the end of its output
    wall_s: float | None = None  # the run's own seconds (None: not measured apart from the cell)


class StageFailed(Exception):
    """A backend's stage broke: the cell becomes an error cell at that stage with this reason and tail."""

    def __init__(self, stage: str, reason: str, tail: str = "", provenance: Mapping[str, Any] | None = None,
                 lock: Mapping[str, Any] | None = None, installed: tuple[InstalledDistribution, ...] = ()):
        super().__init__(reason)
        self.stage = stage
        self.reason = reason
        self.tail = tail
        # What was known when it broke: where the cell ran, the lock it used, what got installed.
        self.provenance = dict(provenance or {})
        self.lock = dict(lock or {})
        self.installed = installed


class Environment(Protocol):
    """A prepared cell environment (a backend's answer to `prepared`)."""

    installed: tuple[InstalledDistribution, ...]  # the installed set, when the backend reads it
    lock: dict  # the lock it came from (source, digest, inputs)
    provenance: dict  # where the cell ran (image id, digest, ...): stamped on the outcome
    result_evidence: dict  # merged into every result's evidence (e.g. {"image": provenance})

    def run_cases(self, request: CaseRequest) -> CasesRan:
        """Run the requested cases; raise StageFailed only for an ending that yields no run at all."""


class Backend(Protocol):
    """Where cells run. A backend's module registers `make_backend(args)`, `SUMMARY` and optionally
    `add_options(parser)` and `CI_ARGUMENTS` (pcgkit.matrix.backends)."""

    prepare_stage: str  # how the progress rows name its preparing stage ("install", "image")

    def check_machine(self, cells) -> None:
        """Before any cell: raise for what every cell would miss (a missing tool), not once per cell."""

    def prepared(self, ctx: CellContext) -> ContextManager[Environment]:
        """The cell's environment, held for as long as its cases run; raise StageFailed when it cannot be had."""
