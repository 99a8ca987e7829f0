"""What a cell installs besides its pins: the kit's own light dependencies and SGLang's import deps. Pure reads."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from pcgkit import resources
from pcgkit.util.tomlfile import tomllib

SGLANG_IMPORT_DEPS = resources.fixture("sglang_import_deps.toml")


def kit_light_dependencies(python: str | None = None) -> list[str]:
    """pcgkit's own dependencies: pyproject.toml in a checkout (the single place they are declared),
    else the installed distribution's metadata (the same list, without extras), those whose marker holds on
    Python `python` ("3.12": a cell's; default: this interpreter). tomli, declared for 3.10 only, is not in a
    3.12 cell's lock."""
    pyproject = resources.pyproject()
    if pyproject is not None:
        declared = list(tomllib.loads(pyproject.read_text())["project"]["dependencies"])
    else:
        declared = importlib.metadata.requires("pcgkit") or []
    where = None if python is None else {"python_version": python, "python_full_version": f"{python}.0"}
    return [r for r in declared if (marker := Requirement(r).marker) is None or marker.evaluate(where)]


def sglang_import_dependencies(sglang: str, path: Path = SGLANG_IMPORT_DEPS) -> list[str]:
    """The light packages the SGLang-level case needs to import this sglang's modules (data file). Pure read."""
    data = tomllib.loads(path.read_text())
    packages: list[str] = []
    for rule in data.get("deps", ()):
        if sglang in SpecifierSet(rule["sglang"], prereleases=True):
            packages += [p for p in rule["packages"] if p not in packages]
    return packages
