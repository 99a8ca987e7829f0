"""The one environment build lock (pcgkit.util.envlock), shared by matrix cells, preflight and the certificate re-make."""

from __future__ import annotations

import fcntl

import pytest

from pcgkit.util.envlock import build_lock


def test_the_build_lock_is_exclusive_while_held_and_free_after(tmp_path):
    """Inside build_lock another holder cannot take `.NAME.lock` (the sidecar `pcgkit cache remove` honours);
    after it, it can; the parent folder is made."""
    env = tmp_path / "envs" / "flashinfer-0.7.4-abc"
    sidecar = env.parent / f".{env.name}.lock"
    with build_lock(env):
        assert sidecar.is_file()
        with open(sidecar) as other, pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(sidecar) as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
