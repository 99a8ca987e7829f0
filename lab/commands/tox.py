"""`bin/pcgkit lab tox`: the matrix's cells as tox.ini [tox]/[testenv] sections (lab.matrix.tox_export), printed; the
generated part of the checkout's tox.ini is this output."""

from __future__ import annotations

from lab.matrix.tox_export import render_tox
from lab.matrixargs import add_plan_options
from pcgkit.matrix.plan import planned_cells


def _cmd_tox(args) -> int:
    print(render_tox(planned_cells(args)), end="")
    return 0


def register(subparsers) -> None:
    cmd = subparsers.add_parser(
        "tox", help="print the cells as tox.ini [tox]/[testenv] sections",
        description="Print the matrix's cells as tox.ini [tox]/[testenv] sections (one tox environment per cell).",
        epilog="example:\n  %(prog)s --cell seed")
    add_plan_options(cmd)
    cmd.set_defaults(func=_cmd_tox)
