"""The one redaction pass runs at every printer and writer (triage's text and JSON, `env --diff`, lock
files), catches what looks secret (URL credentials, GitHub tokens, api_key=/password= pairs, *_PASS and
*_PWD variables) and never rewrites an ordinary word because of a variable's name."""

from __future__ import annotations

import json
import sys

import pytest

from pcgkit.bugreport.envcapture import relevant_env_vars
from pcgkit.util.redact import REDACTED, is_secret_name, redact_text, secret_values

from .helpers import ran_cell, run_main, write_cells

GHP = "ghp_" + "0123456789abcdefABCDEF0123"
PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
PASTED_LOG = f"""\
[2026-11-30 10:00:00] Downloading https://deploy:Hunter2-secret@pypi.corp.invalid/simple/flashinfer/
Traceback (most recent call last):
  File "/usr/lib/python3.12/site-packages/sglang/launch_server.py", line 10, in <module>
    main()
RuntimeError: fetch https://deploy:Hunter2-secret@pypi.corp.invalid/simple failed (git https://{GHP}@github.com/o/r) api_key=sk9f8e7d6c5b4a3 password=CorrectHorse42 other={PAT}
"""
LEAKS = ("Hunter2-secret", "deploy:", GHP, "sk9f8e7d6c5b4a3", "CorrectHorse42", PAT)


def _assert_clean(text: str, where: str) -> None:
    for secret in LEAKS:
        assert secret not in text, f"{secret!r} leaked into {where}"


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_triage_output_is_redacted(tmp_path, capsys, as_json):
    """A pasted log's URL credentials, ghp_/github_pat_ tokens and api_key=/password= pairs leave triage redacted."""
    log = tmp_path / "server.log"
    log.write_text(PASTED_LOG)
    status, out, err = run_main(["triage", str(log), *(["--json"] if as_json else [])], capsys)
    assert status == 0, err
    _assert_clean(out + err, "triage output")
    if as_json:
        json.loads(out)  # redaction never breaks the document
    assert "pypi.corp.invalid" in out  # the host is evidence and stays


def test_env_diff_is_redacted(tmp_path, capsys):
    """`env --diff` of two captures holding secrets prints them redacted."""
    sides = []
    for name, value in (("a", "x"), ("b", f"https://bot:{GHP}@h.invalid ghp")):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"schema": "pcgkit.env/1", "env_vars": {"PIP_INDEX_URL": value, "DB_PASS": "Tr0ub4dor&3"},
                                    "packages": {}}))
        sides.append(str(path))
    status, out, err = run_main(["env", "--diff", *sides], capsys)
    assert GHP not in out + err and "bot:" not in out + err
    assert "Tr0ub4dor" not in out + err


@pytest.mark.parametrize("name", ["DB_PASS", "SMTP_PWD", "REDIS_PASSWD", "MY_APP_PASS"])
def test_pass_and_pwd_variables_are_secret(name):
    """*_PASS / *_PWD / *_PASSWD variables are secret names: their values are redacted in a capture."""
    assert is_secret_name(name)
    assert relevant_env_vars({f"SGLANG_{name}": "Tr0ub4dor&3"}) == {f"SGLANG_{name}": REDACTED}


@pytest.mark.parametrize("name", ["PWD", "OLDPWD", "UV_KEYRING_PROVIDER", "PASSTHROUGH", "TOKENIZERS_PARALLELISM"])
def test_ordinary_variable_names_are_not_secret(name):
    """PWD, OLDPWD and names that merely contain KEY/TOKEN/PASS inside a longer word are not secret names."""
    assert not is_secret_name(name)


def test_ordinary_word_is_never_scrubbed_because_of_a_variable_name(tmp_path, capsys, monkeypatch):
    """UV_KEYRING_PROVIDER=subprocess (uv's documented setting) leaves every 'subprocess' in the report intact."""
    monkeypatch.setenv("UV_KEYRING_PROVIDER", "subprocess")
    monkeypatch.setenv("SIGNING_KEY_TYPE", "plainword")
    assert secret_values({"UV_KEYRING_PROVIDER": "subprocess", "SIGNING_KEY_TYPE": "plainword"}) == ()
    reports = tmp_path / "reports"
    write_cells(reports, ran_cell("good", reason="nvcc via subprocess.check_output; plainword"))
    status, out, err = run_main(["report", "--reports", str(reports)], capsys)
    assert status == 0, err
    for name in ("compat.md", "compat.json"):
        text = (reports / name).read_text()
        assert "subprocess" in text and "plainword" in text, name
    assert "subprocess" in (reports / "matrix" / "cells" / "good" / "cell.json").read_text()


def test_secret_looking_value_of_a_secret_name_is_still_scrubbed_everywhere():
    """A token-shaped value of HF_TOKEN is scrubbed wherever it shows up (the first pass's promise stays)."""
    secrets = secret_values({"MY_TOKEN": "abc123def456", "DB_PASSWORD": "CorrectHorseBatteryStaple"})
    assert redact_text("echo abc123def456 CorrectHorseBatteryStaple", secrets) == f"echo {REDACTED} {REDACTED}"


def test_lock_files_carry_no_credentials(tmp_path, monkeypatch):
    """A credentialed companion: lock-requirements.in, lock-resolved.txt and lock.txt in the cell folder are
    redacted, while uv still gets the credentials (from a private copy that is removed afterwards)."""
    from pcgkit.matrix.backends import venv
    from pcgkit.matrix.cells import Cell
    from pcgkit.util import proc

    wheel = "tabulate @ https://deploy:Hunter2-secret@wheels.invalid/tabulate-0.9.0-py3-none-any.whl"
    seen = tmp_path / "seen.txt"
    # a stand-in uv: `pip compile ... -o OUT REQS` copies REQS to OUT and records what it was given
    script = ("import sys, shutil; a = sys.argv; out = a[a.index('-o') + 1]; shutil.copyfile(a[-1], out); "
              f"open({str(seen)!r}, 'a').write(open(a[-1]).read())")
    monkeypatch.setattr(proc, "uv_command", lambda: [sys.executable, "-c", script])
    cell = Cell("cred", flashinfer="0.6.1", torch="2.9.1", companions=(wheel,))
    cell_dir = tmp_path / "cells" / "cred"
    cell_dir.mkdir(parents=True)
    lock_file, facts = venv._lock_for(cell, cell_dir, tmp_path / "no-locks", sys.executable, venv.Deadline(60),
                                      venv.Stages())
    assert "Hunter2-secret" in seen.read_text()  # uv got the credentials
    assert "Hunter2-secret" in lock_file.read_text()  # and so does the install
    for path in cell_dir.rglob("*"):
        if path.is_file():
            assert "Hunter2-secret" not in path.read_text(), f"credentials in {path}"
    assert (cell_dir / "lock.txt").is_file() and (cell_dir / "lock" / "lock-requirements.in").is_file()
    assert cell_dir not in lock_file.parents
    venv.discard_install_copy(lock_file)
    assert not lock_file.exists()
