"""argparse value types that reject nonsense at parse time (a one-line usage error, exit 2). Pure."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """--jobs N: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def positive_seconds(text: str) -> float:
    """--timeout S: a finite number of seconds above zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} must be a positive, finite number of seconds")
    return value


def deprecated_alias(new_flag: str) -> type[argparse.Action]:
    """An argparse action for an old spelling kept working: stores into the new option's dest and says
    once, on stderr, which spelling to use (one vocabulary across subcommands; old scripts keep running)."""

    class DeprecatedAlias(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            import sys

            print(f"{parser.prog}: {option_string} is deprecated: use {new_flag} (same meaning)", file=sys.stderr)
            setattr(namespace, self.dest, values)

    return DeprecatedAlias
