"""The exit-code contract (pcgkit.errors.ExitCode, its meanings in lab/exit_codes.py): one table, distinct codes, pinned per situation."""

from __future__ import annotations

import signal

from lab.exit_codes import EXIT_CODES
from pcgkit.commands.report import matrix_status
from pcgkit.errors import (
    EnvironmentSetupError,
    ExitCode,
    Interrupted,
    OutputPathError,
    RunAbortedError,
    UnwritableOutputError,
    UsageError,
    status_for_results,
    worst,
)
from pcgkit.values.verdict import Verdict

from .helpers import ran_cell, result


def test_the_table_documents_every_code_once_with_the_documented_numbers():
    """Each ExitCode appears once in EXIT_CODES with a description; the numbers are the contract."""
    assert [doc.code for doc in EXIT_CODES] == list(ExitCode)
    assert all(doc.meaning and doc.name for doc in EXIT_CODES)
    assert {c.name: int(c) for c in ExitCode} == {
        "SUCCESS": 0, "CHANGED": 1, "USAGE": 2, "ERROR_CELLS": 3, "ENVIRONMENT": 4,
        "PREFLIGHT_WILL_CRASH": 10, "PREFLIGHT_UNKNOWN": 11, "HANGUP": 129, "INTERRUPTED": 130, "QUIT": 131,
        "TERMINATED": 143,
    }


def test_each_error_class_maps_onto_its_row():
    """Usage and wrong-kind paths are 2, broken environments and unwritable outputs 4, aborted runs 3."""
    assert UsageError.exit_code == OutputPathError.exit_code == ExitCode.USAGE
    assert EnvironmentSetupError.exit_code == UnwritableOutputError.exit_code == ExitCode.ENVIRONMENT
    assert RunAbortedError.exit_code == ExitCode.ERROR_CELLS
    assert Interrupted(signal.SIGINT).exit_code == 130 and Interrupted(signal.SIGTERM).exit_code == 143
    assert Interrupted(signal.SIGHUP).exit_code == 129 and Interrupted(signal.SIGQUIT).exit_code == 131


def test_results_status_errors_then_changes_then_success():
    """An error row outranks a change; a change (or an unbaselined drift) outranks success; skips count for nothing."""
    known = result()
    changed = result(verdict=Verdict.FIXED, expected="reproduced")
    drift = result(verdict=Verdict.DRIFTED, expected=None)
    error = result(verdict=Verdict.ERROR, expected="reproduced")
    skipped = result(verdict=Verdict.SKIPPED, expected="reproduced")
    assert status_for_results([known, skipped]) is ExitCode.SUCCESS
    assert status_for_results([known, changed]) is ExitCode.CHANGED
    assert status_for_results([drift]) is ExitCode.CHANGED
    assert status_for_results([changed, error]) is ExitCode.ERROR_CELLS


def test_matrix_status_and_severity_order():
    """A matrix with an error cell is 3 even when another cell changed; interrupted outranks everything."""
    from dataclasses import replace

    ok = ran_cell("a")
    changed = ran_cell("b", verdict=Verdict.FIXED, expected="reproduced")
    error = replace(ok, status="error", results=())
    assert matrix_status([ok]) is ExitCode.SUCCESS
    assert matrix_status([ok, changed]) is ExitCode.CHANGED
    assert matrix_status([changed, error]) is ExitCode.ERROR_CELLS
    assert worst(ExitCode.CHANGED, ExitCode.TERMINATED, ExitCode.USAGE) is ExitCode.TERMINATED


def test_no_uv_on_path_is_an_environment_error_not_the_pins_fault(tmp_path, monkeypatch, capsys):
    """`pcgkit matrix` of a venv cell with no uv anywhere: exit 4 with one line that says to install uv."""
    from pcgkit.util import proc

    from .helpers import assert_one_line_error, run_main

    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no uv
    monkeypatch.setattr(proc, "_uv_module_available", lambda: False)
    matrix = tmp_path / "matrix.toml"
    matrix.write_text('schema = "pcgkit.matrix/1"\n[[cell]]\nid = "x"\nflashinfer-python = "0.6.1"\ntorch = "2.9.1"\n')
    status, out, err = run_main(["matrix", "--matrix", str(matrix), "--reports", str(tmp_path / "r"),
                                 "--envs", str(tmp_path / "envs")], capsys)
    assert status == 4, err
    line = assert_one_line_error(err)
    assert "uv not found" in line and "install uv" in line
