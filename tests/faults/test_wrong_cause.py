"""Wrong cause, wrong answer: a typo, an empty variable, a pipe or a wrong-typed capture gets its own one-line answer."""

from __future__ import annotations

import pytest

from .helpers import assert_one_line_error, run_main


@pytest.mark.parametrize("command", ["run", "matrix"])
@pytest.mark.parametrize("expression", ["cpu_sm", "cpu_sim and not", "cpu_sim and not gpux"])
def test_a_marker_typo_never_replaces_a_complete_runs_results(tmp_path, capsys, command, expression):
    """run/matrix -m with an unknown marker or a broken expression: usage error before anything is touched."""
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "results.json").write_text("the complete run's results\n")
    with pytest.raises(SystemExit) as stopped:  # argparse's refusal: exit 2 with one line
        run_main([command, "-m", expression, "--reports", str(reports)], capsys)
    assert stopped.value.code == 2 and "marker" in assert_one_line_error(capsys.readouterr().err)
    assert (reports / "results.json").read_text() == "the complete run's results\n"
