"""`bin/pcgkit lab refresh`: after a new SGLang release, the four generators of the data that follows it, in order.

1. pins: each release's Requires-Dist (`bin/pcgkit lab pins`, fixtures/sglang_requires.toml),
   from which the planner derives the new release's cell;
2. locks: the cells re-resolved into their committed locks (`bin/pcgkit lab lock`, fixtures/locks/);
3. launch validation: the e2e launch parsed by each release's own parser
   (`bin/pcgkit lab validate-launch`, fixtures/sglang_launch_validation.json);
4. docs: the generated blocks re-rendered from that data (`docs/gen_facts.py`).
plan_refresh is pure; each step runs through pcgkit.util.proc, and the first that fails stops the rest.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pcgkit import resources
from pcgkit.errors import ExitCode, UsageError
from pcgkit.util import proc


def plan_refresh(python: str, kit_root: Path, sglang: tuple[str, ...] = ()) -> list[tuple[str, list[str]]]:
    """The four (what, argv) steps, in order; `sglang` narrows the locks and the validation to those releases. Pure."""
    lab = [python, "-m", "lab"]
    cells = [arg for version in sglang for arg in ("--cell", f"sglang-{version}")]
    releases = [arg for version in sglang for arg in ("--sglang", version)]
    return [
        ("pins", [*lab, "pins"]),
        ("locks", [*lab, "lock", *cells]),
        ("launch validation", [*lab, "validate-launch", *releases]),
        ("docs", [python, str(kit_root / "docs" / "gen_facts.py")]),
    ]


def _cmd_refresh(args) -> int:
    root = resources.checkout_root()
    if root is None:
        raise UsageError("refresh rewrites the checkout's fixtures/ and docs/: run it in a checkout")
    steps = plan_refresh(sys.executable, root, tuple(args.sglang or ()))
    for what, argv in steps:
        if args.dry_run:
            print(f"{what}: {' '.join(argv)}")
            continue
        done = proc.run(argv, cwd=root)
        if not done.ok:
            print(f"bin/pcgkit lab refresh: {what} {done.describe_failure()}; later steps not run", file=sys.stderr)
            return int(ExitCode.ERROR_CELLS)
    return int(ExitCode.SUCCESS)


def register(subparsers) -> None:
    cmd = subparsers.add_parser(
        "refresh", help="after a new SGLang release: pins, locks, launch validation, docs (needs PyPI)",
        description="After a new SGLang release, run the four generators of the data that follows it: pins, locks, launch validation, docs.",
        epilog="examples:\n  %(prog)s --dry-run          # the four commands, run nothing\n"
               "  %(prog)s --sglang 0.5.24   # a new release: its cell's lock and launch validation only",
    )
    cmd.add_argument("--sglang", action="append", metavar="VERSION",
                     help="only this SGLang release's lock and launch validation (repeatable; default: all)")
    cmd.add_argument("--dry-run", action="store_true", help="print the four commands instead of running them")
    cmd.set_defaults(func=_cmd_refresh)
