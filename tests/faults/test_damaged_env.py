"""Damaged environments: a cell env broken after its install is rebuilt, with the reason in
install.log and cell.json's lock facts; `--force` rebuilds an intact one (uv is a stand-in here)."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import pytest

from pcgkit.cli import build_parser
from pcgkit.commands.matrix import backend_config
from pcgkit.matrix.backends.base import Deadline
from pcgkit.matrix.backends.venv import env_dir_for, prepare_env
from pcgkit.matrix.cells import Cell

from .helpers import stand_in_backend

CELL = Cell("dmg", python=f"{sys.version_info[0]}.{sys.version_info[1]}", flashinfer="0.6.1", torch="2.9.1")


def _prepare(config, tmp_path: Path, n: int):
    cell_dir = tmp_path / "cells" / f"run{n}"
    cell_dir.mkdir(parents=True, exist_ok=True)
    return prepare_env(CELL, cell_dir, config, Deadline(60)), cell_dir


def _break_python(env: Path) -> None:
    (env / "bin" / "python").unlink()


def _python_that_fails(env: Path) -> None:
    python = env / "bin" / "python"
    python.unlink()
    python.write_text("#!/bin/sh\nexit 9\n")
    python.chmod(0o755)


def _lose_metadata(env: Path) -> None:
    next(env.glob("lib/python*/site-packages/tabulate-0.9.0.dist-info/METADATA")).unlink()


def test_an_intact_environment_is_reused_without_a_second_install(monkeypatch, tmp_path):
    """Second prepare of an untouched env: no install runs and the lock facts say reused_env."""
    config, installs = stand_in_backend(monkeypatch, tmp_path, CELL)
    first, _ = _prepare(config, tmp_path, 1)
    second, _ = _prepare(config, tmp_path, 2)
    assert installs.read_text().splitlines() == ["install"]
    assert first.python == second.python and second.lock.get("reused_env") is True
    assert "rebuilt" not in second.lock


@pytest.mark.parametrize("damage, reason", [
    (_break_python, "the environment's python is missing"),
    (_python_that_fails, "the environment's python does not start (exit status 9)"),
    (_lose_metadata, "1 installed distribution lost its METADATA (tabulate-0.9.0.dist-info)"),
])
def test_a_damaged_environment_is_rebuilt_with_the_reason_logged(monkeypatch, tmp_path, capsys, damage, reason):
    """Damage found at reuse time reinstalls the env (no --force) and names the damage in install.log."""
    config, installs = stand_in_backend(monkeypatch, tmp_path, CELL)
    _prepare(config, tmp_path, 1)
    damage(env_dir_for(CELL, config))
    again, cell_dir = _prepare(config, tmp_path, 2)
    assert installs.read_text().splitlines() == ["install", "install"]
    assert again.python is not None and os.access(again.python, os.X_OK)
    assert reason in again.lock["rebuilt"], again.lock
    assert reason in (cell_dir / "install.log").read_text().splitlines()[0]
    assert reason in capsys.readouterr().err
    # the rebuilt env is whole again: the next prepare reuses it
    third, _ = _prepare(config, tmp_path, 3)
    assert third.lock.get("reused_env") is True and len(installs.read_text().splitlines()) == 2


def test_force_rebuilds_an_intact_environment_from_scratch(monkeypatch, tmp_path):
    """BackendConfig.force reinstalls even a whole env, and removes what the old one held."""
    config, installs = stand_in_backend(monkeypatch, tmp_path, CELL)
    _prepare(config, tmp_path, 1)
    leftover = env_dir_for(CELL, config) / "leftover-from-the-old-env"
    leftover.write_text("x")
    again, cell_dir = _prepare(dataclasses.replace(config, force=True), tmp_path, 2)
    assert installs.read_text().splitlines() == ["install", "install"]
    assert again.lock["rebuilt"] == "--force" and not leftover.exists()
    assert (cell_dir / "install.log").read_text().startswith(f"# building {env_dir_for(CELL, config)}: --force")


def test_matrix_force_flag_reaches_the_backend_config(tmp_path):
    """`pcgkit matrix --force` sets BackendConfig.force; without it the env is reused."""
    parser = build_parser()
    forced = parser.parse_args(["matrix", "--reports", str(tmp_path), "--force"])
    plain = parser.parse_args(["matrix", "--reports", str(tmp_path)])
    assert backend_config(forced).force is True and backend_config(plain).force is False
