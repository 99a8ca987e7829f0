"""`pcgkit advice show --sglang X [--flashinfer Y] [--torch Z] [--arch sm120] [--verbose|--json] [-- LAUNCH FLAGS]`:
the kit's one answer (pcgkit.advice), one line per question with its sources' kind and date; `--verbose` every
statement whole. An unknown release, architecture or flag is one line (exit 2). Refreshing the sources is lab's."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from pcgkit.errors import UsageError

WIDTH = 80


def _launch(args: argparse.Namespace) -> tuple[str, ...] | None:
    flags = [f for f in args.launch if f != "--"]
    return tuple(flags) if flags else None


def _show(args: argparse.Namespace) -> int:
    from pcgkit.advice import UnknownInput, Versions, advise, check_input, load_evidence
    from pcgkit.advice.render import answer_lines

    versions = Versions(args.sglang, args.flashinfer, args.torch)
    if not versions.known():
        raise UsageError("advice show: give at least one of --sglang, --flashinfer, --torch")
    evidence = load_evidence()
    flags = _launch(args)
    try:
        check_input(evidence, versions, args.arch, flags or ())
    except UnknownInput as exc:
        raise UsageError(f"advice show: {exc}") from None
    answer = advise(versions, args.arch, evidence, flags)
    if args.json:
        sys.stdout.write(json.dumps(answer.to_dict(), indent=2) + "\n")
        return 0
    if args.verbose:
        for statement in answer.statements():
            print(f"- [{statement.topic}] {statement.text}{' (simulated)' if statement.simulated else ''}")
            print("\n".join(f"    source: {s.kind}: {s.cite()}" for s in statement.sources))
        return 0
    for line in answer_lines(answer):
        indent = "  " if line.startswith("  ") else ""
        print("\n".join(textwrap.wrap(line, WIDTH, initial_indent=indent, subsequent_indent=indent + "    ")))
    return 0


def register(subparsers) -> None:
    advice = subparsers.add_parser(
        "advice", help="what the kit's measurements say for your versions, each statement with its source and date",
        description="What the kit tells a user for their versions, each statement with its sources and dates.",
        epilog="example:\n  %(prog)s show --sglang 0.5.11 --arch sm120")
    sub = advice.add_subparsers(dest="advice_command", required=True)
    show = sub.add_parser("show", help="the answer for these versions, one line per question with its sources",
                          description="The kit's answer for these versions (and, after --, a launch's flags): affected, "
                                      "what to pass, what it costs, where it is fixed, which call is safe.",
                          epilog="examples:\n  %(prog)s --sglang 0.5.10 --arch sm120\n"
                                 "  %(prog)s --sglang 0.5.11 -- --enable-breakable-cuda-graph\n"
                                 "  %(prog)s --flashinfer 0.6.12 --arch sm_121 --json")
    show.add_argument("--sglang")
    show.add_argument("--flashinfer")
    show.add_argument("--torch")
    show.add_argument("--arch", help="GPU architecture, e.g. sm120, sm_121, 12.0, sm90 (default: answer per measured arch)")
    show.add_argument("--verbose", "-v", action="store_true", help="every statement whole, each source with its date")
    show.add_argument("--json", action="store_true", help="the answer as JSON (schema pcgkit.advice/2)")
    show.add_argument("launch", nargs=argparse.REMAINDER, help="the launch's flags, after --")
    show.set_defaults(func=_show)
