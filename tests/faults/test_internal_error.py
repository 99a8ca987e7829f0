"""A bug in the kit (an unexpected exception in a command) is one line on stderr, exit 3, with the
redacted traceback saved to a file the line names; PCGKIT_DEBUG=1 prints the traceback too."""

from __future__ import annotations

import argparse
import re
import tempfile
from pathlib import Path

import pytest

from pcgkit import cli

HF = "hf_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2"
LINE = re.compile(r"^pcgkit: internal error: KeyError: .*; the traceback is in (\S+); please report it$")


def _kit_bug(args):
    raise KeyError(f"cell-row with {HF}")


@pytest.fixture
def broken_command(monkeypatch, tmp_path):
    """Every command's func replaced by one that raises; the temp dir is tmp_path/tmp."""
    real = cli.build_parser

    def build(*args, **kwargs):  # the CLI passes the command modules a command line needs (lazy imports)
        parser = real(*args, **kwargs)
        parse = parser.parse_args
        parser.parse_args = lambda argv=None: argparse.Namespace(**{**vars(parse(argv)), "func": _kit_bug})
        return parser

    monkeypatch.setattr(cli, "build_parser", build)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.delenv(cli.DEBUG_VAR, raising=False)


def _saved(err: str) -> Path:
    lines = [line for line in err.splitlines() if line.strip()]
    match = LINE.match(lines[-1])
    assert match, err
    return Path(match.group(1))


def test_internal_error_is_one_line_exit_3_traceback_in_the_reports_folder(broken_command, tmp_path, capsys):
    """No traceback on the terminal; the file beside the reports holds it, the secret redacted in both."""
    reports = tmp_path / "reports"
    reports.mkdir()
    status = cli.main(["report", "--reports", str(reports)])
    err = capsys.readouterr().err
    assert status == 3 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    saved = _saved(err)
    assert saved.parent == reports
    text = saved.read_text()
    assert "Traceback" in text and "_kit_bug" in text and "KeyError" in text
    assert HF not in text and HF not in err


def test_without_a_reports_folder_the_traceback_goes_to_the_temp_dir(broken_command, tmp_path, capsys):
    """A command with no (or a not yet existing) reports folder saves it under the temp dir, creating nothing else."""
    status = cli.main(["report", "--reports", str(tmp_path / "absent")])
    saved = _saved(capsys.readouterr().err)
    assert status == 3 and saved.parent == tmp_path / "tmp" and saved.is_file()
    assert not (tmp_path / "absent").exists()


def test_debug_variable_prints_the_full_traceback_as_well(broken_command, tmp_path, monkeypatch, capsys):
    """PCGKIT_DEBUG=1: the redacted traceback on stderr, then the same one line; still exit 3."""
    monkeypatch.setenv(cli.DEBUG_VAR, "1")
    status = cli.main(["report", "--reports", str(tmp_path)])
    err = capsys.readouterr().err
    assert status == 3 and "Traceback (most recent call last)" in err and "_kit_bug" in err and HF not in err
    assert _saved(err).is_file()


def test_user_errors_still_take_the_one_line_error_path(tmp_path, monkeypatch, capsys):
    """A PcgkitError is not an internal error: 'pcgkit: error:' and its own exit status, no file saved."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    status = cli.main(["env", "--diff", str(tmp_path / "missing.json"), str(tmp_path / "missing.json")])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("pcgkit: error:") and "internal error" not in err, err
    assert not list(tmp_path.glob("pcgkit-internal-error-*"))


def test_the_named_traceback_outlives_the_process(tmp_path):
    """Run as a user runs it (a fresh process that claims its own temp run folder, removed at exit): the file the
    line names still exists afterwards (it was written into the run folder and deleted with it)."""
    import os
    import subprocess
    import sys

    temp = tmp_path / "tmp"
    temp.mkdir()
    code = ("import argparse, sys; from pcgkit import cli\n"
            "real = cli.build_parser\n"
            "def build(*a, **k):\n"
            "    p = real(*a, **k); parse = p.parse_args\n"
            "    def bug(args): raise KeyError('x')\n"
            "    p.parse_args = lambda argv=None: argparse.Namespace(**{**vars(parse(argv)), 'func': bug})\n"
            "    return p\n"
            "cli.build_parser = build\n"
            f"sys.exit(cli.main(['report', '--reports', {str(tmp_path / 'absent')!r}]))\n")
    env = {**os.environ, "TMPDIR": str(temp)}
    env.pop(cli.DEBUG_VAR, None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    saved = _saved(done.stderr)
    assert done.returncode == 3 and saved.is_file() and saved.parent == temp, done.stderr
