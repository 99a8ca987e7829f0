"""Two matrix runs sharing an environments folder install a cell's environment once: the second
waits for the first, finds its stamp and reuses it (no uv here: the install commands are stand-ins)."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from pcgkit.matrix.backends import venv as backend_venv
from pcgkit.matrix.backends.base import BackendConfig, Deadline
from pcgkit.matrix.backends.venv import prepare_env
from pcgkit.matrix.cells import Cell


def test_concurrent_prepares_install_once_and_share_the_environment(monkeypatch, tmp_path: Path):
    """Two threads preparing the same cell: one install runs, both get the same interpreter."""
    installs = tmp_path / "installs.txt"

    def fake_commands(env_dir, base_python, lock_file):
        # Slow enough that, without the lock, the second prepare would start its own install.
        script = (f"mkdir -p {env_dir}/bin && ln -sf {base_python} {env_dir}/bin/python "
                  f"&& echo install >> {installs} && sleep 1")
        return [["true"], ["sh", "-c", script]]

    monkeypatch.setattr(backend_venv, "install_commands", fake_commands)
    monkeypatch.setenv("PCGKIT_PYTHON", sys.executable)
    locks_dir = tmp_path / "locks"
    locks_dir.mkdir()
    cell = Cell("c", python=f"{sys.version_info[0]}.{sys.version_info[1]}", flashinfer="0.6.1", torch="2.9.1")
    # a committed, current lock: no resolver runs (its content is never read by the stand-in install)
    (locks_dir / "c.txt").write_text(f"# inputs: {backend_venv.cell_lock_inputs(cell).digest}\n")
    config = BackendConfig(cells_root=tmp_path / "cells", envs_root=tmp_path / "envs", locks_dir=locks_dir)
    got = []

    def prepare(n: int) -> None:
        cell_dir = tmp_path / "cells" / f"run{n}"
        cell_dir.mkdir(parents=True)
        got.append(prepare_env(cell, cell_dir, config, Deadline(60)))

    threads = [threading.Thread(target=prepare, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert installs.read_text().splitlines() == ["install"]
    assert len(got) == 2 and got[0].python == got[1].python and got[0].python.endswith("/bin/python"), got
