"""Run planned cells in parallel (up to the machine's cores) with a progress display and resume.

Resume: a cell whose cell.json says it ran, for the same definition hash, is reused unless forced.
Error cells are always retried (an install that failed on a network blip should not stick).
One broken cell never loses the others: each outcome is written as soon as its cell finishes.
"""

from __future__ import annotations

import concurrent.futures
import os
import traceback
from collections.abc import Callable, Sequence

from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from pcgkit.matrix.backends.base import BackendConfig
from pcgkit.matrix.backends.venv import run_cell
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import ERROR, RAN, STAGE_RUN, CellOutcome, read_outcome, with_where, write_outcome
from pcgkit.matrix.where import capture as capture_where

CELL_FILE = "cell.json"

RunCell = Callable[[Cell, BackendConfig, Callable[[Cell, str], None]], CellOutcome]


def cached_outcome(cell: Cell, config: BackendConfig) -> CellOutcome | None:
    """A previous outcome this cell may reuse: same definition hash, and it ran."""
    outcome = read_outcome(config.cells_root / cell.id / CELL_FILE, from_cache=True)
    if outcome is None or outcome.status != RAN or outcome.cell.definition_hash != cell.definition_hash:
        return None
    if outcome.provenance.get("backend", "venv") != config.backend:
        return None
    # Keep this plan's labels (they may change with the pins cache) on the cached result.
    return CellOutcome(**{**outcome.__dict__, "cell": cell})


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)


def _guarded(run: RunCell, cell: Cell, config: BackendConfig, on_stage) -> CellOutcome:
    try:
        return run(cell, config, on_stage)
    except Exception:  # noqa: BLE001 - a kit bug in one cell must not lose the others' results
        return CellOutcome(cell, ERROR, 0.0, STAGE_RUN, "pcgkit crashed running this cell", traceback.format_exc()[-2000:])


def run_matrix(
    cells: Sequence[Cell],
    config: BackendConfig,
    jobs: int | None = None,
    force: bool = False,
    run: RunCell = run_cell,
    show_progress: bool = True,
) -> list[CellOutcome]:
    """Every cell's outcome, in plan order; each cell.json written as soon as it is known."""
    outcomes: dict[str, CellOutcome] = {}
    todo = []
    for cell in cells:
        cached = None if force else cached_outcome(cell, config)
        if cached is not None:
            outcomes[cell.id] = cached
        else:
            todo.append(cell)

    with Progress(
        SpinnerColumn(), TextColumn("{task.fields[cell]:<22}"), TextColumn("{task.description}"),
        TimeElapsedColumn(), disable=not show_progress, transient=False,
    ) as progress:
        tasks = {c.id: progress.add_task("queued", cell=c.id, total=None) for c in todo}
        for cell_id, outcome in outcomes.items():
            progress.add_task("cached: " + _summary(outcome), cell=cell_id, total=1, completed=1)

        def on_stage(cell: Cell, stage: str) -> None:
            progress.update(tasks[cell.id], description=stage)

        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs or default_jobs()) as pool:
            futures = {pool.submit(_guarded, run, cell, config, on_stage): cell for cell in todo}
            try:
                for future in concurrent.futures.as_completed(futures):
                    outcome = future.result()
                    # every fresh cell.json says which machine made it (pcgkit report --from merges many)
                    outcome = with_where(outcome, capture_where(config.backend, outcome.provenance))
                    write_outcome(config.cells_root / outcome.cell.id / CELL_FILE, outcome)
                    outcomes[outcome.cell.id] = outcome
                    progress.update(tasks[outcome.cell.id], description=_summary(outcome), total=1, completed=1)
            except KeyboardInterrupt:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    return [outcomes[c.id] for c in cells if c.id in outcomes]


def _summary(outcome: CellOutcome) -> str:
    if outcome.is_error:
        return f"[red]error[/red] ({outcome.stage}): {escape(outcome.reason[:70])}"
    verdicts = sorted({r.verdict.value for r in outcome.results if r.verdict.ran})
    return f"done in {outcome.duration_s:.0f} s: " + ", ".join(verdicts)
