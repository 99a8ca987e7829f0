"""`pcgkit repro`: export one case as a standalone reproduction (pcgkit.bugreport.repro plans and writes it)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pcgkit import catalog
from pcgkit.bugreport.repro import pins_for_cell, pins_from_file, plan_export, write_export
from pcgkit.errors import UsageError
from pcgkit.util.argtypes import add_force, deprecated_alias


def _cmd_repro(args) -> int:
    pins = pins_from_file(Path(args.pins), args.python_version) if args.pins else None
    results = Path(args.results) if args.results else None
    if args.cell:
        if pins is not None:
            raise UsageError("--cell and --pins both name the pins: pass one")
        pins, cell_results = pins_for_cell(args.cell, Path(args.reports))
        results = results or cell_results
    plan = plan_export(args.case, args.simulate, pins, results)
    out_dir = Path(args.out or f"repro-{plan.mode.id}")
    for path in write_export(plan, out_dir, force=args.force):
        print(path)
    kind = "simulated SM120 (runs without a GPU)" if plan.simulate else "real GPU"
    print(f"pcgkit repro: {plan.mode.id} exported for {kind}; see {out_dir / 'README.md'}", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    repro = subparsers.add_parser("repro", help="export one case as a standalone reproduction (no pcgkit needed)",
                               description="Export one case as a standalone script with pinned requirements (PEP 723) and a README; it runs without pcgkit.",
                               epilog="examples:\n  %(prog)s mode1 --out repro-mode1\n  %(prog)s mode1 --real --cell seed --out repro-mode1-gpu")
    repro.add_argument("case", choices=catalog.exportable_ids(), help="the case to export")
    repro.add_argument("--out", help="output folder (default: repro-<case>/)")
    add_force(repro)
    target = repro.add_mutually_exclusive_group()
    target.add_argument(
        "--simulate", dest="simulate", action="store_true", default=True,
        help="for a machine without SM120: write the simulated-SM120 shim into the script (default)",
    )
    target.add_argument("--real", dest="simulate", action="store_false", help="for a real CUDA GPU: no simulation")
    repro.add_argument("--pins", help="requirements file to pin instead of the reference cell's")
    repro.add_argument("--python-version", default="3.12", help="Python version that goes with --pins (default 3.12)")
    # --python names an interpreter (a path) in every other command; here it was the version
    repro.add_argument("--python", dest="python_version", action=deprecated_alias("--python-version"), help=argparse.SUPPRESS)
    repro.add_argument("--results", help="results.json: pins from its versions, expected output from its verdict")
    repro.add_argument("--cell", help="a matrix cell id (`pcgkit matrix --list`): its exact pins, and its measured "
                                      "results when `pcgkit matrix` has run it")
    repro.add_argument("--reports", default="reports", help="where `pcgkit matrix` wrote its cells (default reports/)")
    repro.set_defaults(func=_cmd_repro)
