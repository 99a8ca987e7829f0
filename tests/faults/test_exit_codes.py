"""The exit-code contract (pcgkit.errors.EXIT_CODES): one table, distinct codes, pinned per situation."""

from __future__ import annotations

import signal

from pcgkit.commands.report import matrix_status
from pcgkit.errors import (
    EXIT_CODES,
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
        "PREFLIGHT_WILL_CRASH": 10, "PREFLIGHT_UNKNOWN": 11, "INTERRUPTED": 130, "TERMINATED": 143,
    }


def test_each_error_class_maps_onto_its_row():
    """Usage and wrong-kind paths are 2, broken environments and unwritable outputs 4, aborted runs 3."""
    assert UsageError.exit_code == OutputPathError.exit_code == ExitCode.USAGE
    assert EnvironmentSetupError.exit_code == UnwritableOutputError.exit_code == ExitCode.ENVIRONMENT
    assert RunAbortedError.exit_code == ExitCode.ERROR_CELLS
    assert Interrupted(signal.SIGINT).exit_code == 130 and Interrupted(signal.SIGTERM).exit_code == 143


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
