"""The exit-code contract of every pcgkit command, and the fatal errors that map onto it.

`ExitCode` is the one table (its meanings, rendered in docs/reference/exit-codes.md, are the workshop's:
lab/exit_codes.py; tests/faults/test_exit_codes.py pins both).
Errors are caught once, in cli.main(). A failing *case* is never one of these classes: it is a
verdict, and the run's status follows from the verdicts (`status_for_results`).

When several things are true at once, the most severe wins: interrupted > usage > environment >
error cells > behaviour changed > success (an incomplete table must not read as "only a change").
"""

from __future__ import annotations

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


SEVERITY: tuple[ExitCode, ...] = (
    ExitCode.SUCCESS,
    ExitCode.PREFLIGHT_WILL_CRASH,
    ExitCode.PREFLIGHT_UNKNOWN,
    ExitCode.CHANGED,
    ExitCode.ERROR_CELLS,
    ExitCode.ENVIRONMENT,
    ExitCode.USAGE,
    ExitCode.HANGUP,
    ExitCode.INTERRUPTED,
    ExitCode.QUIT,
    ExitCode.TERMINATED,
)


def worst(*codes: ExitCode) -> ExitCode:
    """The most severe of several statuses (see the module docstring). Pure."""
    return max(codes, key=SEVERITY.index, default=ExitCode.SUCCESS)


def status_for_results(results: Iterable[Any]) -> ExitCode:
    """The status a set of CaseResults gives: error rows, then changes (what the plugin fails a test for: a verdict
    that differs from its baseline, or a drift no baseline covers; not skips). Pure."""
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


class EnvironmentSetupError(PcgkitError):
    exit_code = ExitCode.ENVIRONMENT
    hint = "check the pins and that PyPI is reachable; the install log is kept beside the environment"


class ToolMissingError(EnvironmentSetupError):
    """A tool the kit runs (uv) is not on this machine."""

    hint = "install uv (`pip install uv`, or see https://docs.astral.sh/uv/) or put it on PATH, then rerun"


class ProbeFailedError(EnvironmentSetupError):
    """An interpreter the user named could not run the kit's probe at all (it wrote no answer): the environment's
    fault, not the pins' nor PyPI's; a probe that runs names the checkpoint's or the release's fault itself."""

    hint = (
        "that interpreter could not run the probe: its last output line is quoted; check that it starts and "
        "imports its own packages (`ENV -c 'import sglang'`)"
    )


class UnwritableOutputError(PcgkitError):
    """The reports folder is read-only, or the disk is full: nothing the command line can fix."""

    exit_code = ExitCode.ENVIRONMENT
    hint = "point --reports/--out at a writable folder with free space"


class RunAbortedError(PcgkitError):
    exit_code = ExitCode.ERROR_CELLS
    hint = "see the pytest log under reports/; rerun with --timeout larger if the machine is slow"


class Interrupted(BaseException):
    """A stop signal arrived: raised in the main thread once every child group has been stopped. A BaseException
    (like KeyboardInterrupt), so no `except Exception` in a stage swallows it."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> ExitCode:
        """128 + the signal's number: only the stop signals (pcgkit.util.signals.STOP_SIGNALS) are raised as this."""
        return ExitCode(128 + self.signum)
