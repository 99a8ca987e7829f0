"""Bad input: every user mistake is one `pcgkit: error:` line (field and line for the matrix file) and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from pcgkit.matrix.outcome import uv_culprit
from pcgkit.matrix.plan import MatrixError, parse_matrix

from .helpers import REPO_ROOT, assert_one_line_error, run_main

HEAD = 'schema = "pcgkit.matrix/1"\n[[cell]]\nid = "a"\n'


@pytest.mark.parametrize("line, expected", [
    ("torch = 2.10", "matrix.toml:4: [[cell]] #1 (id 'a'): torch is the TOML number 2.1, not a string"),
    ('companions = "tabulate"', "companions is str 'tabulate', expected a list"),
    ('timeout-s = "soon"', "timeout-s is str 'soon', expected a number of seconds"),
    ("timeout-s = -5", "expected a positive number of seconds"),
    ('torch = "abc"', "torch 'abc' is not a PEP 440 version"),
    ('flashinfer-python = "0.6.1"\ntorh = "2.9.1"', "matrix.toml:5: [[cell]] #1 (id 'a'): unknown key 'torh'"),
    ('companions = ["ok==1", "bad req !!"]', "companions item 1: 'bad req !!' is not a PEP 508 requirement"),
    ("python = 3.10", "python is the TOML number 3.1"),
])
def test_matrix_file_errors_name_the_field_and_the_line(line, expected):
    """Each typing trap of TOML is rejected at plan time, in one line that names where it is."""
    with pytest.raises(MatrixError) as info:
        parse_matrix(HEAD + line + "\n", "matrix.toml")
    assert expected in str(info.value) and "\n" not in str(info.value)


def test_bad_matrix_file_through_the_cli(tmp_path, capsys):
    """`pcgkit matrix --list` on a bad file: exit 2, one line, nothing planned."""
    (tmp_path / "m.toml").write_text(HEAD + "torch = 2.10\n")
    status, out, err = run_main(["matrix", "--matrix", str(tmp_path / "m.toml"), "--list"], capsys)
    assert status == 2 and out == ""
    assert "m.toml:4" in assert_one_line_error(err)


@pytest.mark.parametrize("argv", [
    ["matrix", "--jobs", "-1", "--list"],
    ["matrix", "--timeout", "-5", "--list"],
    ["run", "--timeout", "-5"],
    ["run", "--case-timeout", "nan"],
    ["bisect", "--mode", "mode1", "--from", "1", "--to", "2", "--jobs", "0"],
])
def test_nonsense_options_are_one_line_usage_errors(argv, capsys):
    """Negative jobs/timeouts stop at parse time: exit 2 and one line (usage stays in --help)."""
    with pytest.raises(SystemExit) as info:
        run_main(argv, capsys)
    assert info.value.code == 2
    assert_one_line_error(capsys.readouterr().err)


def test_missing_interpreter_for_run(capsys):
    """`run --python /nonexistent`: exit 2 before anything starts, one line naming the path."""
    status, _, err = run_main(["run", "--python", "/nonexistent/python"], capsys)
    assert status == 2 and "/nonexistent/python: no such file" in assert_one_line_error(err)


@pytest.mark.parametrize("content, why", [
    (None, "no such file"), ("{not json", "not JSON"), ("[1, 2]", "expected an object"),
])
def test_json_inputs_that_are_missing_or_malformed(tmp_path, capsys, content, why):
    """`issue --env` and `env --diff` on a missing file, broken JSON or a JSON array: one line, exit 2."""
    path = tmp_path / "env.json"
    if content is not None:
        path.write_text(content)
    status, _, err = run_main(["env", "--diff", str(path), str(path)], capsys)
    assert status == 2 and assert_one_line_error(err)
    argv = ["issue", "--target", "flashinfer", "--results", str(_results(tmp_path)), "--env", str(path)]
    status, _, err = run_main(argv, capsys)
    assert status == 2 and why in assert_one_line_error(err)


def _results(tmp_path: Path) -> Path:
    from pcgkit.verdicts.result import write_results
    from tests.faults.helpers import result

    path = tmp_path / "results.json"
    write_results(path, [result()], {"versions": {}})
    return path


def test_uv_errors_name_the_culprit_line():
    """Install reasons quote uv's own error and cause (verbatim logs in tests/data/uv_errors/), not 'install failed'."""
    data = REPO_ROOT / "tests" / "data" / "uv_errors"
    assert uv_culprit((data / "unparsable_version.log").read_text()) == (
        "Failed to parse: `torch==abc`: expected version to start with a number, but no leading ASCII digits were found")
    assert "you require tabulate==0.9.0 and tabulate<0.9" in uv_culprit((data / "conflicting_constraint.log").read_text())
    assert uv_culprit("all good") == ""
