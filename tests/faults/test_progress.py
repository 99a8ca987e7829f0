"""The matrix progress display: an overall "N of M cells" row, and cannot-run cells
shown as expected with the baseline's reason instead of as install errors."""

from __future__ import annotations

import io
import json

import rich.console
import rich.progress

from pcgkit.matrix.backends.base import BackendConfig
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import ERROR, STAGE_INSTALL, CellOutcome
from pcgkit.matrix.runner import Tally, _summary, run_matrix
from pcgkit.matrix.uninstallable import Uninstallable, expected_failure

from .helpers import ran_cell

RULE = Uninstallable((("flashinfer-python", "<=0.4.1"),), "apache-tvm-ffi==0.1.0b15", "a pre-release the index dropped", "")
OLD = Cell("fi-0.4.0", flashinfer="0.4.0", torch="2.8.0")
NEW = Cell("fi-0.6.1", flashinfer="0.6.1", torch="2.9.1")


def _install_error(cell: Cell, text: str) -> CellOutcome:
    return CellOutcome(cell, ERROR, 1.0, STAGE_INSTALL, f"unsatisfiable: {text}", text)


def test_cannot_run_row_names_the_reason_not_an_error():
    """A failure the baseline explains reads 'cannot-run (<why>; last tried ...)'; an unexplained one stays an error."""
    expected = _summary(_install_error(OLD, "no apache-tvm-ffi==0.1.0b15"), (RULE,))
    assert expected.startswith("[magenta]cannot-run[/magenta]") and "(a pre-release the index dropped; last tried" in expected
    other = _summary(_install_error(NEW, "no apache-tvm-ffi==0.1.0b15"), (RULE,))  # the rule does not cover 0.6.1
    assert "error" in other and "cannot-run" not in other


def test_tally_counts_cells_errors_and_expected_failures_apart():
    """The overall row says how many of all cells finished, how many failed and how many failed as expected."""
    tally = Tally(4)
    assert tally.describe() == "0 of 4 cells"
    tally.add(ran_cell("a"), False)
    tally.add(_install_error(OLD, "x"), True)
    tally.add(_install_error(NEW, "y"), False)
    assert tally.describe() == "3 of 4 cells, [red]1 error[/red], 1 cannot-run"


def test_run_matrix_shows_the_overall_row_and_the_expected_cell(monkeypatch, tmp_path):
    """A real run_matrix display (rendered to a string) has 'all cells 3 of 3 cells' and the expected row."""
    buffer = io.StringIO()
    console = rich.console.Console(file=buffer, width=200, force_terminal=False)
    real_progress = rich.progress.Progress
    monkeypatch.setattr("pcgkit.matrix.runner.Progress", lambda *a, **k: real_progress(*a, console=console, **k))
    outcomes = {OLD.id: _install_error(OLD, "apache-tvm-ffi==0.1.0b15 not found"), NEW.id: ran_cell(NEW.id)}
    third = Cell("fi-0.5.0", flashinfer="0.5.0", torch="2.8.0")
    outcomes[third.id] = _install_error(third, "uv exit status 2")

    def run(cell, config, on_stage):
        return CellOutcome(**{**outcomes[cell.id].__dict__, "cell": cell})

    config = BackendConfig(cells_root=tmp_path / "cells", envs_root=tmp_path / "envs")
    run_matrix([OLD, NEW, third], config, jobs=1, run=run, expected=(RULE,), retry_cannot_run=True)
    shown = buffer.getvalue()
    assert "all cells" in shown and "3 of 3 cells, 1 error, 1 cannot-run" in shown, shown
    old_row = next(line for line in shown.splitlines() if OLD.id in line)
    assert "cannot-run (a pre-release the index dropped" in old_row and "error" not in old_row, shown
    assert "error (install)" in next(line for line in shown.splitlines() if third.id in line)


def test_planned_cannot_run_cell_is_not_run_between_retries_and_runs_on_a_retry_day(tmp_path):
    """Between retry days a covered cell is written as cannot-run without running; on a retry day it runs."""
    import datetime as dt

    rule = Uninstallable((("flashinfer-python", "<=0.4.1"),), "apache-tvm-ffi==0.1.0b15", "a pre-release the index dropped",
                         "", dt.date(2026, 12, 5), 7)
    calls = []

    def run(cell, config, on_stage):
        calls.append(cell.id)
        return _install_error(cell, "apache-tvm-ffi==0.1.0b15 not found") if cell.id == OLD.id else ran_cell(cell.id)

    config = BackendConfig(cells_root=tmp_path / "cells", envs_root=tmp_path / "envs")
    between = run_matrix([OLD, NEW], config, jobs=1, run=run, expected=(rule,), show_progress=False,
                         today=dt.date(2026, 12, 8))
    assert calls == [NEW.id] and between[0].stage == "cannot run"
    assert "last tried 2026-12-05; next retry 2026-12-12" in between[0].reason
    assert json.loads((tmp_path / "cells" / OLD.id / "cell.json").read_text())["stage"] == "cannot run"
    calls.clear()
    retry = run_matrix([OLD, NEW], config, jobs=1, run=run, expected=(rule,), show_progress=False,
                       today=dt.date(2026, 12, 12))
    assert OLD.id in calls and retry[0].stage == STAGE_INSTALL
    assert expected_failure(between[0], (rule,)) is rule and expected_failure(retry[0], (rule,)) is rule
