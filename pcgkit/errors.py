"""Fatal errors, one class per cause, each with its own exit code and a next step.

Caught once, in cli.main(). A failing *case* is never one of these: it is a verdict.
"""

from __future__ import annotations


class PcgkitError(Exception):
    exit_code = 2
    hint = ""

    def __str__(self) -> str:
        message = super().__str__()
        return f"{message}\n  next: {self.hint}" if self.hint else message


class UsageError(PcgkitError):
    exit_code = 2


class EnvironmentSetupError(PcgkitError):
    exit_code = 3
    hint = "check the pins and that PyPI is reachable; the install log is kept beside the environment"


class RunAbortedError(PcgkitError):
    exit_code = 4
    hint = "see the pytest log under reports/; rerun with --timeout larger if the machine is slow"
