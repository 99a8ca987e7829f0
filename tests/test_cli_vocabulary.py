"""One CLI vocabulary: old spellings still work with a deprecation line naming the new one, and bin/pcgkit
keeps relative paths relative to where the user stands."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pcgkit.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("argv", "dest", "value", "new"), [
    (["repro", "mode1", "--python", "3.11"], "python_version", "3.11", "--python-version"),
    (["sweep", "--out", "x"], "reports", Path("x"), "--reports"),
    (["ci", "local", "--out", "x"], "reports", "x", "--reports"),
], ids=["repro-python", "sweep-out", "ci-local-out"])
def test_old_spelling_still_works_and_says_the_new_one(argv, dest, value, new, capsys):
    """The deprecated option stores into the new option's field and prints which spelling to use."""
    args = build_parser().parse_args(argv)
    assert getattr(args, dest) == value and f"is deprecated: use {new}" in capsys.readouterr().err


def test_bin_pcgkit_resolves_relative_paths_from_the_callers_directory(tmp_path):
    """`bin/pcgkit ci github --out rel.yml` run from elsewhere writes rel.yml there, not into the checkout."""
    if not (ROOT / ".venv" / "bin" / "pcgkit").exists():
        pytest.skip("bin/pcgkit has not built .venv here (run `bin/pcgkit --version` once)")
    done = subprocess.run([str(ROOT / "bin" / "pcgkit"), "ci", "github", "--cell", "seed", "--out", "rel.yml"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "rel.yml").is_file() and not (ROOT / "rel.yml").exists()
