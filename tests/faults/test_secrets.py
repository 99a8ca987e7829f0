"""Secrets: no credential reaches the terminal, an error reason, cell.json, compat.md/json, history,
index.html, the merged JUnit, a log, `pcgkit env` or an issue draft."""

from __future__ import annotations

import sys

import pytest

from pcgkit.bugreport.envcapture import relevant_env_vars
from pcgkit.matrix.backends.base import BackendConfig
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import ERROR, CellOutcome
from pcgkit.matrix.runner import cached_outcome
from pcgkit.util import proc
from pcgkit.util.redact import REDACTED, redact_text

from .helpers import ran_cell, run_main, write_cells

PASSWORD = "pa@ss-w0rd-XYZ"  # contains '@': the redaction must not stop at the first one
WHEEL = f"tabulate @ https://deploy:{PASSWORD}@wheels.example.invalid/tabulate-0.9.0-py3-none-any.whl"
HF = "hf_" + "A1b2C3d4E5f6G7h8I9j0KlMn"
GHP = "ghp_" + "0123456789abcdefABCDEF0123"
SK = "sk-" + "proj-abcdefghijklmnopqrstuvwx"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
SECRETS = (PASSWORD, "pa@ss", "w0rd-XYZ", HF, GHP, SK, AWS, "s3cr3t-api-v4lue")


def assert_clean(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} leaked into {where}"


@pytest.mark.parametrize("text, kept", [
    (WHEEL, "tabulate @ https://<redacted>@wheels.example.invalid/tabulate-0.9.0-py3-none-any.whl"),
    ("SGLANG_EXTRA_ARGS=--api-key s3cr3t-api-v4lue --port 30000", "--api-key <redacted> --port 30000"),
    ("--token=s3cr3t-api-v4lue then echo s3cr3t-api-v4lue", "--token=<redacted> then echo <redacted>"),
    (f"HF_TOKEN={HF} git push https://{GHP}@github.com/x", "HF_TOKEN=<redacted> git push https://<redacted>@github.com/x"),
    (f"key {SK} and {AWS}", "key <redacted> and <redacted>"),
    ("curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload'", "Authorization: Bearer <redacted>'"),
    ("docker login -u bot -p s3cr3t-api-v4lue", "-u bot -p <redacted>"),
])
def test_every_secret_shape_is_redacted_and_the_rest_kept(text, kept):
    """URL credentials (with '@' in the password), argv secrets, assignments and token shapes all go."""
    out = redact_text(text)
    assert_clean(out, "redact_text")
    assert kept in out
    assert redact_text(out) == out  # idempotent


def test_evidence_that_only_looks_secret_is_kept():
    """Token counts, tokenizer paths, pytest's -p plugin and traceback source lines are not secrets."""
    text = "--max-new-tokens 16 --tokenizer-path /ckpt -p pcgkit.plugin sorted(x, key=len) KeyError: 'k'"
    assert redact_text(text) == text


def test_captured_variable_with_a_harmless_name_is_redacted():
    """`pcgkit env` exports SGLANG_EXTRA_ARGS with its --api-key value removed."""
    env = relevant_env_vars({"SGLANG_EXTRA_ARGS": "--api-key s3cr3t-api-v4lue --tp 2"})
    assert env == {"SGLANG_EXTRA_ARGS": f"--api-key {REDACTED} --tp 2"}


def test_terminal_echo_and_log_are_redacted(tmp_path, capsys):
    """proc.run echoes the command and keeps the log without the credentials of a requirement URL."""
    done = proc.run([sys.executable, "-c", f"print({WHEEL!r})", WHEEL], log_path=tmp_path / "install.log")
    assert done.ok
    err = capsys.readouterr().err
    assert "wheels.example.invalid" in err
    assert_clean(err + done.output_tail + (tmp_path / "install.log").read_text(), "echo/tail/log")


def test_credentialed_companion_never_reaches_any_report(tmp_path, capsys):
    """A cell whose companion is a credentialed wheel URL and whose reason echoes it: every file is clean."""
    cell = Cell("cred", flashinfer="0.6.1", torch="2.9.1", companions=(WHEEL,))
    bad = CellOutcome(cell, ERROR, 1.0, "install", f"unknown version: {WHEEL} --token=s3cr3t-api-v4lue", f"log: {WHEEL}")
    reports = tmp_path / "reports"
    write_cells(reports, bad, ran_cell("good", reason=f"evidence {HF}"))
    status, out, err = run_main(["report", "--reports", str(reports)], capsys)
    assert status == 3
    files = [p for p in reports.rglob("*") if p.is_file()]
    assert {"compat.md", "compat.json", "index.html", "matrix-junit.xml", "cell.json"} <= {p.name for p in files}
    for path in files:
        assert_clean(path.read_text(), str(path))
    assert_clean(out + err, "terminal")
    assert "wheels.example.invalid" in (reports / "compat.md").read_text()  # the host stays: it is evidence


def test_redacted_cell_json_still_resumes(tmp_path):
    """The stored companions are redacted, yet the cell is reused on resume (the stored hash is the real one)."""
    cell = Cell("cred", flashinfer="0.6.1", torch="2.9.1", companions=(WHEEL,))
    from pcgkit.matrix.outcome import RAN

    write_cells(tmp_path, CellOutcome(cell, RAN, 1.0))
    config = BackendConfig(cells_root=tmp_path / "matrix" / "cells", envs_root=tmp_path, timeout_s=10, case_timeout_s=10)
    assert PASSWORD not in (tmp_path / "matrix" / "cells" / "cred" / "cell.json").read_text()
    assert cached_outcome(cell, config) is not None


def test_install_log_echo_and_output_drop_companion_credentials(monkeypatch, tmp_path, capsys):
    """A credentialed companion URL in the install commands' argv and output never reaches install.log."""
    from pcgkit.matrix.backends.base import Deadline
    from pcgkit.matrix.backends.venv import prepare_env

    from .helpers import stand_in_backend

    wheel = "tabulate @ https://user:p%40ss-XYZ@wheels.example.invalid/x.whl"
    cell = Cell("credlog", python=f"{sys.version_info[0]}.{sys.version_info[1]}", flashinfer="0.6.1", torch="2.9.1",
                companions=(wheel, WHEEL))
    # the stand-in gets the URLs as arguments (the echo) and prints the lock holding them (the output)
    config, _ = stand_in_backend(monkeypatch, tmp_path, cell,
                                 extra_argv=(wheel, f"--index-url=https://tok:{PASSWORD}@idx.invalid/simple"))
    cell_dir = tmp_path / "cells" / "credlog"
    cell_dir.mkdir(parents=True)
    assert prepare_env(cell, cell_dir, config, Deadline(60)).python is not None
    log = (cell_dir / "install.log").read_text()
    err = capsys.readouterr().err
    assert log.count("+ ") >= 2 and "wheels.example.invalid/x.whl" in log and "idx.invalid" in log
    for secret in ("p%40ss", "p%40ss-XYZ", "user:p", "tok:", *SECRETS):
        assert secret not in log, f"{secret!r} leaked into install.log"
        assert secret not in err, f"{secret!r} leaked into the terminal"
    # the lock uv installs from keeps them: it is the input, not a report
    assert "p%40ss-XYZ" in (config.locks_dir / "credlog.txt").read_text()


@pytest.mark.parametrize("value", ["abcdefghij" * 2, "abcdefghij" * 2 + "abcde", "9f8e7d6c5b4a", "a1b2c3"],
                         ids=["20-letters", "25-letters", "digit-first", "6-mixed"])
def test_flag_value_echoed_later_goes_everywhere(value):
    """A --token value that is long (>= 20) or mixes letters and digits is scrubbed in its echo too."""
    assert redact_text(f"login --token {value} && echo {value}") == "login --token <redacted> && echo <redacted>"


@pytest.mark.parametrize("value", ["swordfish", "12345"])
def test_short_plain_flag_value_is_redacted_in_place(value):
    """A short all-letter or all-digit --password value is no token shape, but the flag rule still removes it."""
    assert redact_text(f"mysql --password {value} -h db") == "mysql --password <redacted> -h db"


def test_plain_word_flag_value_is_not_scrubbed_elsewhere():
    """A short plain word given to --password goes from the flag, but the same word elsewhere stays readable."""
    assert redact_text("mysql --password swordfish && echo swordfish") == "mysql --password <redacted> && echo swordfish"


def test_secret_values_start_at_six_characters():
    """Values of secret-named variables shorter than 6 characters are not scrubbed (they would eat evidence)."""
    from pcgkit.util.redact import secret_values

    env = {"API_TOKEN": "abcde", "HF_TOKEN": "abcdef", "GH_TOKEN": "abcdefg", "HOME": "abcdefgh"}
    assert secret_values(env) == ("abcdefg", "abcdef")  # longest first


@pytest.mark.parametrize("value", ["abcdefghij" + "abcdefghi", "a1b2"], ids=["19-letters", "short-mixed"])
def test_flag_value_that_is_no_token_stays_in_its_echo(value):
    """A 19-letter word or a value under 6 characters goes from the flag only: elsewhere it may be evidence."""
    assert redact_text(f"login --token {value} && echo {value}") == f"login --token <redacted> && echo {value}"


def test_a_secret_containing_another_goes_whole():
    """Secrets are replaced longest first, so one that contains another leaves no tail behind."""
    assert redact_text("x abc123xyz", secrets=("abc123", "abc123xyz")) == "x <redacted>"


def test_redact_tree_reaches_keys_lists_and_tuples_and_keeps_other_values():
    """redact_tree scrubs every string of a JSON-like value (keys, list and tuple items); numbers stay."""
    from pcgkit.util.redact import redact_tree

    data = {f"HF_TOKEN={HF}": [f"--token={HF}", 3, (HF, None)]}
    assert redact_tree(data) == {"HF_TOKEN=<redacted>": ["--token=<redacted>", 3, ["<redacted>", None]]}
