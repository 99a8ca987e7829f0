"""`pcgkit ci github|local` refuse what would make an invalid workflow or crash: a malformed --cron, a
matrix `timeout-s = inf` (or nan), a non-finite --timeout; one line each, exit 2."""

from __future__ import annotations

import pytest

from pcgkit.cli import main

from .helpers import assert_one_line_error, run_main


@pytest.mark.parametrize("cron", ["17 3 * *", "61 3 * * 1", "17 3 * * 1 2", "* * * * MON; rm -rf /", "*/0 * * * *",
                                  "17 25 * * 1"])
def test_malformed_cron_is_refused(tmp_path, capsys, cron):
    """A cron with the wrong field count, a value out of range, a zero step or shell text: exit 2, nothing written."""
    out = tmp_path / "wf.yml"
    with pytest.raises(SystemExit) as stopped:  # argparse's own exit, through the kit's one-line parser
        main(["ci", "github", "--cron", cron, "--out", str(out)])
    assert stopped.value.code == 2
    assert "cron" in assert_one_line_error(capsys.readouterr().err)
    assert not out.exists()


@pytest.mark.parametrize("value", ["inf", "nan", "-inf"])
def test_infinite_timeout_in_the_matrix_is_a_usage_error(tmp_path, capsys, value):
    """`timeout-s = inf` in a matrix file: a one-line error naming the field, not a crash of `ci github`."""
    matrix = tmp_path / "matrix.toml"
    matrix.write_text(f'schema = "pcgkit.matrix/1"\n[[cell]]\nid = "x"\ntorch = "2.9.1"\n'
                      f'flashinfer-python = "0.6.1"\ntimeout-s = {value}\n')
    status, _, err = run_main(["ci", "github", "--matrix", str(matrix), "--out", str(tmp_path / "wf.yml")], capsys)
    assert status == 2
    assert "timeout-s" in assert_one_line_error(err)


def test_a_valid_cron_still_writes_the_workflow(tmp_path, capsys):
    """The default-shaped schedule and a list/range/step one pass and are written as given."""
    out = tmp_path / "wf.yml"
    status, _, err = run_main(["ci", "github", "--cron", "0,30 */6 1-15 * 1-5", "--out", str(out)], capsys)
    assert status == 0, err
    assert "0,30 */6 1-15 * 1-5" in out.read_text()
