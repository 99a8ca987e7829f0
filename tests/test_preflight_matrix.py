"""`pcgkit matrix --preflight FILE`: the launch file reaches every cell, and a cached cell answers only for its launch."""

from __future__ import annotations

import argparse
import dataclasses
import sys

import pytest

from pcgkit.commands.matrix import backend_config
from pcgkit.errors import UsageError
from pcgkit.matrix.backends.base import BackendConfig
from pcgkit.matrix.cells import EXISTING, Cell
from pcgkit.matrix.outcome import RAN, CellOutcome, write_outcome
from pcgkit.matrix.runner import cached_outcome
from pcgkit.preflight.case import ENV_VAR

LAUNCH = 'schema = "pcgkit.preflight-launch/1"\nname = "team"\nlaunch = ["--model-path", "ckpt"]\n'


def _args(tmp_path, preflight=None) -> argparse.Namespace:
    return argparse.Namespace(reports=str(tmp_path / "reports"), envs=str(tmp_path / "envs"), timeout=60.0,
                              preflight=preflight)


def test_a_launch_file_becomes_the_cells_case_env_and_identity(tmp_path):
    """--preflight FILE: every cell gets PCGKIT_PREFLIGHT (absolute), must report preflight-launch, and is keyed by it."""
    path = tmp_path / "launch.toml"
    path.write_text(LAUNCH)
    config = backend_config(_args(tmp_path, str(path)))
    assert dict(config.case_env) == {ENV_VAR: str(path.resolve())}
    assert "preflight-launch" in config.expected_modes and dict(config.answers_for)["preflight"]
    plain = backend_config(_args(tmp_path))
    assert plain.case_env == () and plain.answers_for == () and "preflight-launch" not in plain.expected_modes


def test_a_bad_launch_file_stops_before_any_cell(tmp_path):
    """A malformed launch file is one usage line from the command, before anything is installed."""
    path = tmp_path / "launch.toml"
    path.write_text('schema = "pcgkit.preflight-launch/1"\nlaunch = []\n')
    with pytest.raises(UsageError, match="launch"):
        backend_config(_args(tmp_path, str(path)))


def test_a_cached_cell_answers_only_for_the_launch_it_ran(tmp_path):
    """A cell cached without (or with another) launch is rerun; the same launch reuses it."""
    cell = Cell("c", kind=EXISTING, interpreter=sys.executable)
    config = BackendConfig(cells_root=tmp_path / "cells", backend="venv")
    write_outcome(config.cells_root / "c" / "cell.json", CellOutcome(cell, RAN, 1.0, provenance={"backend": "venv"}))
    assert cached_outcome(cell, config) is not None
    asked = dataclasses.replace(config, answers_for=(("preflight", "abc"),))
    assert cached_outcome(cell, asked) is None
    write_outcome(config.cells_root / "c" / "cell.json",
                  CellOutcome(cell, RAN, 1.0, provenance={"backend": "venv", "preflight": "abc"}))
    assert cached_outcome(cell, asked) is not None
    assert cached_outcome(cell, dataclasses.replace(config, answers_for=(("preflight", "other"),))) is None
