"""A cache that knows what it ran: the marker selection and --require-hardware are part of what a cached
cell answers for, and an environment another run is using is never deleted under it (`--force` waits,
then refuses)."""

from __future__ import annotations

import dataclasses
import sys

import pytest

from pcgkit.matrix.backends import loop, venv
from pcgkit.matrix.backends.base import BackendConfig, StageFailed
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import RAN, CellOutcome
from pcgkit.matrix.runner import run_matrix
from pcgkit.util.envlock import use_lock_path

from .helpers import VERSIONS, result, stand_in_backend


def _counting_runner(calls: list):
    def run(cell, config, on_stage):
        calls.append((config.select, config.require_hardware))
        return CellOutcome(cell, RAN, 0.1, versions=VERSIONS, results=(result(),))

    return run


def test_a_changed_selection_or_hardware_requirement_reruns_the_cached_cell(tmp_path):
    """Same cell, same definition: reused only under the same -m and --require-hardware; otherwise rerun."""
    cell = Cell("seed", kind="existing", interpreter=sys.executable)
    base = BackendConfig(cells_root=tmp_path / "cells", envs_root=tmp_path / "envs")
    calls: list = []
    run = _counting_runner(calls)
    steps = [
        (base, 1),  # first run: runs
        (base, 1),  # same selection: cached
        (dataclasses.replace(base, select="sm120"), 2),  # -m changed: reruns
        (dataclasses.replace(base, select="sm120"), 2),  # same again: cached
        (dataclasses.replace(base, select="sm120", require_hardware=("sm120",)), 3),  # hardware now required
        (base, 4),  # back to the default: the cached one answers for sm120 only, so it reruns
    ]
    for config, expected_calls in steps:
        outcome = run_matrix([cell], config, jobs=1, run=run, show_progress=False)[0]
        assert len(calls) == expected_calls, (config.select, config.require_hardware)
        assert outcome.provenance["select"] == (config.select or "")
        assert outcome.provenance["require_hardware"] == list(config.require_hardware)


def test_force_does_not_delete_an_environment_another_run_is_using(monkeypatch, tmp_path):
    """A stamped env held by another run: a forced rebuild waits for it, then refuses with a one-line reason;
    the environment is still there for the run using it."""
    cell = Cell("inuse", python=f"{sys.version_info[0]}.{sys.version_info[1]}", flashinfer="0.6.1", torch="2.9.1")
    config, installs = stand_in_backend(monkeypatch, tmp_path, cell)
    cell_dir = tmp_path / "cells" / "inuse"
    cell_dir.mkdir(parents=True)
    assert venv.prepare_env(cell, cell_dir, config, venv.Deadline(60)).python is not None
    env_dir = venv.env_dir_for(cell, config)
    monkeypatch.setattr(venv, "IN_USE_POLL_S", 0.05)
    with venv.env_in_use(env_dir):  # the other run, mid-way through its cases
        venv._IN_USE.pop(env_dir)  # ...in another process: this process holds nothing of its own
        with pytest.raises(StageFailed) as forced:
            venv.prepare_env(cell, cell_dir, dataclasses.replace(config, force=True), venv.Deadline(0.5))
        assert "environment in use" in forced.value.reason and str(env_dir) in forced.value.reason
        assert (env_dir / "bin" / "python").exists()
    # once the other run is over, --force rebuilds
    assert venv.prepare_env(cell, cell_dir, dataclasses.replace(config, force=True), venv.Deadline(60)).python
    assert installs.read_text().count("install") == 2


def test_a_run_holds_its_environment_for_its_whole_cell(monkeypatch, tmp_path):
    """run_cell holds the shared use lock from install to the end of the cases (checked while the cases run)."""
    import fcntl

    cell = Cell("held", python=f"{sys.version_info[0]}.{sys.version_info[1]}", flashinfer="0.6.1", torch="2.9.1")
    config, _ = stand_in_backend(monkeypatch, tmp_path, cell)
    env_dir = venv.env_dir_for(cell, config)
    seen = {}

    def execute(plan):
        with open(use_lock_path(env_dir)) as probe:
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                seen["exclusive"] = True
            except BlockingIOError:
                seen["exclusive"] = False
        raise RuntimeError("stop here")

    monkeypatch.setattr(venv.runjob, "execute", execute)
    try:
        loop.run_cell(venv.BACKEND, cell, config)
    except RuntimeError:
        pass
    assert seen == {"exclusive": False}
