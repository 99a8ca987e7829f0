"""A stand-in `pcgkit matrix` for the signal tests: the real CLI, report and stop policy, with a cell
runner whose cells are `sleep` children through proc.py (and one that finishes at once).

Usage: python -m tests.faults.matrix_driver REPORTS MATRIX PIDS_DIR
"""

from __future__ import annotations

import sys

from pcgkit import cli
from pcgkit.commands import matrix as matrix_cli
from pcgkit.matrix.outcome import RAN, CellOutcome
from pcgkit.util import proc
from tests.faults.helpers import VERSIONS, result


def main() -> int:
    reports, matrix, pids = sys.argv[1:4]

    def run_cell(cell, config, on_stage):
        on_stage(cell, "run")
        if cell.id == "fast":
            return CellOutcome(cell, RAN, 0.1, versions=VERSIONS, results=(result(),))
        # a child and a grandchild, each recording its pid; both sleep far past the test
        script = f"sleep 300 & echo $! > {pids}/{cell.id}.grandchild; echo $$ > {pids}/{cell.id}.child; wait"
        proc.run(["sh", "-c", script], echo=False)
        return CellOutcome(cell, RAN, 0.1, versions=VERSIONS, results=(result(),))

    matrix_cli.cell_runner = lambda args: run_cell
    return cli.main(["matrix", "--matrix", matrix, "--reports", reports, "--jobs", "2"])


if __name__ == "__main__":
    sys.exit(main())
