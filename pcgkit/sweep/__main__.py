"""`python -m pcgkit.sweep`: the sweep alone, for an interpreter that has torch and flashinfer but not
the kit's report dependencies (a throwaway release venv). Same arguments as `pcgkit sweep`."""

import argparse
import sys

from pcgkit.sweep.cli import register

parser = argparse.ArgumentParser(prog="python -m pcgkit.sweep")
register(parser.add_subparsers(dest="command", required=True))
arguments = parser.parse_args(["sweep", *sys.argv[1:]])
sys.exit(arguments.func(arguments))
