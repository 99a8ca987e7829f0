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


def test_badge_and_exit_code_agree_on_error_entries_and_cannot_run_cells(tmp_path):
    """A cell that ran with an error entry counts as an error on the badge and in the exit code; a cannot-run
    cell counts apart and leaves the exit code 0."""
    write_cells(tmp_path / "a")
    assert report(tmp_path / "a") == 0
    page = (tmp_path / "a" / "index.html").read_text()
    assert 'id="count-error"' in page and '>0 error<' in page and 'id="count-expected">1 cannot-run<' in page
    broken = tuple(CaseResult(m, "sim-sm120", Verdict.ERROR if m == "mode1" else Verdict.REPRODUCED, "import failed",
                              {"label": "sim", "simulated": True}, {}, 1.0) for m in MODES)
    write_outcome(tmp_path / "a" / "matrix" / "cells" / "half" / CELL_FILE,
                  CellOutcome(Cell("half", flashinfer="0.5.3", torch="2.9.1"), RAN, 5.0, results=broken))
    assert report(tmp_path / "a") == 3
    assert '>1 error<' in (tmp_path / "a" / "index.html").read_text()
    assert "(error entries): mode1: import failed" in (tmp_path / "a" / "compat.md").read_text()


def test_over_puts_rerun_cells_in_place_of_a_compat_json_and_keeps_the_others(tmp_path):
    """`report --over`: a re-run cell replaces the same cell of the compat.json; the others stay as measured."""
    import json

    write_cells(tmp_path / "a")
    report(tmp_path / "a")
    fixed = tuple(CaseResult(m, "sim-sm120", Verdict.FIXED, "traced", {"label": "sim", "simulated": True},
                             {"flashinfer-python": "0.4.1"}, 1.0) for m in MODES)
    write_outcome(tmp_path / "b" / "matrix" / "cells" / "tvm" / CELL_FILE,
                  CellOutcome(Cell("tvm", flashinfer="0.4.1", torch="2.8.0"), RAN, 3.0, results=fixed))
    status = report(tmp_path / "b", over=tmp_path / "a" / "compat.json")
    cells = {c["id"]: c for c in json.loads((tmp_path / "b" / "compat.json").read_text())["cells"]}
    assert set(cells) == {"seed", "tvm"} and cells["tvm"]["status"] == "ran"
    assert cells["seed"]["modes"]["mode1"]["verdict"] == "reproduced"
    assert status == 1  # the re-run cell installed although recorded cannot-run: a change (CHANGED)
