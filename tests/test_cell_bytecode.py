"""A matrix cell's interpreter writes its bytecode under the kit's folder (pcgkit.matrix.backends.venv.bytecode_env)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pcgkit.commands.cache import find_entries
from pcgkit.matrix.backends.venv import BYTECODE_DIR, bytecode_env
from pcgkit.util.envlock import owned_dir


def test_bytecode_goes_to_the_kit_folder_even_when_the_caller_forbids_writing_it(tmp_path: Path):
    """With PYTHONDONTWRITEBYTECODE=1 inherited, the cell's settings still write the .pyc, under the folder only."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "probe_mod.py").write_text("VALUE = 1\n")
    folder = tmp_path / BYTECODE_DIR
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(src), **bytecode_env(folder)}
    subprocess.run([sys.executable, "-c", "import probe_mod"], env=env, check=True, timeout=60)
    written = [p.name for p in folder.rglob("*.pyc")]
    assert any(name.startswith("probe_mod.") for name in written)
    assert not (src / "__pycache__").exists()


def test_cache_lists_the_bytecode_folder_under_the_backend_s_name(tmp_path: Path):
    """`pcgkit cache` names the folder the venv backend writes (one name in both places), stamped as the kit's."""
    envs = tmp_path / ".pcgkit" / "envs"
    owned_dir(tmp_path / ".pcgkit" / BYTECODE_DIR)  # made and stamped as the backend makes it
    entries = find_entries((tmp_path / ".venv", tmp_path / ".venv-light"), envs, tmp_path / "cache")
    assert [(e.name, e.path.name) for e in entries] == [(BYTECODE_DIR, BYTECODE_DIR)]
