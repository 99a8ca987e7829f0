"""The one place the kit gets its TOML reader (pure): the standard library's `tomllib` from Python 3.11,
its backport `tomli` (the same parser, declared in pyproject.toml for `python_version < "3.11"`) on 3.10.

Modules write `from pcgkit.util.tomlfile import tomllib` and use `tomllib.loads` / `tomllib.TOMLDecodeError`
as they would the standard library's."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - run by tests/faults/test_python_versions.py on a 3.10 interpreter
    import tomli as tomllib

__all__ = ["tomllib"]
