"""`bin/pcgkit lab pins`: re-read each SGLang release's Requires-Dist from PyPI into fixtures/sglang_requires.toml
(lab.matrix.pins_refresh), from which the planner derives each release's cell."""

from __future__ import annotations

from pathlib import Path

from lab.matrix import pins_refresh
from pcgkit.matrix import pins as pins_mod


def _cmd_pins(args) -> int:
    index = pins_refresh.refresh(Path(args.pins))
    print(f"bin/pcgkit lab pins: {len(index.releases)} sglang releases cached in {args.pins}")
    return 0


def register(subparsers) -> None:
    cmd = subparsers.add_parser(
        "pins", help="re-read each SGLang release's Requires-Dist from PyPI (fixtures/sglang_requires.toml)",
        description="Re-read each SGLang release's declared requirements from PyPI into the pins file the planner reads.",
        epilog="example:\n  %(prog)s")
    cmd.add_argument("--pins", default=str(pins_mod.DEFAULT_PINS_FILE), help="the pins file to rewrite")
    cmd.set_defaults(func=_cmd_pins)
