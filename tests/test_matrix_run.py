"""A real, small matrix run: one real cell (this interpreter, the reference stack) and broken cells
made to fail in each way a cell can (unknown version, missing import, hang, crash). Runs in about a
minute: the real cell is the four trace-level cases once; the broken ones fail in seconds."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from pcgkit.matrix import cli
from pcgkit.matrix.junit_merge import validate
from pcgkit.matrix.outcome import read_outcome

FAKE_VERSIONS = '{"flashinfer-python": "0.6.1", "torch": "2.9.1", "python": "3.12.1", "sglang": null}'


def fake_python(path: Path, run_body: str) -> str:
    """A stand-in interpreter: answers the import check, then misbehaves when asked to run pytest."""
    path.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        if [ "$1" = "-c" ]; then echo 'PCGKIT-VERSIONS {FAKE_VERSIONS}'; exit 0; fi
        echo "fake interpreter running: $*"
        {run_body}
        """))
    path.chmod(0o755)
    return str(path)


def namespace(tmp: Path, **over) -> argparse.Namespace:
    args = {
        "matrix": str(tmp / "matrix.toml"), "pins": str(cli.pins_mod.DEFAULT_PINS_FILE), "reports": str(tmp / "reports"),
        "envs": str(tmp / "envs"), "timeout": 600.0, "force": False, "cell": None, "jobs": 2, "list": False,
        "refresh_pins": False, "tox": False,
    }
    args.update(over)
    return argparse.Namespace(**args)


@pytest.fixture(scope="module")
def matrix_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("matrix")
    hang = fake_python(tmp / "hang.sh", "sleep 300")
    crash = fake_python(tmp / "crash.sh", "kill -SEGV $$")
    no_import = tmp / "noimport.sh"
    no_import.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'flashinfer'\" >&2\nexit 1\n")
    no_import.chmod(0o755)
    (tmp / "matrix.toml").write_text(textwrap.dedent(f"""\
        schema = "pcgkit.matrix/1"
        [[cell]]
        id = "here"
        kind = "existing"
        interpreter = "{sys.executable}"
        [[cell]]
        id = "unknown-version"
        flashinfer-python = "0.0.0"
        torch = "2.9.1"
        [[cell]]
        id = "no-import"
        kind = "existing"
        interpreter = "{no_import}"
        [[cell]]
        id = "hang"
        kind = "existing"
        interpreter = "{hang}"
        timeout-s = 8
        [[cell]]
        id = "crash"
        kind = "existing"
        interpreter = "{crash}"
        """))
    status = cli._cmd_matrix(namespace(tmp))
    compat = json.loads((tmp / "reports" / "compat.json").read_text())
    return tmp, status, {c["id"]: c for c in compat["cells"]}


def test_real_cell_gives_verdicts_with_evidence(matrix_run):
    """The reference interpreter's cell ran all four modes on the simulated target, with signatures."""
    _, _, cells = matrix_run
    here = cells["here"]
    assert here["status"] == "ran", here["reason"] + here["log_tail"]
    assert set(here["modes"]) == {"mode1", "mode2", "mode3", "mode4"}
    assert all(e["verdict"] != "error" for e in here["modes"].values()), here["modes"]
    assert here["simulated"] and here["versions"]["torch"]


def test_unknown_version_is_an_install_error_cell_with_log_tail(matrix_run):
    """flashinfer-python==0.0.0 fails to install: an error cell naming the cause, never a bug verdict."""
    _, _, cells = matrix_run
    cell = cells["unknown-version"]
    assert (cell["status"], cell["stage"]) == ("error", "install")
    assert cell["reason"].startswith("unknown version"), cell["reason"]
    assert "0.0.0" in cell["log_tail"]
    assert {e["verdict"] for e in cell["modes"].values()} == {"error"}


def test_failed_import_is_an_import_error_cell(matrix_run):
    """An interpreter that cannot import the stack is an error at the import stage, with its output."""
    _, _, cells = matrix_run
    cell = cells["no-import"]
    assert (cell["status"], cell["stage"]) == ("error", "import")
    assert "No module named 'flashinfer'" in cell["log_tail"]


def test_hanging_cell_is_killed_at_its_timeout(matrix_run):
    """A cell whose run hangs is killed when its own timeout passes, and says so."""
    _, _, cells = matrix_run
    cell = cells["hang"]
    assert (cell["status"], cell["stage"]) == ("error", "run")
    assert "timed out" in cell["reason"]
    assert cell["duration_s"] < 60


def test_crashed_interpreter_is_an_error_cell(matrix_run):
    """An interpreter killed by SIGSEGV is an error cell naming the signal."""
    _, _, cells = matrix_run
    cell = cells["crash"]
    assert (cell["status"], cell["stage"]) == ("error", "run")
    assert "SIGSEGV" in cell["reason"]


def test_broken_cells_do_not_lose_the_report(matrix_run):
    """The run exits non-zero, yet compat.md, index.html and a valid merged JUnit are all written."""
    tmp, status, cells = matrix_run
    reports = tmp / "reports"
    assert status == 1 and len(cells) == 5
    assert validate(reports / "matrix-junit.xml") == []
    assert "`here`" in (reports / "compat.md").read_text()
    assert (reports / "index.html").exists()


def test_rerun_reuses_the_cell_that_ran_unless_forced(matrix_run):
    """A second run keeps the real cell's result (same definition hash) and retries only error cells."""
    tmp, _, _ = matrix_run
    cell_json = tmp / "reports" / "matrix" / "cells" / "here" / "cell.json"
    before = read_outcome(cell_json).finished
    os.utime(cell_json)  # the result stays; only its contents count
    cli._cmd_matrix(namespace(tmp, cell=["here", "crash"]))
    assert read_outcome(cell_json).finished == before
