"""The pcgkit command line: a pipeline of small functions that return data; errors caught once.

main() is the one error path: every user mistake becomes one line on stderr ("pcgkit: error: ...",
redacted, control characters stripped) and the exit status of pcgkit.errors.ExitCode; the stop
policy (pcgkit.util.signals) is installed around every command, so Ctrl-C or SIGTERM stops the
whole process tree and exits 130 / 143 without a traceback. A bug in the kit itself (any other
exception) is one line too, "pcgkit: internal error: ...", exit 3, with the redacted traceback
saved to a file the line names; PCGKIT_DEBUG=1 prints the traceback as well.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import time
import traceback
from pathlib import Path

from pcgkit import __version__
from pcgkit.errors import ExitCode, Interrupted, PcgkitError
from pcgkit.util import signals
from pcgkit.util.redact import RedactingStream, redact_text, secret_values
from pcgkit.util.sanitize import one_line

# Which module of the top floor (pcgkit/commands/, each with `register(subparsers)`) registers each command name: a
# command line that names one imports only that module (a command module pulls in its stage, some of them pytest,
# jinja2 or rich: ~1 CPU s for all of them). tests/test_cli_lazy.py holds this table to what the modules register.
COMMAND_MODULE: dict[str, str] = {
    name: f"pcgkit.commands.{'matrix' if name == 'bisect' else name}"
    for name in ("run", "matrix", "bisect", "report", "docker", "env", "repro", "issue", "parity", "e2e", "sweep",
                 "triage", "preflight", "advice", "ci", "cache")
}
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMAND_MODULE.values()))  # the parser sets each `func`


class OneLineParser(argparse.ArgumentParser):
    """argparse with the kit's one-line error (exit status 2), and each (sub)command's description and examples
    shown as written (subparsers inherit the class)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(int(ExitCode.USAGE), f"{error_line(f'{self.prog}: {message}')} (see `{self.prog} --help`)\n")


# `pcgkit --help` lists the commands by who runs them (each command in exactly one group; tests/test_cli_help.py).
AUDIENCES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("your SGLang crashed, or you are about to launch or upgrade", ("triage", "preflight", "advice", "env")),
    ("reproduce it and report it upstream", ("run", "repro", "issue", "parity")),
    ("run the version matrix, its reports and CI", ("matrix", "bisect", "report", "ci", "docker", "sweep", "e2e")),
    ("the kit's own environments on this machine", ("cache",)),
)


def build_parser(prog: str = "pcgkit", modules: tuple[str, ...] = COMMAND_MODULES,
                 description: str = "A regression harness and bug-report kit for torch.compile(fullgraph=True) "
                                     "failures in SGLang's piecewise CUDA graphs (FlashInfer NVFP4, SM120).",
                 audiences: tuple[tuple[str, tuple[str, ...]], ...] | None = AUDIENCES) -> argparse.ArgumentParser:
    """The parser of `modules`' commands (each module's `register(subparsers)`); lab/ builds its own from its list.
    With `audiences`, --help lists the commands in those groups instead of one flat list."""
    parser = OneLineParser(prog=prog, description=description)
    parser.add_argument("--version", action="version", version=f"pcgkit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    for module_name in modules:
        importlib.import_module(module_name).register(sub)
    if audiences:
        helps = {action.dest: action.help or "" for action in sub._choices_actions}
        sub._choices_actions.clear()  # listed below, by audience
        sub.help = "one of the commands below; `COMMAND --help` for its options and examples"
        parser.epilog = grouped_commands(helps, audiences)
    return parser


def grouped_commands(helps: dict[str, str], audiences: tuple[tuple[str, tuple[str, ...]], ...]) -> str:
    """The commands by audience, each with its one-line help, as --help prints them. Pure."""
    width = max(map(len, helps), default=0)
    lines: list[str] = []
    for title, names in audiences:
        lines += [f"{title}:"] + [f"  {name:<{width}}  {helps[name]}" for name in names if name in helps] + [""]
    return "\n".join(lines).rstrip()


def error_line(message: object) -> str:
    """The one line main() prints for an error: redacted, no control characters, no newlines."""
    return "pcgkit: error: " + one_line(redact_text(str(message), secret_values(dict(os.environ))))


def main(argv: list[str] | None = None, parser: argparse.ArgumentParser | None = None) -> int:
    """Run one command line through the one error path; `parser` defaults to the user CLI (lab/ passes its own)."""
    with redacted_output():
        if parser is None:
            parser = build_parser(modules=modules_for(sys.argv[1:] if argv is None else argv))
        args = parser.parse_args(argv)  # argparse exits 2 on a usage error, as the table says
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
        except Exception as exc:  # noqa: BLE001 - a kit bug: one line for the user, the traceback kept for the report
            return internal_error(exc, args)


@contextlib.contextmanager
def redacted_output():
    """stdout and stderr through the one redaction pass for the whole command (the printers' chokepoint), and
    encoded to whatever the stream accepts: a character the terminal's encoding lacks is replaced, never a crash."""
    secrets = secret_values(dict(os.environ))
    saved = sys.stdout, sys.stderr
    for stream in saved:  # a latin-1 or ASCII terminal (PYTHONIOENCODING, a legacy locale): '?' for what it cannot show
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", "strict") == "strict":
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="replace")
    if not isinstance(sys.stdout, RedactingStream):
        sys.stdout, sys.stderr = RedactingStream(sys.stdout, secrets), RedactingStream(sys.stderr, secrets)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def modules_for(argv: list[str]) -> tuple[str, ...]:
    """The command modules a command line needs: the one that registers the command it names, else every one
    (`--help`, `--version`, a misspelt or missing command: argparse's answer then lists them all). Pure."""
    name = next((arg for arg in argv if not arg.startswith("-")), None)
    module = COMMAND_MODULE.get(name or "")
    return (module,) if module else COMMAND_MODULES


DEBUG_VAR = "PCGKIT_DEBUG"  # set to 1: an internal error prints its full traceback too


def internal_error(exc: Exception, args: argparse.Namespace) -> int:
    """Report an unexpected exception: the traceback to a file (reports folder, else the temp dir), one line to stderr."""
    secrets = secret_values(dict(os.environ))
    text = redact_text(traceback.format_exc(), secrets)
    if os.environ.get(DEBUG_VAR, "") not in ("", "0"):
        print(text, file=sys.stderr, end="")
    saved, why_not = save_traceback(text, getattr(args, "reports", None))
    where = f"the traceback is in {saved}" if saved else f"the traceback could not be saved ({why_not}); rerun with {DEBUG_VAR}=1"
    summary = one_line(redact_text(f"{type(exc).__name__}: {exc}", secrets))
    print(f"pcgkit: internal error: {summary}; {where}; please report it", file=sys.stderr)
    return int(ExitCode.ERROR_CELLS)


def save_traceback(text: str, reports: object) -> tuple[Path | None, str]:
    """(the file written, or None and why): the command's reports folder when it exists, else the temp dir."""
    from pcgkit.util import atomic
    from pcgkit.util.signals import lasting_temp_dir

    name = f"pcgkit-internal-error-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.txt"
    folders = [Path(str(reports))] if reports and Path(str(reports)).is_dir() else []
    folders.append(lasting_temp_dir())
    why_not = ""
    for folder in folders:
        try:
            return atomic.write_text(folder / name, text, redact=False), ""  # redacted above
        except (PcgkitError, OSError) as exc:
            why_not = str(exc)
    return None, why_not


def path_error(exc: OSError) -> PcgkitError:
    """An OSError from a file the command touched, as the kit's typed error for its exit status."""
    import errno

    from pcgkit.errors import UsageError
    from pcgkit.util.atomic import as_kit_error

    path = exc.filename or "(a file whose name the system did not report)"  # never a bare "?"
    if exc.errno == errno.ENOENT:
        return UsageError(f"{path}: no such file or folder")
    return as_kit_error(path, exc)


if __name__ == "__main__":
    sys.exit(main())
