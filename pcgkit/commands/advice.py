"""`pcgkit advice show --sglang X [--flashinfer Y] [--torch Z] [--arch sm120] [--json]`: what the kit tells a user for
their versions, each statement with its sources and dates (the same answers triage, the README box, compat.md and the
drafts print). The commands that refresh those sources are the workshop's (lab/commands/: refresh-upstream,
read-releases, record-mode2).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys

from pcgkit.errors import UsageError

TODAY = _dt.date.today


def _show(args: argparse.Namespace) -> int:
    from pcgkit.advice import Versions, advise, load_evidence

    versions = Versions(args.sglang, args.flashinfer, args.torch)
    if not versions.known():
        raise UsageError("advice show: give at least one of --sglang, --flashinfer, --torch")
    answer = advise(versions, args.arch, load_evidence())
    if args.json:
        sys.stdout.write(json.dumps(answer.to_dict(), indent=2) + "\n")
        return 0
    for statement in answer.statements():
        sim = " (simulated)" if statement.simulated else ""
        print(f"- [{statement.topic}] {statement.text}{sim}")
        for source in statement.sources:
            print(f"    source: {source.kind}: {source.cite()}")
    return 0


def register(subparsers) -> None:
    advice = subparsers.add_parser(
        "advice", help="what the kit's measurements say for your versions, each statement with its source and date",
        description="What the kit tells a user for their versions, each statement with its sources and dates.",
        epilog="example:\n  %(prog)s show --sglang 0.5.11 --arch sm120")
    sub = advice.add_subparsers(dest="advice_command", required=True)
    show = sub.add_parser("show", help="the statements for these versions, each with its sources",
                          description="The advice model's statements for these versions, each with its sources and dates.",
                          epilog="examples:\n  %(prog)s --sglang 0.5.10 --arch sm120\n"
                                 "  %(prog)s --flashinfer 0.6.12 --arch sm_121 --json")
    show.add_argument("--sglang")
    show.add_argument("--flashinfer")
    show.add_argument("--torch")
    show.add_argument("--arch", help="GPU architecture, e.g. sm120, sm_121, 12.0, sm90 (default: answer per measured arch)")
    show.add_argument("--json", action="store_true", help="the answer as JSON (schema pcgkit.advice/1)")
    show.set_defaults(func=_show)
