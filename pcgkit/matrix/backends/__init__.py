"""Where a matrix cell runs: the Backend protocol (pcgkit.matrix.backends.base) and its registry.

Each backend module exposes `make_runner(args) -> RunCell`; the registry names the modules, and a
backend is imported only when chosen (the docker backend needs the Docker SDK, an extra).
Adding a backend is one module and one line here.
"""

from __future__ import annotations

import importlib

from pcgkit.matrix.backends.base import RunCell

BACKENDS: dict[str, str] = {
    "venv": "pcgkit.matrix.backends.venv",  # one uv virtual environment per cell (the embedded default)
    "docker": "pcgkit.matrix.backends.docker",  # one pinned image per cell (docker/)
}
DEFAULT = "venv"


def runner(name: str, args) -> RunCell:
    """The RunCell of the backend registered under `name`, configured from the CLI's args."""
    return importlib.import_module(BACKENDS[name]).make_runner(args)
