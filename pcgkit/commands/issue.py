"""`pcgkit issue`: draft an upstream issue body from measured results (pcgkit.bugreport.issuedraft); never posts."""

from __future__ import annotations

import sys
from pathlib import Path

from pcgkit.bugreport.issuedraft import (
    TARGETS,
    build_draft,
    find_results_files,
    load_results,
    render_draft,
    upstream_inputs,
)
from pcgkit.util import atomic
from pcgkit.util.argtypes import add_force
from pcgkit.util.atomic import read_json_object
from pcgkit.util.redact import redact_text, secret_values


def _cmd_issue(args) -> int:
    import os

    paths = find_results_files([Path(p) for p in (args.results or ["reports/results.json"])])
    results, env = load_results(paths)
    if args.env:
        env = read_json_object(Path(args.env), "--env")  # missing / not JSON / not an object: one line
    sources = [str(p) for p in args.results or ["reports/results.json"]]
    matrix, links, ask = upstream_inputs(args.target, args.compat)
    draft = build_draft(args.target, results, sources, env, args.repro, matrix, links, ask)
    text = redact_text(render_draft(draft), secret_values(dict(os.environ)))
    if atomic.write_output(args.out or atomic.STDOUT, text, force=args.force) is not None:
        print(f"pcgkit issue: wrote {args.out} (draft only: nothing was posted)", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    issue = subparsers.add_parser("issue", help="draft an upstream issue body from measured results (never posts)",
                               description="Draft an upstream issue body in that project's template shape, from measured results only; it never posts.",
                               epilog="example:\n  %(prog)s --target flashinfer --results reports/results.json --env env.json --repro repro-mode1/ --out issue.md")
    issue.add_argument("--target", required=True, choices=TARGETS, help="whose bug template to follow")
    issue.add_argument(
        "--results", action="append",
        help="results.json, or a folder searched for them (matrix cells); repeatable (default reports/results.json)",
    )
    issue.add_argument("--env", help="an env capture (`pcgkit env --json`) for the Environment section")
    issue.add_argument("--repro", help="path or link of the exported repro (`pcgkit repro mode1`) to cite")
    issue.add_argument("--compat", help="a matrix's compat.json: measured version ranges per case go into the draft")
    issue.add_argument("--out", help="write the draft here instead of stdout ('-': stdout)")
    add_force(issue)
    issue.set_defaults(func=_cmd_issue)
