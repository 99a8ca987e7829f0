"""tox.ini rendered for the plain-tox baseline (virtualenv + pip) differs from the shipped tox-uv one
only in the runner and the installer: same environments, same pins, same command."""

from __future__ import annotations

import pytest

from lab.matrix.tox_export import PIP, render_tox
from pcgkit.matrix.pins import DEFAULT_PINS_FILE, load_pins
from pcgkit.matrix.plan import DEFAULT_MATRIX_FILE, load_matrix, plan

CELLS = plan(load_matrix(DEFAULT_MATRIX_FILE), load_pins(DEFAULT_PINS_FILE), only=("seed", "fi-0.5.3"))


def test_pip_variant_has_no_uv_and_installs_with_pip():
    """The pip rendering drops tox-uv and uv, and installs the kit and sglang with the env's own pip."""
    text = render_tox(CELLS, installer=PIP, kit_dir="/kit")
    assert "uv" not in text.replace("virtualenv", "")
    assert "runner = virtualenv" in text
    assert "    {envpython} -m pip install --no-deps -e /kit" in text
    assert "    seed: {envpython} -m pip install --no-deps sglang==0.5.8" in text


def test_pip_and_uv_variants_share_envs_pins_and_command():
    """env_list, deps, base_python and commands are line-for-line the same in both renderings."""
    def section(text: str, key: str) -> list[str]:
        lines = text.splitlines()
        start = next(i for i, ln in enumerate(lines) if ln.startswith(key))
        end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("    ")), len(lines))
        return lines[start:end]

    uv, pip = render_tox(CELLS), render_tox(CELLS, installer=PIP)
    for key in ("env_list", "deps =", "base_python =", "commands ="):
        assert section(uv, key) == section(pip, key), key
    assert "seed: flashinfer-cubin==0.6.1" in pip


def test_unknown_installer_is_rejected():
    """A typo in the installer name is an error, not a silent uv rendering."""
    with pytest.raises(ValueError, match="poetry"):
        render_tox(CELLS, installer="poetry")
