"""`pcgkit env`: capture this environment for a bug report, or diff two captures (the edge of both)."""

from __future__ import annotations

import json
from pathlib import Path

from pcgkit.bugreport.envcapture import ENV_SCHEMA, capture, render_text
from pcgkit.bugreport.envdiff import diff_lines, load_capture, resolve_side
from pcgkit.commands import add_command, emit
from pcgkit.util.argtypes import add_force
from pcgkit.util.foreign_env import capture_in
from pcgkit.util.progress import activity


def _cmd_env(args) -> int:
    if args.diff:
        a, b = (load_capture(resolve_side(side, Path(args.reports))) for side in args.diff)
        lines = diff_lines(a, b)
        output = "\n".join(lines) + "\n" if lines else "no differences\n"
    else:
        if args.python:
            data = capture_in(args.python)
        else:
            with activity("capturing this environment (imports torch and FlashInfer)"):
                data = capture()
        output = json.dumps(data, indent=2, sort_keys=True) + "\n" if args.json else render_text(data)
    emit("pcgkit env", args.out, output, force=args.force)
    return 0


def register(subparsers) -> None:
    env = add_command(subparsers, "env", "capture this environment for a bug report (or diff two captures)",
                      "Capture an environment for a bug report (secrets redacted), or print what differs between two "
                      "captures.", "--python ~/venvs/sglang/bin/python --out env.txt   # the environment that crashed",
                      "--json --out env.json", "--diff env-good.json env-bad.json")
    env.add_argument("--python", metavar="ENV",
                     help="capture the environment of this interpreter (the one that crashed, e.g. "
                          "~/venvs/sglang/bin/python) instead of the kit's own; it needs nothing of the kit installed")
    env.add_argument("--json", action="store_true", help=f"machine-readable capture ({ENV_SCHEMA})")
    env.add_argument("--out", help="write to this file instead of stdout ('-': stdout)")
    add_force(env)
    env.add_argument(
        "--diff", nargs=2, metavar=("A", "B"),
        help="print only what differs between two captures: env JSON, results.json, a report folder, or a "
             "matrix cell id (its folder under REPORTS/matrix/cells)",
    )
    env.add_argument("--reports", default="reports", help="where `pcgkit matrix` wrote its cells (default reports/)")
    env.set_defaults(func=_cmd_env)
