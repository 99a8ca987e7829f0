"""A real, small matrix run: two real cells (this interpreter, the reference stack; and a uv venv cell
with the seed's pins, installed from uv's cache and kept in .pcgkit/test-envs so later runs reuse it)
and broken cells made to fail in each way a cell can (unknown version, missing import, hang, crash).
The real cells run every case once; the broken ones fail in seconds."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from pcgkit.catalog import all_modes
from pcgkit.commands import matrix as cli
from pcgkit.errors import ExitCode
from pcgkit.matrix.outcome import read_outcome
from pcgkit.report.junit_merge import validate

pytestmark = pytest.mark.slow  # real cells (a uv-synced seed env, the four cases in each): minutes

# Where the venv cell's environment lives between test runs: the install (hard links from uv's
# cache) happens once; resume's stamp check reuses it after that.
TEST_ENVS = Path(__file__).resolve().parent.parent / ".pcgkit" / "test-envs"
FAKE_VERSIONS = '{"flashinfer-python": "0.6.1", "torch": "2.9.1", "python": "3.12.1", "sglang": null}'


def fake_python(path: Path, run_body: str) -> str:
    """A stand-in interpreter: imports the stack as cellmain would (its marker line), then misbehaves in pytest."""
    path.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        if [ "$1" = "-c" ]; then echo '{FAKE_VERSIONS}'; exit 0; fi
        echo 'PCGKIT-IMPORTED {FAKE_VERSIONS}'
        echo "fake interpreter running: $*"
        {run_body}
        """))
    path.chmod(0o755)
    return str(path)


def namespace(tmp: Path, **over) -> argparse.Namespace:
    args = {
        "matrix": str(tmp / "matrix.toml"), "pins": str(cli.pins_mod.DEFAULT_PINS_FILE), "reports": str(tmp / "reports"),
        "envs": str(TEST_ENVS), "timeout": 900.0, "force": False, "cell": None, "jobs": 2, "list": False,
    }
    args.update(over)
    return argparse.Namespace(**args)


def shared_dir(tmp_path_factory) -> Path:
    """One folder for the whole test run: under xdist, every worker sees the same one (keyed by the run's uid)."""
    uid = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if uid is None:
        return tmp_path_factory.mktemp("matrix")
    path = tmp_path_factory.getbasetemp().parent / f"matrix-{uid}"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="module")
def matrix_run(tmp_path_factory):
    """The matrix runs once per test run: the first xdist worker here runs it, the others wait and read it."""
    tmp = shared_dir(tmp_path_factory)
    with open(tmp / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (tmp / "status").exists():
            (tmp / "status").write_text(str(run_small_matrix(tmp)))
    compat = json.loads((tmp / "reports" / "compat.json").read_text())
    return tmp, int((tmp / "status").read_text()), {c["id"]: c for c in compat["cells"]}


def run_small_matrix(tmp: Path) -> int:
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
        id = "venv-seed"
        flashinfer-python = "0.6.1"
        torch = "2.9.1"
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
    return cli._cmd_matrix(namespace(tmp))


@pytest.mark.parametrize("cell_id", ["here", "venv-seed"])
def test_real_cell_gives_verdicts_with_evidence(matrix_run, cell_id):
    """Each real cell ran every failure and fix mode on the simulated target, with versions as installed."""
    _, _, cells = matrix_run
    cell = cells[cell_id]
    assert cell["status"] == "ran", cell["reason"] + cell["log_tail"]
    assert set(cell["modes"]) == set(all_modes())  # every registered case reports, if only as not run here
    assert all(e["verdict"] != "error" for e in cell["modes"].values()), cell["modes"]
    assert cell["simulated"] and cell["versions"]["torch"]


def test_venv_cell_installed_its_exact_pins_with_uv(matrix_run):
    """The venv cell reports exactly the pinned flashinfer and torch, records its full installed set, the lock it
    was resolved into (no committed one: resolved now) and where its time went."""
    tmp, _, cells = matrix_run
    versions = cells["venv-seed"]["versions"]
    assert (versions["flashinfer-python"], versions["torch"]) == ("0.6.1", "2.9.1")
    assert cells["venv-seed"]["kind"] == "venv"
    assert any(TEST_ENVS.glob("venv-seed-*/bin/python"))
    outcome = read_outcome(tmp / "reports" / "matrix" / "cells" / "venv-seed" / "cell.json")
    assert outcome.installed["torch"] == "2.9.1" and "pytest" in outcome.installed and len(outcome.installed) > 20
    assert outcome.lock["source"] in ("resolved", "committed") or outcome.lock.get("reused_env")
    assert outcome.costs["cases"] > 0 and outcome.costs["import"] > 0
    assert any(k.startswith("case:mode1[") for k in outcome.costs)


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
    assert status == ExitCode.ERROR_CELLS and len(cells) == 6
    assert validate(reports / "matrix-junit.xml") == []
    assert "`here`" in (reports / "compat.md").read_text()
    assert (reports / "index.html").exists()


def test_rerun_reuses_the_cell_that_ran_unless_forced(matrix_run, tmp_path):
    """A second run keeps the real cells' results (same definition hash) and retries only error cells."""
    shared, _, _ = matrix_run
    tmp = tmp_path / "rerun"  # a copy: other tests read the shared run's reports
    shutil.copytree(shared, tmp, ignore=shutil.ignore_patterns(".lock", "status"))
    cells_dir = tmp / "reports" / "matrix" / "cells"
    before = {c: read_outcome(cells_dir / c / "cell.json").finished for c in ("here", "venv-seed", "crash")}
    cli._cmd_matrix(namespace(tmp, cell=["here", "venv-seed", "crash"]))
    after = {c: read_outcome(cells_dir / c / "cell.json").finished for c in before}
    assert (after["here"], after["venv-seed"]) == (before["here"], before["venv-seed"])
    assert after["crash"] != before["crash"]  # error cells are always retried
