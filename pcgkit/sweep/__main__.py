"""`python -m pcgkit.sweep`: the sweep alone, for an interpreter that has torch and flashinfer but not
the kit's report dependencies (a throwaway release venv, the GPU machine). Same arguments as
`pcgkit sweep`; a fatal error prints one line and exits with its code, like `pcgkit` itself."""

import argparse
import sys

from pcgkit.commands.sweep import register
from pcgkit.errors import PcgkitError

parser = argparse.ArgumentParser(prog="python -m pcgkit.sweep")
register(parser.add_subparsers(dest="command", required=True))
arguments = parser.parse_args(["sweep", *sys.argv[1:]])
try:
    sys.exit(arguments.func(arguments))
except PcgkitError as exc:
    print(f"pcgkit sweep: error: {exc}", file=sys.stderr)
    sys.exit(exc.exit_code)
