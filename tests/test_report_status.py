"""`pcgkit report`'s exit status and `--not-run`: the same cells give the same status from the cells on disk and
from their compat.json; a planned cell whose job delivered nothing is shown `not run` with its reason and does
not turn the status red."""

from __future__ import annotations

from pathlib import Path

from pcgkit.commands.report import report
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import ERROR, RAN, CellOutcome, write_outcome
from pcgkit.matrix.runner import CELL_FILE
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.modes import MODES
from pcgkit.verdicts.result import CaseResult


def write_cells(reports: Path) -> None:
    results = tuple(CaseResult(m, "sim-sm120", Verdict.REPRODUCED, "r", {"label": "sim", "simulated": True},
                               {"flashinfer-python": "0.6.1"}, 1.0) for m in MODES)
    # fixtures/expectations.toml records flashinfer 0.4.1's apache-tvm-ffi pin as uninstallable
    tvm = CellOutcome(Cell("tvm", flashinfer="0.4.1", torch="2.8.0"), ERROR, 1.0, "install",
                      "flashinfer-python==0.4.1 depends on apache-tvm-ffi==0.1.0b15, which the index does not have")
    for outcome in (CellOutcome(Cell("seed", flashinfer="0.6.1", torch="2.9.1"), RAN, 5.0, results=results), tvm):
        write_outcome(reports / "matrix" / "cells" / outcome.cell.id / CELL_FILE, outcome)


def test_same_cells_same_status_from_cells_and_from_compat_json(tmp_path):
    """An expected-uninstallable error cell is not an error either way: both entry points exit alike."""
    write_cells(tmp_path / "a")
    from_cells = report(tmp_path / "a")
    from_compat = report(tmp_path / "b", compat=tmp_path / "a" / "compat.json")
    assert from_cells == from_compat


def test_not_run_cells_are_listed_with_their_reason_and_do_not_fail_the_report(tmp_path):
    """--not-run ID=REASON adds a row with stage 'not run' and the reason; the status stays the cells' own."""
    write_cells(tmp_path)
    plain = report(tmp_path)
    status = report(tmp_path, not_run=[("seed@sm120", "job on runner [self-hosted,sm120] delivered no result (job queued)")])
    text = (tmp_path / "compat.md").read_text()
    assert status == plain and "`seed@sm120` (not run): job on runner [self-hosted,sm120] delivered no result (job queued)" in text
