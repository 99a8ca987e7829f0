"""`pcgkit issue`: draft an upstream issue body from measured results (pcgkit.bugreport.issuedraft); never posts."""

from __future__ import annotations

import sys
from pathlib import Path

from pcgkit import resources
from pcgkit.bugreport.issuedraft import (
    TARGETS,
    build_draft,
    find_results_files,
    load_results,
    render_draft,
    upstream_inputs,
)
from pcgkit.commands import emit
from pcgkit.errors import UsageError
from pcgkit.util.argtypes import add_force
from pcgkit.util.atomic import read_json_object


def _newest_matrix_results(args):
    """With neither --results nor --compat: the newest matrix the kit can find (the last run under --reports, or
    a committed matrix sample), its results read back from its merged JUnit. Returns (results, cell of each
    result, sources, compat path), or None when no matrix is found."""
    from pcgkit.bugreport.evidence import default_candidates, newest_matrix, read_junit, results_from_junit

    samples = resources.samples_dir()
    if samples.is_relative_to(Path.cwd()):  # drafts name files as a reader of the repository sees them
        samples = samples.relative_to(Path.cwd())
    found = newest_matrix(default_candidates(Path(args.reports), samples))
    if found is None:
        return None
    try:
        pairs = results_from_junit(read_junit(found.junit))
    except (OSError, ValueError, KeyError) as exc:
        raise UsageError(f"{found.junit}: not a readable merged JUnit: {exc}") from exc
    print(f"pcgkit issue: evidence from the newest matrix found, {found.describe()} "
          "(--results/--compat to choose another)", file=sys.stderr)
    return ([r for _, r in pairs], {id(r): cell for cell, r in pairs}, [str(found.junit)], str(found.compat))


def draft_for(args):
    """The Draft the command renders for these arguments (newest matrix evidence unless --results/--compat)."""
    import dataclasses

    from pcgkit.matrix.plan import default_axis_releases

    newest = None if (args.results or args.compat) else _newest_matrix_results(args)
    cell_of: dict = {}
    if newest is not None:
        results, cell_of, sources, compat = newest
        env = None
    else:
        paths = find_results_files([Path(p) for p in (args.results or ["reports/results.json"])])
        results, env = load_results(paths)
        sources, compat = [str(p) for p in args.results or ["reports/results.json"]], args.compat
    if args.env:
        env = read_json_object(Path(args.env), "--env")  # missing / not JSON / not an object: one line
    matrix, links, ask = upstream_inputs(args.target, compat)
    draft = build_draft(args.target, results, sources, env, args.repro, matrix, links, ask, pin=args.pin,
                        releases=default_axis_releases())
    if id(draft.primary) in cell_of:
        draft = dataclasses.replace(draft, repro_command=f"pcgkit repro mode1 --cell {cell_of[id(draft.primary)]} "
                                                         "--out repro-mode1")
    return draft


def _cmd_issue(args) -> int:
    # redacted on the way out: emit writes a file through pcgkit.util.atomic, stdout through cli's redacting stream
    emit("pcgkit issue", args.out, render_draft(draft_for(args)), force=args.force,
         note=" (draft only: nothing was posted)")
    return 0


def register(subparsers) -> None:
    issue = subparsers.add_parser("issue", help="draft an upstream issue body from measured results (never posts)",
                               description="Draft an upstream issue body in that project's template shape, from measured results only; it never posts.",
                               epilog="example:\n  %(prog)s --target flashinfer --results reports/results.json --env env.json --repro repro-mode1/ --out issue.md")
    issue.add_argument("--target", required=True, choices=TARGETS, help="whose bug template to follow")
    issue.add_argument(
        "--results", action="append",
        help="results.json, or a folder searched for them (matrix cells); repeatable (default: the newest matrix "
             "found, the last run's under --reports or a committed sample, read from its merged JUnit)",
    )
    issue.add_argument("--reports", default="reports", help="where the last `pcgkit matrix`/`report` wrote (default reports/)")
    issue.add_argument("--pin", metavar="VERSION",
                       help="the target project's release to quote and pin (default: the newest measured release that "
                            "still fails)")
    issue.add_argument("--env", help="an env capture (`pcgkit env --json`) for the Environment section")
    issue.add_argument("--repro", help="path or link of the exported repro (`pcgkit repro mode1`) to cite")
    issue.add_argument("--compat", help="a matrix's compat.json: measured version ranges per case go into the draft "
                                        "(default with no --results: the newest matrix's)")
    issue.add_argument("--out", help="write the draft here instead of stdout ('-': stdout)")
    add_force(issue)
    issue.set_defaults(func=_cmd_issue)
