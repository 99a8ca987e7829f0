"""Where the kit finds its data: the one module that knows the layout on disk.

In a checkout (bin/pcgkit, an editable install, a matrix cell installed with `-e`) the data are the checkout's
own folders (fixtures/, cases/, docker/); in an installed wheel the same folders ride along as package data under
`pcgkit/_bundle/` (pyproject.toml maps them there). Writable state (reports/, .pcgkit/ environments) goes under
the checkout, or else the current directory. Test-only data lives in tests/data/, never needed at run time.
"""

from __future__ import annotations

import functools
import importlib.resources
import os
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_BUNDLE = "pcgkit._bundle"


@functools.cache
def checkout_root() -> Path | None:
    """The checkout this package was imported from, or None for an installed wheel."""
    root = _PACKAGE_DIR.parent
    if (root / "pyproject.toml").is_file() and (root / "fixtures").is_dir() and (root / "cases").is_dir():
        return root
    return None


def _data_dir(folder: str) -> Path:
    """The checkout's folder, else the wheel's bundled copy (wheels install unzipped: a real directory)."""
    root = checkout_root()
    return root / folder if root is not None else Path(str(importlib.resources.files(_BUNDLE) / folder))


def fixtures_dir() -> Path:
    """fixtures/: the data the kit runs on (matrix, expectations, pins, reference pins, schemas)."""
    return _data_dir("fixtures")


def fixture(*parts: str) -> Path:
    return fixtures_dir().joinpath(*parts)


def cases_dir() -> Path:
    """cases/: one self-contained reproduction per module (the wheel carries them too)."""
    return _data_dir("cases")


def docker_dir() -> Path:
    """docker/: the cell Dockerfile, image pins and the registry-free base image script."""
    return _data_dir("docker")


def templates_dir() -> Path:
    """Jinja templates (always package data)."""
    return Path(str(importlib.resources.files("pcgkit") / "templates"))


def sweep_data(name: str) -> Path:
    """The sweep's spec table, public-thread facts and per-release signatures (package data of pcgkit.sweep)."""
    return Path(str(importlib.resources.files("pcgkit.sweep") / name))


def cases_pytest_ini() -> Path:
    """The pytest configuration for running the cases (`pcgkit run`, matrix cells): cases/pytest.ini."""
    return cases_dir() / "pytest.ini"


def workspace_root() -> Path:
    """Where reports/ and .pcgkit/ go by default: the checkout, or the current directory."""
    return checkout_root() or Path.cwd()


def samples_dir() -> Path:
    """reports/samples/: the committed samples (a wheel has none: a path that globs to nothing)."""
    return workspace_root() / "reports" / "samples"


def default_envs_root() -> Path:
    return workspace_root() / ".pcgkit" / "envs"


def bootstrap_envs() -> tuple[Path, ...]:
    """The checkout's bin/pcgkit environments (.venv: the reference pins; .venv-light: the kit alone); none for a wheel."""
    root = checkout_root()
    return (root / ".venv", root / ".venv-light") if root is not None else ()


def pyproject() -> Path | None:
    """The kit's pyproject.toml in a checkout (None for a wheel: read metadata instead)."""
    root = checkout_root()
    return root / "pyproject.toml" if root is not None else None


def hybrid_shim() -> Path:
    """The hybrid target's sitecustomize.py (pcgkit.e2e.hybrid copies it beside each hybrid server's log)."""
    return _PACKAGE_DIR / "e2e" / "hybrid_shim" / "sitecustomize.py"


def package_dir() -> Path:
    """The installed pcgkit package folder (copied into a cell when there is no checkout)."""
    return _PACKAGE_DIR


CACHE_VAR = "PCGKIT_CACHE"


def cache_dir() -> Path:
    """The kit's cache (built environments): $PCGKIT_CACHE, else ~/.cache/pcgkit. Set but empty means unset (as
    XDG reads an empty variable); a relative path is a ValueError (a cache that moves with the working directory
    builds 8 GB again wherever the user stands)."""
    value = os.environ.get(CACHE_VAR, "").strip()
    if not value:
        return Path.home() / ".cache" / "pcgkit"
    path = Path(value).expanduser()
    if not path.is_absolute():
        raise ValueError(f"{CACHE_VAR}={value!r}: give an absolute path (or unset it for ~/.cache/pcgkit)")
    return path
