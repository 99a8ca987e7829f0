"""The options every workshop command over the matrix plan shares: which matrix file, which pins, which cells
(pcgkit.matrix.plan.planned_cells reads them; the locked torch build is always the one written)."""

from __future__ import annotations

import argparse

from pcgkit.matrix import pins as pins_mod
from pcgkit.matrix.plan import DEFAULT_MATRIX_FILE


def add_plan_options(parser: argparse.ArgumentParser, cells: bool = True) -> None:
    parser.add_argument("--matrix", default=str(DEFAULT_MATRIX_FILE), help="matrix definition (TOML)")
    parser.add_argument("--pins", default=str(pins_mod.DEFAULT_PINS_FILE), help="cached SGLang Requires-Dist")
    if cells:
        parser.add_argument("--cell", action="append", help="only this cell id (repeatable; default: every cell)")
