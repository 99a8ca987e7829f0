"""Every subcommand's --help says what it is for in one line and shows an example that parses."""

from __future__ import annotations

import argparse
import shlex

import pytest

from pcgkit.cli import build_parser


def _subcommands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(path, parser) for every subcommand, nested ones included (docker lock, e2e checkpoint, ...)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from _subcommands(sub, (*path, name))


SUBCOMMANDS = sorted(_subcommands(build_parser()), key=lambda item: item[0])


def _examples(path: tuple[str, ...], sub: argparse.ArgumentParser) -> list[list[str]]:
    """The argv of each example line in the rendered epilog (`pcgkit <path> ...  # comment`)."""
    prefix = ["pcgkit", *path]
    lines = [line.split("#", 1)[0].strip() for line in sub.format_help().splitlines()]
    argvs = (shlex.split(line) for line in lines if line.startswith(" ".join(prefix)))
    return [argv[1:] for argv in argvs if argv[: len(prefix)] == prefix]


def test_the_walk_finds_every_registered_command():
    """The walk sees the top-level commands and the nested ones (so the checks below cover all of them)."""
    paths = {p for p, _ in SUBCOMMANDS}
    assert {("run",), ("matrix",), ("env",), ("docker",), ("docker", "command"), ("e2e", "checkpoint")} <= paths


@pytest.mark.parametrize(("path", "sub"), SUBCOMMANDS, ids=[" ".join(p) for p, _ in SUBCOMMANDS])
def test_help_has_a_one_line_purpose(path, sub):
    """The description is one sentence on one line (the purpose), not empty and not the help= fragment."""
    description = sub.description or ""
    assert description and "\n" not in description, f"pcgkit {' '.join(path)}: description must be one line"
    assert description[0].isupper() and description.endswith("."), description


@pytest.mark.parametrize(("path", "sub"), SUBCOMMANDS, ids=[" ".join(p) for p, _ in SUBCOMMANDS])
def test_help_shows_an_example_that_parses(path, sub):
    """The epilog holds at least one `pcgkit <command> ...` example, kept verbatim, and every example parses."""
    assert issubclass(sub.formatter_class, argparse.RawDescriptionHelpFormatter), "examples would be re-wrapped"
    examples = _examples(path, sub)
    assert examples, f"pcgkit {' '.join(path)} --help shows no example"
    for argv in examples:
        args = build_parser().parse_args(argv)  # SystemExit (a test error) if the example is not valid
        assert callable(getattr(args, "func", None)), argv


def test_every_command_is_in_exactly_one_audience_group():
    """`pcgkit --help` groups the commands by who runs them: each registered command in one group, none twice."""
    from pcgkit.cli import AUDIENCES

    listed = [name for _title, names in AUDIENCES for name in names]
    top = {p[0] for p, _ in SUBCOMMANDS if len(p) == 1}
    assert sorted(listed) == sorted(top), "add the command to one group of pcgkit.cli.AUDIENCES"
    helptext = build_parser().format_help()
    assert all(f"\n  {name} " in helptext for name in top)


def _lab_subcommands():
    from lab.cli import build_parser as lab_parser

    return sorted(_subcommands(lab_parser()), key=lambda item: item[0])


@pytest.mark.parametrize(("path", "sub"), _lab_subcommands(), ids=[" ".join(p) for p, _ in _lab_subcommands()])
def test_lab_help_has_a_purpose_and_an_example_that_parses(path, sub):
    """The workshop's commands hold to the same help: a one-line purpose and `bin/pcgkit lab ...` examples that parse."""
    from lab.cli import build_parser as lab_parser

    assert sub.description and "\n" not in sub.description and sub.description.endswith(".")
    prefix = ["bin/pcgkit", "lab", *path]
    lines = [line.split("#", 1)[0].strip() for line in sub.format_help().splitlines()]
    examples = [argv[2:] for argv in map(shlex.split, (ln for ln in lines if ln.startswith(" ".join(prefix))))]
    assert examples, f"bin/pcgkit lab {' '.join(path)} --help shows no example"
    for argv in examples:
        assert callable(getattr(lab_parser().parse_args(argv), "func", None)), argv
