"""The top floor: every command's parser and handler, one module per command (pcgkit.cli lists them).

A command module reads the arguments, asks the stage packages below for values, and hands the
catalog's cases, the chosen backend and the writers down to them; no stage imports a command.
Its one output goes through `emit` (the workshop's commands too: lab.commands.write_fixture).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from pcgkit.util import atomic


def emit(prog: str, out: str | Path | None, text: str, *, force: bool = False, note: str = "") -> Path | None:
    """A command's one output: the file `out` names (stdout when None or '-'), written whole or not at all and never
    over a file the kit did not write unless `force` (pcgkit.util.atomic.write_output); then, for a file, one line on
    stderr saying so ("pcgkit env: wrote env.txt"), so stdout holds only the output itself."""
    written = atomic.write_output(out or atomic.STDOUT, text, force=force)
    if written is not None:
        print(f"{prog}: wrote {out}{note}", file=sys.stderr)
    return written


def add_command(subparsers, name: str, help: str, description: str, *examples: str, **kwargs):
    """A command's parser: its one-line help, its description and its examples (each what follows `%(prog)s`,
    shown under "example:" or "examples:" in --help)."""
    heading = "example:" if len(examples) == 1 else "examples:"
    epilog = heading + "".join(f"\n  %(prog)s{' ' + e if e else ''}" for e in examples)
    return subparsers.add_parser(name, help=help, description=description, epilog=epilog, **kwargs)


def wrapped(text: str, indent: str = "", *, command: bool = False) -> list[str]:
    """`text` in rows at most 80 columns wide, whole, each after the first two further in than `indent`; a `command`
    to copy never splits a word (a long log path)."""
    return textwrap.wrap(text, 80, initial_indent=indent, subsequent_indent=indent + "  ", break_on_hyphens=False,
                         break_long_words=not command) or [indent]
