"""argparse value types that reject nonsense at parse time (a one-line usage error, exit 2). Pure."""

from __future__ import annotations

import argparse
import re


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


# (name, lowest, highest, the names that may stand for its numbers) of the five POSIX cron fields GitHub Actions'
# `schedule` accepts. The names, in any case: docs.github.com, "Events that trigger workflows", schedule:
# "JAN-DEC", "SUN-SAT"; read 2026-12-05.
CRON_FIELDS = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")),
    ("day of week", 0, 6, ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")),
)
_CRON_PART_RE = re.compile(r"(\*|(\d+)(?:-(\d+))?)(?:/(\d+))?")


def _cron_numbers(field: str, names: tuple[str, ...], low: int) -> str:
    """A field with its month or weekday names as numbers; any other word is left for the check to refuse."""

    def number(match: re.Match[str]) -> str:
        word = match.group(0).upper()
        return str(names.index(word) + low) if word in names else match.group(0)

    return re.sub(r"[A-Za-z]+", number, field)


def cron_schedule(text: str) -> str:
    """--cron: five POSIX cron fields (numbers, '*', ranges, lists, steps), each within its range:
    a malformed schedule is refused here instead of written into an invalid workflow."""
    fields = text.split()
    if len(fields) != len(CRON_FIELDS):
        raise argparse.ArgumentTypeError(
            f"{text!r}: a cron schedule has 5 fields (minute hour day month weekday), not {len(fields)}; "
            "e.g. '17 3 * * 1'"
        )
    for value, (name, low, high, names) in zip(fields, CRON_FIELDS):
        for part in _cron_numbers(value, names, low).split(","):
            match = _CRON_PART_RE.fullmatch(part)
            numbers = [int(n) for n in (match.groups()[1:] if match else ()) if n is not None]
            if match is None or any(not low <= n <= high for n in numbers[:2]) or match.group(4) == "0":
                spelled = f" or {names[0]}-{names[-1]}" if names else ""
                raise argparse.ArgumentTypeError(
                    f"{text!r}: the {name} field {value!r} is not valid cron "
                    f"(numbers {low}-{high}{spelled}, '*', ranges a-b, lists, steps /n)"
                )
    return " ".join(fields)


def marker_expression(known: tuple[str, ...]):
    """-m EXPR: a pytest marker expression (and/or/not, parentheses) naming only `known` markers: a typo would
    otherwise select nothing, and the run would replace a complete run's results with `error` rows."""

    def parse(text: str) -> str:
        from _pytest.mark.expression import Expression

        try:  # pytest's own grammar (SyntaxError in pytest 9, ParseError before)
            Expression.compile(text)
        except Exception as exc:  # noqa: BLE001 - any refusal of the grammar is the user's typo
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a marker expression ({getattr(exc, 'msg', exc)})"
            ) from None
        # pytest's identifier token; evaluate() would short-circuit past names, so they are read off the text
        names = [n for n in re.findall(r"(?:\w|:|\+|-|\.|\[|\]|\\|/)+", text) if n not in ("and", "or", "not")]
        unknown = [n for n in names if n not in known]
        if unknown:
            raise argparse.ArgumentTypeError(
                f"{text!r}: no marker {', '.join(map(repr, unknown))}; the markers are {', '.join(known)}"
            )
        return text

    return parse


FORCE_HELP = "replace files in the output that pcgkit did not write (or that changed since it wrote them)"


def add_force(parser: argparse.ArgumentParser) -> None:
    """--force for a command that writes where the user points (the one spelling, help and meaning)."""
    parser.add_argument("--force", action="store_true", help=FORCE_HELP)


def deprecated_alias(new_flag: str) -> type[argparse.Action]:
    """An argparse action for an old spelling kept working: stores into the new option's dest and says
    once, on stderr, which spelling to use (one vocabulary across subcommands; old scripts keep running)."""

    class DeprecatedAlias(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            import sys

            print(f"{parser.prog}: {option_string} is deprecated: use {new_flag} (same meaning)", file=sys.stderr)
            setattr(namespace, self.dest, values)

    return DeprecatedAlias
