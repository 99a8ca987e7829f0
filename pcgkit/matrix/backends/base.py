"""What every backend shares: its configuration and the protocol a backend satisfies. Pure."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Callable, Mapping, Protocol

from pcgkit import resources
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import CellOutcome
from pcgkit.matrix.torchbuild import DEFAULT_CPU_INDEX


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
    # --torch-cpu-index: where a cell of torch build "cpu" gets its torch (uv --find-links); an install
    # source, not part of what the result answers for (the cell's definition carries the build itself).
    torch_cpu_index: str = DEFAULT_CPU_INDEX
    # The case ids each cell must account for (the catalog's default cases, handed down by the
    # command): a mode a cell's pytest never reported becomes an `error` row.
    expected_modes: tuple[str, ...] = ()
    # Variables every cell's case run gets, whatever the backend (the command decides: `matrix --preflight FILE`
    # hands the launch file to the preflight-launch case this way).
    case_env: tuple[tuple[str, str], ...] = ()
    # What a cell's result answers for beyond its definition (e.g. which launch file it preflighted): stamped in
    # its provenance, and a cached cell is reused only when these are equal.
    answers_for: tuple[tuple[str, str], ...] = ()
    # The same per narrowed scope (pcgkit.values.scopes): a sglang-level cell owes only its scope's cases.
    scope_modes: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)

    def modes_for(self, scope: str) -> tuple[str, ...]:
        """The case ids a cell of this scope must account for."""
        return tuple(self.scope_modes.get(scope, self.expected_modes))


# Told each stage a cell enters ("install", "image", "run"), for the progress rows and for naming
# where an interrupted cell stopped.
OnStage = Callable[[Cell, str], None]


class RunCell(Protocol):
    """Run one cell to an outcome: verdicts, or an error cell with the reason. Never raises for a bad cell.

    The runner (pcgkit.matrix.runner) always passes on_stage; a backend reports each stage it enters."""

    def __call__(self, cell: Cell, config: BackendConfig, on_stage: OnStage) -> CellOutcome: ...
