"""The exit-code table the docs render (docs/reference/exit-codes.md, by docs/gen_facts.py): each
pcgkit.errors.ExitCode with its name and meaning, in the order a CI system checks them. The workshop's, read by
the docs and tests/faults/test_exit_codes.py (which pins that every code is here once), not by a user command.
Pure."""

from __future__ import annotations

import dataclasses

from pcgkit.errors import ExitCode


@dataclasses.dataclass(frozen=True)
class ExitCodeDoc:
    code: ExitCode
    name: str
    meaning: str


EXIT_CODES: tuple[ExitCodeDoc, ...] = (
    ExitCodeDoc(
        ExitCode.SUCCESS,
        "success",
        "every verdict matched its baseline (XFAIL for a known bug that still reproduces, PASS for a fix), "
        "or the command did what it was asked",
    ),
    ExitCodeDoc(
        ExitCode.CHANGED,
        "behaviour changed",
        "at least one case's verdict differs from its baseline in fixtures/expectations.toml "
        "(a fix landed, a drift, a regression), or bisect found no boundary; no error cells",
    ),
    ExitCodeDoc(
        ExitCode.USAGE,
        "usage error",
        "the command line or an input file is wrong: unknown option, bad matrix file (the field and line "
        "are named), a missing or malformed JSON input, an output path of the wrong kind",
    ),
    ExitCodeDoc(
        ExitCode.ERROR_CELLS,
        "error cells",
        "the kit or an install broke for at least one cell or case (verdict `error`, an unreadable "
        "cell.json, a report that fails its schema): the table is incomplete, it says nothing about the bug",
    ),
    ExitCodeDoc(
        ExitCode.ENVIRONMENT,
        "environment error",
        "this machine cannot do the job: an interpreter or uv is missing, an environment cannot be built, "
        "the reports folder is read-only or the disk is full",
    ),
    ExitCodeDoc(
        ExitCode.PREFLIGHT_WILL_CRASH,
        "preflight: will crash",
        "the preflight command traced what the launch would compile and it raises dynamo's Unsupported under "
        "fullgraph: the server would die in piecewise capture",
    ),
    ExitCodeDoc(
        ExitCode.PREFLIGHT_UNKNOWN,
        "preflight: unknown",
        "the preflight command could not resolve or judge the launch (the answer names what: a checkpoint "
        "that is not a local folder, an unknown architecture, a method that needs a GPU-only op)",
    ),
    ExitCodeDoc(
        ExitCode.HANGUP, "hung up (SIGHUP)", "as for SIGINT; what a closed terminal or a dropped ssh session sends"
    ),
    ExitCodeDoc(
        ExitCode.INTERRUPTED,
        "interrupted (SIGINT)",
        "Ctrl-C: every child process group was stopped, finished cells were kept, the report was written "
        'for them with the unfinished cells as `error` rows "interrupted"',
    ),
    ExitCodeDoc(ExitCode.QUIT, "quit (SIGQUIT)", "as for SIGINT; Ctrl-\\ in a terminal"),
    ExitCodeDoc(
        ExitCode.TERMINATED, "terminated (SIGTERM)", "as for SIGINT; what a CI system sends when a job is cancelled"
    ),
)
