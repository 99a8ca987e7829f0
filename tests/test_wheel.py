"""The kit as a wheel: built with uv, installed into a fresh venv outside the checkout, and used there.

The venv gets the reference pins (torch, flashinfer-python) from uv's cache, which the reference
.venv filled, so `pcgkit run` has an environment to test. Every command runs with its working
directory in tmp_path: nothing may reach back into the checkout (the installed package must find
fixtures, cases and templates as package data).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import RAN, CellOutcome, write_outcome
from pcgkit.verdicts.result import read_results

pytestmark = pytest.mark.slow  # builds the wheel and a venv with the reference pins, then runs the kit from it: minutes

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_RESULTS = REPO_ROOT / "reports" / "samples" / "results.json"


def _uv() -> list[str]:
    found = shutil.which("uv")
    return [found] if found else [sys.executable, "-m", "uv"]


def _run(argv, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["UV_PYTHON_DOWNLOADS"] = "never"
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{argv} -> {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel_env(tmp_path_factory) -> tuple[Path, Path]:
    """(the venv's bin/, a working directory outside the checkout) with the built wheel installed."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    _run([*_uv(), "build", "--wheel", "-q", "-o", str(dist), str(REPO_ROOT)], cwd=base)
    (wheel,) = dist.glob("pcgkit-*.whl")
    venv = base / "venv"
    _run([*_uv(), "venv", "-q", "-p", sys.executable, str(venv)], cwd=base)
    _run([*_uv(), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), str(wheel),
          "-r", str(REPO_ROOT / "fixtures" / "reference" / "requirements.txt")], cwd=base)
    work = base / "work"
    work.mkdir()
    return venv / "bin", work


def test_installed_package_is_not_the_checkout(wheel_env):
    """The venv imports pcgkit from its own site-packages, and its data resolve there too."""
    bindir, work = wheel_env
    done = _run([str(bindir / "python"), "-c",
                 "import pcgkit, pcgkit.resources as r; print(pcgkit.__file__); print(r.checkout_root()); "
                 "print(r.fixture('matrix.toml')); print(r.cases_dir())"], cwd=work)
    module, checkout, matrix, cases = done.stdout.split()
    assert "site-packages" in module and str(REPO_ROOT) not in module
    assert checkout == "None"
    assert Path(matrix).is_file() and "site-packages" in matrix
    assert (Path(cases) / "test_mode1_nvcc_subprocess.py").is_file()


def test_help_and_env(wheel_env):
    """`pcgkit --help` lists the subcommands; `pcgkit env --json` captures the wheel's own venv."""
    bindir, work = wheel_env
    assert "matrix" in _run([str(bindir / "pcgkit"), "--help"], cwd=work).stdout
    data = json.loads(_run([str(bindir / "pcgkit"), "env", "--json"], cwd=work).stdout)
    assert data["python"]["executable"].startswith(str(bindir.parent))


def test_run_reproduces_mode1_from_the_wheel(wheel_env):
    """`pcgkit run` from the wheel runs the bundled cases: mode 1 reproduces, simulated SM120."""
    bindir, work = wheel_env
    _run([str(bindir / "pcgkit"), "run", "-m", "cpu_sim"], cwd=work)
    _, results = read_results(work / "reports" / "results.json")
    mode1 = next(r for r in results if r.mode == "mode1")
    assert mode1.verdict.value == "reproduced" and mode1.simulated
    assert str(mode1.signature.innermost_library_frame).startswith("flashinfer/jit/cpp_ext.py:")


def test_report_on_existing_cells_and_repro(wheel_env):
    """`pcgkit report` renders a cell written elsewhere; `pcgkit repro mode1` writes its script."""
    bindir, work = wheel_env
    environment, results = read_results(SAMPLE_RESULTS)
    cell = Cell("seed", flashinfer="0.6.1", torch="2.9.1")
    outcome = CellOutcome(cell, RAN, 1.0, versions=environment.get("versions", {}), results=tuple(results))
    write_outcome(work / "rep" / "matrix" / "cells" / "seed" / "cell.json", outcome)
    _run([str(bindir / "pcgkit"), "report", "--reports", "rep"], cwd=work)
    assert "seed" in (work / "rep" / "compat.md").read_text()
    _run([str(bindir / "pcgkit"), "repro", "mode1", "--out", "repro"], cwd=work)
    assert (work / "repro" / "repro_mode1.py").is_file()
