"""The CLI imports only the command module a command line names (pcgkit.cli.COMMAND_MODULE, modules_for)."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

from pcgkit.cli import COMMAND_MODULE, COMMAND_MODULES, build_parser, modules_for


def _registered(module: str) -> set[str]:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    importlib.import_module(module).register(sub)
    return set(sub.choices)


def test_the_table_names_each_command_with_the_module_that_registers_it():
    """Every command every module registers is in the table under that module, and nothing else is."""
    registered = {name: module for module in COMMAND_MODULES for name in _registered(module)}
    assert registered == COMMAND_MODULE


def test_a_named_command_needs_its_module_only_and_anything_else_needs_all():
    """`matrix --cell x` needs the matrix module; --help, --version, a misspelling or nothing need every module."""
    assert modules_for(["matrix", "--cell", "seed"]) == ("pcgkit.commands.matrix",)
    assert modules_for(["bisect", "--help"]) == ("pcgkit.commands.matrix",)
    for argv in ([], ["--help"], ["--version"], ["matrx", "--cell", "seed"]):
        assert modules_for(argv) == COMMAND_MODULES


def test_one_command_parses_as_it_does_with_every_module_loaded():
    """The parser of one module gives the same Namespace as the full one for that command's line."""
    argv = ["matrix", "--cell", "seed", "--jobs", "1"]
    assert vars(build_parser(modules=modules_for(argv)).parse_args(argv)) == vars(build_parser().parse_args(argv))


def test_the_matrix_command_line_does_not_import_the_other_commands():
    """A fresh interpreter running `matrix --help` never imports the triage or preflight command modules."""
    code = ("import sys, contextlib, io\nfrom pcgkit import cli\n"
            "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
            "    cli.main(['matrix', '--help'])\n"
            "print(sorted(m for m in sys.modules if m.startswith('pcgkit.commands.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "pcgkit.commands.matrix" in out
    assert "pcgkit.commands.triage" not in out and "pcgkit.commands.preflight" not in out
