"""Where a matrix cell runs: the Backend protocol (pcgkit.matrix.backends.base), the one cell loop
every backend runs through (pcgkit.matrix.backends.loop), and the registry.

Each backend module exposes `make_backend(args) -> Backend`, a one-line `SUMMARY`, and may declare its
own options with `add_options(parser)`; no code outside a backend names one. A backend's module imports
nothing heavy at the top (the Docker SDK, an extra, only when it runs).
"""

from __future__ import annotations

import importlib

from pcgkit.matrix.backends import loop
from pcgkit.matrix.backends.base import RunCell

BACKENDS: dict[str, str] = {
    "venv": "pcgkit.matrix.backends.venv",  # one uv virtual environment per cell (the embedded default)
    "docker": "pcgkit.matrix.backends.docker",  # one pinned image per cell (docker/)
}
DEFAULT = "venv"
# Where CI runs cells: hosted runners (simulation) in the default backend; self-hosted GPU runners in
# a pinned image each, the host's GPUs passed in (pcgkit.ci.plan reads these, never a backend's name).
FOR_SIMULATION = DEFAULT
FOR_REAL_HARDWARE = "docker"


def add_options(parser) -> None:
    """`--backend` (choices and help from the registry), then each backend's own options."""
    modules = {name: importlib.import_module(module) for name, module in BACKENDS.items()}
    described = "; ".join(f"{name}: {m.SUMMARY}" + (" (default)" if name == DEFAULT else "") for name, m in modules.items())
    parser.add_argument("--backend", choices=tuple(BACKENDS), default=DEFAULT, help=f"where cells run: {described}")
    for module in modules.values():
        if hasattr(module, "add_options"):
            module.add_options(parser)


def ci_arguments(name: str) -> tuple[str, ...]:
    """The `pcgkit matrix` options a CI job adds for this backend (its module's CI_ARGUMENTS; none by default)."""
    return tuple(getattr(importlib.import_module(BACKENDS[name]), "CI_ARGUMENTS", ()))


def runner(name: str, args) -> RunCell:
    """The backend registered under `name`, configured from the CLI's args, as a RunCell (the one loop)."""
    return loop.CellLoop(importlib.import_module(BACKENDS[name]).make_backend(args))
