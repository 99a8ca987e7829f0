"""`pcgkit run --python ENV` and `pcgkit env --python ENV`: the user's own environment, with a one-line
error naming what ENV lacks; the run's bootstrap reports an import failure instead of a second interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pcgkit.commands.env import capture_in
from pcgkit.commands.run import preflight, preflight_problem
from pcgkit.errors import UsageError
from pcgkit.jobs import cellmain
from pcgkit.matrix.backends import loop
from pcgkit.matrix.backends.base import BackendConfig
from pcgkit.matrix.backends.venv import BACKEND as VENV_BACKEND
from pcgkit.matrix.cells import EXISTING, Cell


def test_preflight_problem_is_one_line_naming_what_to_install():
    """Missing torch and the kit: one line with the pip command and the kit install."""
    problem = preflight_problem("/e/bin/python", {"python": "3.12.1", "missing": ["torch", "pytest"], "kit": False}, "/k")
    assert "\n" not in problem
    assert "lacks torch, pytest" in problem and "/e/bin/python -m pip install torch pytest" in problem
    assert "-m pip install --no-deps -e /k" in problem
    assert preflight_problem("/e/bin/python", {"python": "3.12.1", "missing": [], "kit": True}, "/k") is None


def test_preflight_of_a_missing_or_bare_interpreter(tmp_path: Path):
    """A path that is not an interpreter, and a Python without the stack, each get their one-line reason."""
    assert "not a runnable Python interpreter" in preflight(str(tmp_path / "nope"))
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    problem = preflight(str(bare / "bin" / "python"))
    assert "lacks torch, flashinfer-python, pytest" in problem


def test_env_capture_describes_the_given_interpreter_not_the_kits(tmp_path: Path):
    """`pcgkit env --python ENV` captures ENV (its executable, its packages) although ENV has nothing of the kit."""
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    data = capture_in(str(bare / "bin" / "python"))
    assert data["python"]["executable"] == str(bare / "bin" / "python")
    assert data["packages"]["torch"] is None and data["torch"]["import_ok"] is False
    with pytest.raises(UsageError, match="cannot run it"):
        capture_in(str(tmp_path / "missing-python"))


def test_bootstrap_reports_a_failed_import_with_its_reason(monkeypatch, tmp_path: Path, capsys):
    """cellmain stops before pytest when the stack does not import: marker line, exit 3, the exception in costs."""
    monkeypatch.setattr(cellmain, "SUBJECT_MODULES", ("pcgkit_no_such_module",))
    costs = tmp_path / "costs.json"
    assert cellmain.main([str(costs), "--", "-q"]) == cellmain.IMPORT_FAILED_EXIT
    assert "No module named 'pcgkit_no_such_module'" in json.loads(costs.read_text())["import_error"]
    assert cellmain.IMPORT_FAILED in capsys.readouterr().out


def test_cell_whose_stack_fails_to_import_is_an_import_error_cell(tmp_path: Path):
    """The case run's own import failure makes the `import` error cell, with the exception as the reason."""
    fake = tmp_path / "python"
    fake.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        echo "AttributeError: module 'cuda.bindings.runtime' has no attribute 'cudaLibrary_t'" >&2
        echo '{cellmain.IMPORT_FAILED}{{"error": "x"}}'
        exit {cellmain.IMPORT_FAILED_EXIT}
        """))
    fake.chmod(0o755)
    cell = Cell("broken", kind=EXISTING, interpreter=str(fake))
    outcome = loop.run_cell(VENV_BACKEND, cell, BackendConfig(cells_root=tmp_path / "cells", envs_root=tmp_path / "envs"))
    assert (outcome.status, outcome.stage) == ("error", "import")
    assert "cudaLibrary_t" in outcome.reason and outcome.reason.startswith("import failed (exit status 3)")
    assert {"import", "pytest", "total"} <= set(outcome.costs)
