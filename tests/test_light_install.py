"""The light install: the kit alone, with no torch, FlashInfer or SGLang, answers a crashed user.

The wheel goes into a bare venv (the kit's own small dependencies only); triage, `env --python`,
`report` and `ci` must work there, and torch must not be installed by them. `bin/pcgkit triage`
routes to the light environment, so a crashed user's first command builds ~20 MB, not the 7 GB
reference environment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
LOG = REPO_ROOT / "tests" / "data" / "triage_logs" / "04_dgxarley_glm47_spark_posix_stat.log"


def _uv() -> list[str]:
    found = shutil.which("uv")
    return [found] if found else [sys.executable, "-m", "uv"]


def _run(argv, cwd: Path, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    base["UV_PYTHON_DOWNLOADS"] = "never"
    done = subprocess.run(argv, cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{argv} -> {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def bare_env(tmp_path_factory) -> tuple[Path, Path]:
    """(bin/ of a venv holding only the built wheel and its own dependencies, a working folder outside the checkout)."""
    base = tmp_path_factory.mktemp("light")
    dist = base / "dist"
    _run([*_uv(), "build", "--wheel", "-q", "-o", str(dist), str(REPO_ROOT)], cwd=base)
    (wheel,) = dist.glob("pcgkit-*.whl")
    venv = base / "venv"
    _run([*_uv(), "venv", "-q", "-p", sys.executable, str(venv)], cwd=base)
    _run([*_uv(), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), str(wheel)], cwd=base)
    work = base / "work"
    work.mkdir()
    shutil.copy(LOG, work / "server.log")
    return venv / "bin", work


@pytest.mark.slow  # builds a wheel and a venv, or the light venv: tens of seconds
def test_bare_wheel_has_no_subject_stack_and_triage_answers(bare_env):
    """In a venv with the wheel alone torch/flashinfer/sglang are absent, and `pcgkit triage --json` diagnoses the bug."""
    bindir, work = bare_env
    probe = "import importlib.util as u; print([m for m in ('torch', 'flashinfer', 'sglang') if u.find_spec(m)])"
    assert _run([str(bindir / "python"), "-c", probe], cwd=work).stdout.strip() == "[]"
    out = json.loads(_run([str(bindir / "pcgkit"), "triage", "--json", "server.log"], cwd=work).stdout)
    assert out["logs"][0]["diagnosis"] == "known-bug" and out["logs"][0]["mode"] == "mode2"


@pytest.mark.slow  # builds a wheel and a venv, or the light venv: tens of seconds
def test_bare_wheel_runs_env_python_report_and_ci(bare_env):
    """`env --python`, `report` and `ci` run from the plain package (no torch imported by the kit itself)."""
    bindir, work = bare_env
    capture = json.loads(_run([str(bindir / "pcgkit"), "env", "--python", str(bindir / "python"), "--json"], cwd=work).stdout)
    assert capture["schema"] == "pcgkit.env/1" and capture["packages"]["torch"] is None
    triage = _run([str(bindir / "pcgkit"), "triage", "server.log", "--python", str(bindir / "python")], cwd=work).stdout
    assert "your release" in triage
    for command in (["report", "--help"], ["ci", "--help"]):
        _run([str(bindir / "pcgkit"), *command], cwd=work)
    loaded = _run([str(bindir / "python"), "-c",
                   "import sys; from pcgkit.cli import build_parser; build_parser(); "
                   "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'flashinfer', 'sglang')))"],
                  cwd=work).stdout.strip()
    assert loaded == "[]"


@pytest.mark.slow  # builds a wheel and a venv, or the light venv: tens of seconds
def test_bin_pcgkit_triage_uses_the_light_environment(tmp_path):
    """`bin/pcgkit triage` builds and uses the light venv (no torch in it), not the reference .venv."""
    light = tmp_path / "light"
    done = _run(["bash", str(REPO_ROOT / "bin" / "pcgkit"), "triage", str(LOG)], cwd=tmp_path,
                env={"PCGKIT_LIGHT_VENV": str(light)})
    assert "known-bug, mode2" in done.stdout
    assert (light / "bin" / "pcgkit").exists()
    assert not list(light.glob("lib/python*/site-packages/torch"))


@pytest.mark.parametrize(("argv", "route"), [
    (["preflight", "--help"], "light"), (["advice", "show", "--sglang", "0.5.11", "--arch", "sm120"], "light"),
    (["issue", "--help"], "light"), (["repro", "mode1", "--out", "x"], "light"), (["preflgiht"], "light"),
    (["cache"], "light"), (["preflight", "--sglang", "0.5.12", "--", "--model-path", "m"], "light"),
    (["run", "--help"], "light"), (["matrix", "-h"], "light"), (["env", "--python", "/usr/bin/python3"], "light"),
    ([], "light"), (["--version"], "light"),
    (["run"], "reference"), (["test", "-q"], "reference"), (["lab", "refresh", "--dry-run"], "reference"), (["lab", "--help"], "reference"),
    (["env"], "reference"), (["matrix", "--cell", "seed"], "reference"), (["run", "--", "--help"], "reference"),
])
def test_bin_pcgkit_routes_only_stack_commands_to_the_reference_environment(argv, route):
    """Help, usage errors, advice, issue, repro, preflight and cache use .venv-light; only stack commands build .venv."""
    done = subprocess.run(["bash", str(REPO_ROOT / "bin" / "pcgkit"), *argv], capture_output=True, text=True,
                          env={**os.environ, "PCGKIT_SHOW_ROUTE": "1"}, timeout=30)
    assert (done.returncode, done.stdout.strip()) == (0, route)
