"""The pcgkit command line: a pipeline of small functions that return data; errors caught once."""

from __future__ import annotations

import argparse
import importlib
import sys

from pcgkit import __version__
from pcgkit.errors import PcgkitError

# Each subcommand lives in its own module with `register(subparsers)`; the parser sets `func`.
COMMAND_MODULES: tuple[str, ...] = (
    "pcgkit.jobs.run",
    "pcgkit.matrix.cli",
    "pcgkit.matrix.backends.docker_cli",
    "pcgkit.bugreport.env_cli",
    "pcgkit.bugreport.repro",
    "pcgkit.bugreport.issuedraft",
    "pcgkit.jobs.parity",
    "pcgkit.e2e.cli",
    "pcgkit.sweep.cli",
    "pcgkit.ci.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pcgkit", description=__doc__)
    parser.add_argument("--version", action="version", version=f"pcgkit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except PcgkitError as exc:
        print(f"pcgkit: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("pcgkit: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
