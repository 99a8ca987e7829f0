"""The pcgkit command line: a pipeline of small functions that return data; errors caught once.

main() is the one error path: every user mistake becomes one line on stderr ("pcgkit: error: ...",
redacted, control characters stripped) and the exit status of pcgkit.errors.EXIT_CODES; the stop
policy (pcgkit.util.signals) is installed around every command, so Ctrl-C or SIGTERM stops the
whole process tree and exits 130 / 143 without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from pcgkit import __version__
from pcgkit.errors import ExitCode, Interrupted, PcgkitError
from pcgkit.util import signals
from pcgkit.util.redact import redact_text, secret_values
from pcgkit.util.sanitize import one_line

# Each subcommand lives in its own module with `register(subparsers)`; the parser sets `func`.
COMMAND_MODULES: tuple[str, ...] = (
    "pcgkit.jobs.run",
    "pcgkit.matrix.cli",
    "pcgkit.matrix.backends.docker_cli",
    "pcgkit.bugreport.env_cli",
    "pcgkit.bugreport.repro",
    "pcgkit.bugreport.issuedraft",
    "pcgkit.jobs.parity",
    "pcgkit.e2e.cli",
    "pcgkit.sweep.cli",
    "pcgkit.triage.cli",
    "pcgkit.ci.cli",
)


class OneLineParser(argparse.ArgumentParser):
    """argparse with the kit's one-line error (usage goes to --help), still exit status 2.

    It also keeps each (sub)command's description and example epilog as written: subparsers
    inherit the class, so every `--help` shows its examples with their line breaks.
    """

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(int(ExitCode.USAGE), f"{error_line(f'{self.prog}: {message}')} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="pcgkit", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"pcgkit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(sub)
    return parser


def error_line(message: object) -> str:
    """The one line main() prints for an error: redacted, no control characters, no newlines."""
    return "pcgkit: error: " + one_line(redact_text(str(message), secret_values(dict(os.environ))))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # argparse exits 2 on a usage error, as the table says
    try:
        with signals.stop_policy():
            return int(args.func(args))
    except Interrupted as exc:
        print(f"pcgkit: interrupted by {exc}: child processes stopped; finished results kept", file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:  # a Ctrl-C that arrived before the policy was installed
        print("pcgkit: interrupted by SIGINT", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except PcgkitError as exc:
        print(error_line(exc), file=sys.stderr)
        return int(exc.exit_code)
    except BrokenPipeError:  # `pcgkit env | head`: the reader left, nothing to report
        sys.stderr.close()
        return int(ExitCode.SUCCESS)
    except OSError as exc:  # a path the user gave (read-only, a folder, missing): never a traceback
        error = path_error(exc)
        print(error_line(error), file=sys.stderr)
        return int(error.exit_code)


def path_error(exc: OSError) -> PcgkitError:
    """An OSError from a file the command touched, as the kit's typed error for its exit status."""
    import errno

    from pcgkit.errors import UsageError
    from pcgkit.util.atomic import as_kit_error

    path = exc.filename or "?"
    if exc.errno == errno.ENOENT:
        return UsageError(f"{path}: no such file or folder")
    return as_kit_error(path, exc)


if __name__ == "__main__":
    sys.exit(main())
