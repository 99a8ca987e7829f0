"""The workshop's command line: its commands (LAB_COMMANDS, one module each under lab/commands/), parsed and run
through pcgkit.cli's one error path, so a lab command fails exactly as a user command does (one line, exit codes)."""

from __future__ import annotations

import argparse

from pcgkit import cli

PROG = "bin/pcgkit lab"
DESCRIPTION = "The kit's workshop (a checkout only): tools that rewrite the kit's own data or measure the kit."

# Each command is one module with `register(subparsers)`, as in pcgkit/commands/; the parser sets `func`.
LAB_COMMANDS: tuple[str, ...] = (
    "lab.commands.refresh",
    "lab.commands.pins",
    "lab.commands.lock",
    "lab.commands.discover",
    "lab.commands.tox",
    "lab.commands.certificate_inputs",
    "lab.commands.certify",
    "lab.commands.certificates",
    "lab.commands.payload",
    "lab.commands.validate_launch",
    "lab.commands.refresh_upstream",
    "lab.commands.read_releases",
    "lab.commands.read_flashinfer",
    "lab.commands.record_mode2",
    "lab.commands.argaudit_gpu",
)


def build_parser() -> argparse.ArgumentParser:
    """The workshop's parser: LAB_COMMANDS' commands under `bin/pcgkit lab`."""
    return cli.build_parser(PROG, LAB_COMMANDS, DESCRIPTION, audiences=None)


def main(argv: list[str] | None = None) -> int:
    return cli.main(argv, build_parser())
