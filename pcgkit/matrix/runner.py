"""Run planned cells in parallel (up to the machine's cores) with a progress display and resume.

Resume: a cell whose cell.json says it ran, for the same definition hash, is reused unless forced; error
cells are always retried (a network blip should not stick). Each outcome is written as soon as its cell
finishes, so one broken cell never loses the others.

Stopping (pcgkit.util.signals): on the first Ctrl-C or SIGTERM every child group is killed, no new cell
starts, each unfinished cell is written as an error cell (stage "interrupted", with the stage it was in),
and Interrupted propagates so that the caller writes the report and exits 130/143.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime as _dt
import json
import os
import signal
import threading
import traceback
from collections.abc import Sequence

from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from pcgkit.errors import Interrupted
from pcgkit.matrix import backends
from pcgkit.matrix.backends.base import BackendConfig, RunCell
from pcgkit.matrix.cells import EXISTING, Cell
from pcgkit.matrix.outcome import (
    ERROR,
    INTERPRETER_MISSING,
    RAN,
    STAGE_INSTALL,
    STAGE_INTERRUPTED,
    STAGE_RUN,
    CellOutcome,
    read_outcome,
    with_where,
    write_outcome,
)
from pcgkit.matrix.uninstallable import (
    Uninstallable,
    cannot_run_outcome,
    expected_failure,
    load_uninstallable,
    planned_cannot_run,
)
from pcgkit.matrix.where import capture as capture_where
from pcgkit.util import signals
from pcgkit.util.progress import activity
from pcgkit.values.verdict import CANNOT_RUN

CELL_FILE = "cell.json"
# After a stop signal: how long finished-but-unreported workers get to hand in their outcome.
STOP_GRACE_S = 10.0


def _stored_definition_hash(path) -> str | None:
    """The hash the writer computed from the real pins (the stored cell's companions are redacted)."""
    try:
        return json.loads(path.read_text())["cell"]["definition_hash"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def selection_of(config: BackendConfig) -> dict:
    """What a cell's result answers for beyond its definition (-m, --require-hardware), stored in its cell.json. Pure."""
    return {"select": config.select or "", "require_hardware": sorted(config.require_hardware)}


def cached_outcome(cell: Cell, config: BackendConfig) -> CellOutcome | None:
    """A previous outcome this cell may reuse: same definition hash, same backend, same selection and
    hardware requirement (a CI job that changed -m must not get yesterday's table), and it ran."""
    path = config.cells_root / cell.id / CELL_FILE
    outcome = read_outcome(path, from_cache=True)
    if outcome is None or outcome.status != RAN or _stored_definition_hash(path) != cell.definition_hash:
        return None
    stored = outcome.provenance
    selection = {"select": stored.get("select", ""), "require_hardware": sorted(stored.get("require_hardware") or ())}
    if stored.get("backend", "venv") != config.backend or selection != selection_of(config):
        return None
    if any(stored.get(key) != value for key, value in config.answers_for):
        return None  # e.g. cached without this --preflight launch: it would show yesterday's table
    # Keep this plan's labels (they may change with the pins cache) on the cached result.
    return CellOutcome(**{**outcome.__dict__, "cell": cell})


def default_jobs() -> int:
    return max(1, os.cpu_count() or 1)


def _guarded(run: RunCell, cell: Cell, config: BackendConfig, on_stage) -> CellOutcome:
    signals.raise_if_stopping()  # a queued cell never starts after a stop signal
    if cell.kind == EXISTING and cell.interpreter and not os.path.exists(cell.interpreter):
        return CellOutcome(cell, ERROR, 0.0, STAGE_INSTALL, f"{INTERPRETER_MISSING}: {cell.interpreter} does not exist")
    try:
        return run(cell, config, on_stage)
    except Exception as exc:  # noqa: BLE001 - a kit bug in one cell must not lose the others' results
        where = traceback.extract_tb(exc.__traceback__)[-1]
        reason = f"pcgkit crashed running this cell: {type(exc).__name__}: {exc} ({where.filename}:{where.lineno})"
        return CellOutcome(cell, ERROR, 0.0, STAGE_RUN, reason, traceback.format_exc()[-2000:])


def interrupted_outcome(cell: Cell, signum: int, stage: str | None) -> CellOutcome:
    """The row an unfinished cell gets when the run is stopped: an error, retried on the next run."""
    during = f" during {stage}" if stage else " before it started"
    return CellOutcome(cell, ERROR, 0.0, STAGE_INTERRUPTED, f"interrupted ({signal.Signals(signum).name}){during}")


def run_matrix(
    cells: Sequence[Cell],
    config: BackendConfig,
    jobs: int | None = None,
    force: bool = False,
    run: RunCell | None = None,
    show_progress: bool = True,
    expected: tuple[Uninstallable, ...] | None = None,
    today: _dt.date | None = None,
    retry_cannot_run: bool = False,
) -> list[CellOutcome]:
    """Every cell's outcome, in plan order; each cell.json written as soon as it is known. A cell the
    cannot-run rules `expected` cover (None: the default expectations file) is not run between retry days
    (pcgkit.matrix.uninstallable) unless retry_cannot_run; `today` is the planning date (default: UTC's)."""
    rules = load_uninstallable() if expected is None else expected
    run = run if run is not None else backends.runner(backends.DEFAULT, None)  # the registry's default backend
    today = today or _dt.datetime.now(_dt.timezone.utc).date()
    planned = planned_cannot_run(cells, rules, today, retry_cannot_run)
    with signals.stop_policy():  # already installed by cli.main; here for direct callers (tests, bisect)
        return _run_matrix(cells, config, jobs, force, run, show_progress, rules, planned, today)


def _run_matrix(cells, config, jobs, force, run, show_progress, rules, planned, today) -> list[CellOutcome]:
    outcomes: dict[str, CellOutcome] = {}
    todo = []
    for cell in cells:
        if cell.id in planned:  # a measured cannot-run cell, not a retry day: nothing to install
            outcomes[cell.id] = cannot_run_outcome(cell, planned[cell.id], today)
            write_outcome(config.cells_root / cell.id / CELL_FILE, outcomes[cell.id])
        elif (cached := None if force else cached_outcome(cell, config)) is not None:
            outcomes[cell.id] = cached
        else:
            todo.append(cell)
    check_machine = getattr(run, "check_machine", None)  # a backend's RunCell (loop.CellLoop) has it
    if check_machine is not None and todo:
        check_machine(todo)  # e.g. no uv: one environment error (exit 4) now, not an error per cell

    with Progress(
        SpinnerColumn(), TextColumn("{task.fields[cell]:<22}"), TextColumn("{task.description}"),
        TimeElapsedColumn(), disable=not show_progress, transient=False,
    ) as progress:
        # the overall row first: with dozens of cells the per-cell rows scroll, this one stays on top
        overall = progress.add_task("", cell="all cells", total=len(cells))
        tally = Tally(len(cells))

        def count(outcome: CellOutcome) -> None:
            tally.add(outcome, expected_failure(outcome, rules) is not None)
            progress.update(overall, description=tally.describe(), completed=tally.done)

        tasks = {c.id: progress.add_task("queued", cell=c.id, total=None) for c in todo}
        for cell_id, outcome in outcomes.items():
            prefix = "" if cell_id in planned else "cached: "
            progress.add_task(prefix + _summary(outcome, rules), cell=cell_id, total=1, completed=1)
            count(outcome)

        stages: dict[str, str] = {}
        stages_lock = threading.Lock()

        def on_stage(cell: Cell, stage: str) -> None:
            with stages_lock:
                stages[cell.id] = stage
            progress.update(tasks[cell.id], description=stage)

        def finish(outcome: CellOutcome) -> None:
            # every fresh cell.json says which machine made it (pcgkit report --from merges many)
            outcome = with_where(outcome, capture_where(config.backend, outcome.provenance))
            stamp = {**selection_of(config), **dict(config.answers_for)}
            outcome = dataclasses.replace(outcome, provenance={**outcome.provenance, **stamp})
            write_outcome(config.cells_root / outcome.cell.id / CELL_FILE, outcome)
            outcomes[outcome.cell.id] = outcome
            progress.update(tasks[outcome.cell.id], description=_summary(outcome, rules), total=1, completed=1)
            count(outcome)  # finish runs on the main thread only: no lock

        # Not a `with` block: its exit waits for every worker, which a stop must not do blindly.
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs or default_jobs())
        futures = {pool.submit(_guarded, run, cell, config, on_stage): cell for cell in todo}

        def heartbeat() -> str:  # CI logs get no live display: one line per period instead
            with stages_lock:
                running = ", ".join(f"{c} ({s})" for c, s in stages.items() if c not in outcomes)
            return f"matrix: {Text.from_markup(tally.describe()).plain}" + (f"; running {running}" if running else "")

        try:
            with activity(heartbeat, stream=progress.console.file,
                          interval_s=None if show_progress and not progress.console.is_terminal else 0, live=False):
                for future in concurrent.futures.as_completed(futures):
                    finish(future.result())
        except (Interrupted, KeyboardInterrupt) as exc:
            signum = exc.signum if isinstance(exc, Interrupted) else signal.SIGINT
            _stop(pool, futures, outcomes, stages, signum, finish)
            raise Interrupted(signum) from None
        pool.shutdown(wait=True)
    return [outcomes[c.id] for c in cells if c.id in outcomes]


def _stop(pool, futures, outcomes, stages, signum: int, finish) -> None:
    """Kill every child group, keep what finished, write the rest as interrupted error cells."""
    signals.request_stop(signum)  # kills every group; workers' next proc.run raises Interrupted
    pool.shutdown(wait=False, cancel_futures=True)
    running = [f for f in futures if not f.done()]
    concurrent.futures.wait(running, timeout=STOP_GRACE_S)
    for future, cell in futures.items():
        if cell.id in outcomes:
            continue
        outcome = None
        if future.done() and not future.cancelled() and future.exception() is None:
            outcome = future.result()  # finished while we were stopping: a real result, keep it
        finish(outcome or interrupted_outcome(cell, signum, stages.get(cell.id)))


@dataclasses.dataclass
class Tally:
    """The overall row's counts: 'N of M cells' and how the finished ones ended. Pure."""

    total: int
    done: int = 0
    errors: int = 0
    expected: int = 0

    def add(self, outcome: CellOutcome, expected_uninstallable: bool) -> None:
        self.done += 1
        if expected_uninstallable:
            self.expected += 1
        elif outcome.is_error:
            self.errors += 1

    def describe(self) -> str:
        parts = [f"{self.done} of {self.total} cells"]
        if self.errors:
            parts.append(f"[red]{self.errors} error{'s' if self.errors > 1 else ''}[/red]")
        if self.expected:
            parts.append(f"{self.expected} {CANNOT_RUN}")
        return ", ".join(parts)


def _summary(outcome: CellOutcome, rules: tuple[Uninstallable, ...] = ()) -> str:
    rule = expected_failure(outcome, rules)
    if rule is not None:
        # a measured cannot-run cell: not an error (matrix_status agrees), say why
        return f"[magenta]{CANNOT_RUN}[/magenta] ({escape(rule.why[:70])}; last tried {rule.tried.isoformat()})"
    if outcome.is_error:
        return f"[red]error[/red] ({outcome.stage}): {escape(outcome.reason[:70])}"
    verdicts = sorted({r.verdict.value for r in outcome.results if r.verdict.ran})
    return f"done in {outcome.duration_s:.0f} s: " + ", ".join(verdicts)
