"""What a cell installs besides its pins: the kit's own light dependencies and SGLang's import deps. Pure reads."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from pcgkit import resources
from pcgkit.util.tomlfile import tomllib

SGLANG_IMPORT_DEPS = resources.fixture("sglang_import_deps.toml")


def kit_light_dependencies() -> list[str]:
    """pcgkit's own dependencies: pyproject.toml in a checkout (the single place they are declared),
    else the installed distribution's metadata (the same list, without extras)."""
    pyproject = resources.pyproject()
    if pyproject is not None:
        return list(tomllib.loads(pyproject.read_text())["project"]["dependencies"])
    declared = importlib.metadata.requires("pcgkit") or []
    return [r for r in declared if Requirement(r).marker is None]


def sglang_import_dependencies(sglang: str, path: Path = SGLANG_IMPORT_DEPS) -> list[str]:
    """The light packages the SGLang-level case needs to import this sglang's modules (data file). Pure read."""
    data = tomllib.loads(path.read_text())
    packages: list[str] = []
    for rule in data.get("deps", ()):
        if sglang in SpecifierSet(rule["sglang"], prereleases=True):
            packages += [p for p in rule["packages"] if p not in packages]
    return packages
