"""The exit-code contract of every pcgkit command, and the fatal errors that map onto it.

`EXIT_CODES` is the one table: each code with a docstring-like description, in the order a CI
system checks them (docs render it from here; tests in tests/faults/test_exit_codes.py pin it).
Errors are caught once, in cli.main(). A failing *case* is never one of these classes: it is a
verdict, and the run's status follows from the verdicts (`status_for_results`).

When several things are true at once, the most severe wins: interrupted > usage > environment >
error cells > behaviour changed > success (an incomplete table must not read as "only a change").
"""

from __future__ import annotations

import dataclasses
import enum
import signal
from collections.abc import Iterable
from typing import Any


class ExitCode(enum.IntEnum):
    SUCCESS = 0
    CHANGED = 1
    USAGE = 2
    ERROR_CELLS = 3
    ENVIRONMENT = 4
    PREFLIGHT_WILL_CRASH = 10
    PREFLIGHT_UNKNOWN = 11
    HANGUP = 129  # 128 + SIGHUP
    INTERRUPTED = 130  # 128 + SIGINT
    QUIT = 131  # 128 + SIGQUIT
    TERMINATED = 143  # 128 + SIGTERM


@dataclasses.dataclass(frozen=True)
class ExitCodeDoc:
    code: ExitCode
    name: str
    meaning: str


EXIT_CODES: tuple[ExitCodeDoc, ...] = (
    ExitCodeDoc(ExitCode.SUCCESS, "success",
                "every verdict matched its baseline (XFAIL for a known bug that still reproduces, PASS for a fix), "
                "or the command did what it was asked"),
    ExitCodeDoc(ExitCode.CHANGED, "behaviour changed",
                "at least one case's verdict differs from its baseline in fixtures/expectations.toml "
                "(a fix landed, a drift, a regression), or bisect found no boundary; no error cells"),
    ExitCodeDoc(ExitCode.USAGE, "usage error",
                "the command line or an input file is wrong: unknown option, bad matrix file (the field and line "
                "are named), a missing or malformed JSON input, an output path of the wrong kind"),
    ExitCodeDoc(ExitCode.ERROR_CELLS, "error cells",
                "the kit or an install broke for at least one cell or case (verdict `error`, an unreadable "
                "cell.json, a report that fails its schema): the table is incomplete, it says nothing about the bug"),
    ExitCodeDoc(ExitCode.ENVIRONMENT, "environment error",
                "this machine cannot do the job: an interpreter or uv is missing, an environment cannot be built, "
                "the reports folder is read-only or the disk is full"),
    ExitCodeDoc(ExitCode.PREFLIGHT_WILL_CRASH, "preflight: will crash",
                "the preflight command traced what the launch would compile and it raises dynamo's Unsupported under "
                "fullgraph: the server would die in piecewise capture"),
    ExitCodeDoc(ExitCode.PREFLIGHT_UNKNOWN, "preflight: unknown",
                "the preflight command could not resolve or judge the launch (the answer names what: a checkpoint "
                "that is not a local folder, an unknown architecture, a method that needs a GPU-only op)"),
    ExitCodeDoc(ExitCode.HANGUP, "hung up (SIGHUP)",
                "as for SIGINT; what a closed terminal or a dropped ssh session sends"),
    ExitCodeDoc(ExitCode.INTERRUPTED, "interrupted (SIGINT)",
                "Ctrl-C: every child process group was stopped, finished cells were kept, the report was written "
                "for them with the unfinished cells as `error` rows \"interrupted\""),
    ExitCodeDoc(ExitCode.QUIT, "quit (SIGQUIT)", "as for SIGINT; Ctrl-\\ in a terminal"),
    ExitCodeDoc(ExitCode.TERMINATED, "terminated (SIGTERM)",
                "as for SIGINT; what a CI system sends when a job is cancelled"),
)

SEVERITY: tuple[ExitCode, ...] = (
    ExitCode.SUCCESS, ExitCode.PREFLIGHT_WILL_CRASH, ExitCode.PREFLIGHT_UNKNOWN,
    ExitCode.CHANGED, ExitCode.ERROR_CELLS, ExitCode.ENVIRONMENT, ExitCode.USAGE,
    ExitCode.HANGUP, ExitCode.INTERRUPTED, ExitCode.QUIT, ExitCode.TERMINATED,
)


def worst(*codes: ExitCode) -> ExitCode:
    """The most severe of several statuses (see the module docstring). Pure."""
    return max(codes, key=SEVERITY.index, default=ExitCode.SUCCESS)


def exit_code_for_signal(signum: int) -> ExitCode:
    """128 + the signal's number, for each stop signal (pcgkit.util.signals.STOP_SIGNALS)."""
    by_signal: dict[int, ExitCode] = {signal.SIGTERM: ExitCode.TERMINATED, signal.SIGHUP: ExitCode.HANGUP,
                                      signal.SIGQUIT: ExitCode.QUIT}
    return by_signal.get(signum, ExitCode.INTERRUPTED)


def status_for_results(results: Iterable[Any]) -> ExitCode:
    """The status a set of CaseResults gives: error rows, then changes against the baseline. Pure.

    A change is what the plugin fails a test for: a verdict that differs from its recorded baseline,
    or a drift where no baseline covers the versions. Skips and errors are not changes.
    """
    from pcgkit.values.verdict import Verdict

    status = ExitCode.SUCCESS
    for result in results:
        verdict = result.verdict
        if verdict is Verdict.ERROR:
            return ExitCode.ERROR_CELLS
        if verdict is Verdict.SKIPPED:
            continue
        expected = result.expected
        if (expected is not None and verdict.value != expected) or (expected is None and verdict is Verdict.DRIFTED):
            status = ExitCode.CHANGED
    return status


class PcgkitError(Exception):
    exit_code: int = ExitCode.USAGE
    hint = ""

    def __str__(self) -> str:
        message = super().__str__()
        return f"{message}; next: {self.hint}" if self.hint else message


class UsageError(PcgkitError):
    exit_code = ExitCode.USAGE


class OutputPathError(UsageError):
    """An output path of the wrong kind (a folder where a file goes, a file where a folder goes)."""

    exit_code = ExitCode.USAGE


class EnvironmentSetupError(PcgkitError):
    exit_code = ExitCode.ENVIRONMENT
    hint = "check the pins and that PyPI is reachable; the install log is kept beside the environment"


class ToolMissingError(EnvironmentSetupError):
    """A tool the kit runs (uv) is not on this machine."""

    hint = "install uv (`pip install uv`, or see https://docs.astral.sh/uv/) or put it on PATH, then rerun"


class ProbeFailedError(EnvironmentSetupError):
    """An interpreter the user named could not run the kit's probe at all (it wrote no answer): the environment's
    fault, not the pins' nor PyPI's; a probe that runs names the checkpoint's or the release's fault itself."""

    hint = ("that interpreter could not run the probe: its last output line is quoted; check that it starts and "
            "imports its own packages (`ENV -c 'import sglang'`)")


class UnwritableOutputError(PcgkitError):
    """The reports folder is read-only, or the disk is full: nothing the command line can fix."""

    exit_code = ExitCode.ENVIRONMENT
    hint = "point --reports/--out at a writable folder with free space"


class RunAbortedError(PcgkitError):
    exit_code = ExitCode.ERROR_CELLS
    hint = "see the pytest log under reports/; rerun with --timeout larger if the machine is slow"


class Interrupted(BaseException):
    """SIGINT/SIGTERM arrived: raised in the main thread once every child group has been stopped.

    A BaseException (like KeyboardInterrupt), so no `except Exception` in a stage swallows it.
    """

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> ExitCode:
        return exit_code_for_signal(self.signum)
