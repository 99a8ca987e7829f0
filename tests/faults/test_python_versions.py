"""Every Python the package declares is one the tests run: pyproject.toml says >= 3.10 and lists 3.10-3.13, and
on each of them a fresh light install answers `triage`, `issue`, `report`, `ci` and `matrix` (on 3.10 they all
crashed with `ModuleNotFoundError: tomllib`, Ubuntu 22.04's default Python). The standard library's tomllib
arrived in 3.11: the kit reads TOML through one import point (`pcgkit/util/tomlfile.py`) that takes its backport
`tomli` (declared for `python_version < "3.11"`) on 3.10."""

from __future__ import annotations

import ast
import os
import re
import subprocess

import pytest

from pcgkit.util.interpreters import candidates
from pcgkit.util.proc import uv_command
from pcgkit.util.tomlfile import tomllib
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import write_results

from .helpers import REPO_ROOT, ran_cell, result, write_cells

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
DECLARED = sorted({m.group(1) for c in PYPROJECT["classifiers"]
                   if (m := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", c))},
                  key=lambda v: tuple(map(int, v.split("."))))
CRASH_LOG = REPO_ROOT / "tests" / "data" / "triage_logs" / "01_sglang23386_dgxspark_nvcc_threading_lock.log"


def test_the_declared_pythons_start_at_the_floor_and_have_no_gap():
    """requires-python's floor is the first listed version, and every minor from it to the last is listed."""
    floor = re.fullmatch(r">=\s*(3\.\d+)", PYPROJECT["requires-python"]).group(1)
    minors = [int(v.split(".")[1]) for v in DECLARED]
    assert DECLARED[0] == floor and minors == list(range(minors[0], minors[-1] + 1)), DECLARED


def test_tomllib_has_one_import_point_and_its_backport_is_declared():
    """No module of the package imports tomllib itself (the name 3.10 lacks); tomli is a dependency below 3.11."""
    offenders = []
    for path in sorted((REPO_ROOT / "pcgkit").rglob("*.py")):
        if path.name == "tomlfile.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else []
            if any(n.split(".")[0] in ("tomllib", "tomli") for n in names):
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}")
    assert not offenders, f"import tomllib through pcgkit.util.tomlfile: {offenders}"
    assert any(re.fullmatch(r"""tomli\b.*;\s*python_version\s*<\s*['"]3\.11['"]""", d)
               for d in PYPROJECT["dependencies"]), PYPROJECT["dependencies"]


def _interpreter(version: str) -> str | None:
    for path in candidates(version):
        probe = subprocess.run([path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True) if os.access(path, os.X_OK) else None
        if probe is not None and probe.stdout.strip() == version:
            return path
    return None


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """A results file and a reports folder made by this interpreter's kit, for the commands' real calls."""
    root = tmp_path_factory.mktemp("staged")
    write_results(root / "results.json", [result(verdict=Verdict.REPRODUCED)], {})
    write_cells(root / "reports", ran_cell("seed"))
    return root


@pytest.mark.slow
@pytest.mark.parametrize("version", DECLARED)
def test_each_declared_python_runs_the_commands(version, tmp_path, staged):
    """A fresh light install (uv, the package and its `ci` extra) on this Python: the five commands' --help and one
    real call each succeed; an interpreter missing here is a skip, and a failure on CI (CI is told to have them)."""
    python = _interpreter(version)
    if python is None:
        message = f"no Python {version} on this machine (pyenv, PATH, /usr): install it to test the declared version"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    venv = tmp_path / f"py{version}"
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never"}
    env.pop("VIRTUAL_ENV", None)
    for argv in ([*uv_command(), "venv", "--quiet", "-p", python, str(venv)],
                 [*uv_command(), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
                  f"{REPO_ROOT}[ci]"]):
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
    kit = str(venv / "bin" / "pcgkit")
    reports = tmp_path / "reports"
    subprocess.run(["cp", "-r", str(staged / "reports"), str(reports)], check=True)
    calls = [[cmd, "--help"] for cmd in ("triage", "issue", "report", "ci", "matrix")] + [
        ["triage", str(CRASH_LOG)],
        ["issue", "--target", "flashinfer", "--results", str(staged / "results.json"), "--out", "-"],
        ["report", "--reports", str(reports)],
        ["ci", "github", "--out", "-"],
        ["matrix", "--list"],
    ]
    for argv in calls:
        done = subprocess.run([kit, *argv], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
        assert done.returncode == 0, f"Python {version}: pcgkit {' '.join(argv)} -> {done.returncode}\n{done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr
    triage = subprocess.run([kit, "triage", str(CRASH_LOG)], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert "known-bug" in triage.stdout
