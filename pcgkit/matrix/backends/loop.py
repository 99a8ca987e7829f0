"""The cell loop, written once for every backend: prepare -> run the cases -> read what they left -> judge.

The run's files are read back from the cell folder (results.json, the import markers pcgkit.jobs.cellmain
prints into pytest.log, run-costs.json) and judged as an import failure, a run that yielded no verdict, or
verdicts: one CellOutcome with its cost breakdown, installed set, lock and provenance. Never raises for a
broken cell: a backend's StageFailed becomes an error cell at its stage.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

from pcgkit.jobs import cellmain
from pcgkit.jobs.run import RunFiles
from pcgkit.matrix import installed as installed_mod
from pcgkit.matrix.backends.base import (
    Backend,
    BackendConfig,
    CaseRequest,
    CasesRan,
    CellContext,
    Deadline,
    OnStage,
    StageFailed,
    Stages,
)
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.costs import breakdown
from pcgkit.matrix.outcome import (
    ERROR,
    LOG_TAIL_CHARS,
    RAN,
    STAGE_IMPORT,
    STAGE_RUN,
    CellOutcome,
    last_exception_line,
    yielded_verdicts,
)
from pcgkit.verdicts.result import CaseResult, read_results


def _no_stage(cell: Cell, stage: str) -> None:
    return None


def run_cell(backend: Backend, cell: Cell, config: BackendConfig, on_stage: OnStage = _no_stage) -> CellOutcome:
    """One cell through `backend`, to an outcome: verdicts, or an error cell with the stage and reason."""
    cell_dir = config.cells_root / cell.id
    cell_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    ctx = CellContext(cell, config, cell_dir, Deadline(cell.timeout_s or config.timeout_s), Stages())
    env = None
    ran: CasesRan | None = None
    read = _RunFiles()

    def outcome(status: str, stage: str | None = None, reason: str = "", tail: str = "",
                failed: StageFailed | None = None) -> CellOutcome:
        total = time.monotonic() - start
        results = read.results if status == RAN else ()
        known = failed if env is None else env  # before the environment existed, what the failure knew
        return CellOutcome(
            cell, status, total, stage, reason, tail[-LOG_TAIL_CHARS:], read.versions, results,
            provenance=(failed.provenance if failed is not None and failed.provenance else None) or
            (dict(known.provenance) if known is not None else {}),
            costs=breakdown(ctx.stages.seconds, read.costs, ran.wall_s if ran else None, results, total),
            installed=installed_mod.freeze(known.installed) if known is not None else {},
            lock=dict(known.lock) if known is not None else {},
        )

    on_stage(cell, backend.prepare_stage)
    try:
        with backend.prepared(ctx) as env:
            on_stage(cell, STAGE_RUN)
            ran = env.run_cases(case_request(ctx))
            with ctx.stages.timing("report"):
                read = read_run_files(cell_dir, env.result_evidence)
    except StageFailed as failed:
        return outcome(ERROR, failed.stage, failed.reason, failed.tail, failed)
    assert ran is not None  # the `with` body ran to its end
    if read.import_failed or (read.log_found and read.imported is None and not ran.ok):
        culprit = read.costs.get("import_error") or last_exception_line(read.log_text)
        return outcome(ERROR, STAGE_IMPORT, f"import failed ({ran.failure or 'exit status 0'})" + (f": {culprit}" if culprit else ""),
                       ran.tail)
    if not read.found_results:
        return outcome(ERROR, STAGE_RUN, f"no results.json: the case run ended with {ran.failure or 'exit status 0'}", ran.tail)
    if not yielded_verdicts(read.results, ran.ok):
        return outcome(ERROR, STAGE_RUN, f"the case run: {ran.failure}", ran.tail)
    return outcome(RAN)


def case_request(ctx: CellContext) -> CaseRequest:
    """The cell's cases, from the run's configuration and what is left of the deadline."""
    config = ctx.config
    left = ctx.deadline.left()
    return CaseRequest(
        reports_dir=ctx.cell_dir, timeout_s=left, case_timeout_s=min(config.case_timeout_s, left),
        select=config.select, require_hardware=config.require_hardware, env=config.case_env,
        expected_modes=config.modes_for(ctx.cell.scope), scope=ctx.cell.scope,
    )


@dataclasses.dataclass(frozen=True)
class _RunFiles:
    """What a case run left in the cell folder, read back."""

    found_results: bool = False
    results: tuple[CaseResult, ...] = ()
    versions: dict = dataclasses.field(default_factory=dict)
    costs: dict = dataclasses.field(default_factory=dict)
    log_found: bool = False
    log_text: str = ""
    imported: dict | None = None  # the versions cellmain printed once the stack imported
    import_failed: bool = False  # cellmain said the stack did not import


def read_run_files(reports_dir: Path, evidence: dict) -> _RunFiles:
    """results.json, pytest.log's import markers and run-costs.json of one run; `evidence` merged into each result."""
    names = RunFiles(reports_dir)
    found = names.results_path.is_file()
    environment, results = read_results(names.results_path) if found else ({}, [])
    if evidence:
        results = [dataclasses.replace(r, evidence={**r.evidence, **evidence}) for r in results]
    log_found = names.log_path.is_file()
    log_text = _read(names.log_path)
    imported_line = _marker(log_text, cellmain.IMPORTED)
    imported = _json_object(imported_line) if imported_line is not None else None
    versions = environment.get("versions") or imported or {}
    return _RunFiles(found, tuple(results), versions if isinstance(versions, dict) else {},
                     _json_object(_read(names.costs_path)), log_found, log_text,
                     imported, _marker(log_text, cellmain.IMPORT_FAILED) is not None)


def _marker(text: str, prefix: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclasses.dataclass(frozen=True)
class CellLoop:
    """A backend as the runner's RunCell: every cell through the one loop."""

    backend: Backend

    def __call__(self, cell: Cell, config: BackendConfig, on_stage: OnStage = _no_stage) -> CellOutcome:
        return run_cell(self.backend, cell, config, on_stage)

    def check_machine(self, cells) -> None:
        self.backend.check_machine(cells)
