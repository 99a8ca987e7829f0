"""The version axes of the matrix, declared once: planning, pins, install rules, bisection,
attribution, the grid, the dashboard, the wording and the issue drafts all read this tuple. Pure.

An axis is a distribution whose version tells one environment from another. Adding one (say the
CUDA toolkit) is a row here, the data (the cell's field and its pins), and what cannot be derived.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Axis:
    id: str  # the distribution's name, as cells, recorded versions and install rules spell it
    name: str  # how reports print it
    pinned_by_sglang: bool  # an SGLang release declares an exact pin of it (fixtures/sglang_requires.toml)
    in_grid: bool  # a column of compat.md's grid (the Python version is the same in every cell there)
    bisectable: bool  # `pcgkit bisect --axis` can walk its releases
    optional: bool = False  # a cell may install none of it (a FlashInfer-only cell has no SGLang)


AXES: tuple[Axis, ...] = (
    Axis("sglang", "SGLang", pinned_by_sglang=False, in_grid=True, bisectable=True, optional=True),
    Axis("flashinfer-python", "FlashInfer", pinned_by_sglang=True, in_grid=True, bisectable=True),
    Axis("torch", "torch", pinned_by_sglang=True, in_grid=True, bisectable=True),
    Axis("python", "Python", pinned_by_sglang=False, in_grid=False, bisectable=False),
)

AXIS_IDS: tuple[str, ...] = tuple(a.id for a in AXES)
PINNED_BY_SGLANG: tuple[str, ...] = tuple(a.id for a in AXES if a.pinned_by_sglang)
GRID_AXES: tuple[str, ...] = tuple(a.id for a in AXES if a.in_grid)
BISECTABLE_AXES: tuple[str, ...] = tuple(a.id for a in AXES if a.bisectable)
OPTIONAL_AXES: tuple[str, ...] = tuple(a.id for a in AXES if a.optional)
AXIS_NAMES: dict[str, str] = {a.id: a.name for a in AXES}
