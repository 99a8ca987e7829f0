"""Wrong cause, wrong answer: a typo, an empty variable, a pipe or a wrong-typed capture gets its own one-line answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import assert_one_line_error, pcgkit, ran_cell, run_main, write_cells


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


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_pcgkit_cache_is_the_default_not_the_current_folder(monkeypatch, value):
    """PCGKIT_CACHE= (set, empty) means unset: ~/.cache/pcgkit, never an 8 GB environment in the current folder."""
    from pcgkit.preflight.envs import cache_root

    monkeypatch.setenv("PCGKIT_CACHE", value)
    assert cache_root().is_absolute() and cache_root() == Path.home() / ".cache" / "pcgkit" / "preflight-envs"


def test_a_relative_pcgkit_cache_is_one_line(monkeypatch):
    """PCGKIT_CACHE=relative: a usage error naming the variable, not a cache that follows the working folder."""
    from pcgkit.errors import UsageError
    from pcgkit.preflight.envs import cache_root

    monkeypatch.setenv("PCGKIT_CACHE", "cache")
    with pytest.raises(UsageError, match="PCGKIT_CACHE"):
        cache_root()


@pytest.mark.parametrize("encoding", ["latin-1"])
def test_a_narrow_stdout_encoding_never_cuts_the_report(tmp_path, encoding):
    """report under PYTHONIOENCODING=latin-1/ascii: finishes (exit 0) and appends its history line."""
    reports = tmp_path / "reports"
    write_cells(reports, ran_cell("seed", message="non-latin \u2192 \u2713 \u4e2d"))
    done = pcgkit(["report", "--reports", str(reports)], cwd=tmp_path, PYTHONIOENCODING=encoding)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and (reports / "history.jsonl").read_text().count("\n") == 1


@pytest.mark.parametrize("cron", ["17 3 * * MON-FRI", "0 6 1 JAN,JUL *", "0 0 * * sun"])
def test_github_cron_names_are_accepted(tmp_path, capsys, cron):
    """ci github --cron with GitHub's month/weekday names (MON-FRI, JAN): written as given (actionlint accepts them)."""
    out = tmp_path / "wf.yml"
    status, _, err = run_main(["ci", "github", "--cron", cron, "--cell", "seed", "--out", str(out)], capsys)
    assert status == 0, err
    assert cron in out.read_text()


def test_a_cron_name_in_the_wrong_field_is_still_refused():
    """MON in the day-of-month field, or an unknown name, stays a usage error."""
    import argparse

    from pcgkit.util.argtypes import cron_schedule

    for cron in ("0 0 MON * *", "0 0 * * FOO"):
        with pytest.raises(argparse.ArgumentTypeError):
            cron_schedule(cron)


@pytest.mark.parametrize("argv", [["matrix", "--matrix", "/dev/zero", "--list"],
                                  ["repro", "mode1", "--pins", "/dev/zero", "--out", "{tmp}/r"]])
def test_dev_zero_as_an_input_file_is_one_line(tmp_path, capsys, argv):
    """/dev/zero as --matrix or --pins: one line naming it (a device), never read until memory runs out."""
    status, _, err = run_main([a.replace("{tmp}", str(tmp_path)) for a in argv], capsys)
    assert status == 2 and "device" in assert_one_line_error(err)


def test_dev_zero_as_a_launch_file_is_one_line():
    """matrix --preflight /dev/zero: the launch file reader refuses a device in one line."""
    from pcgkit.errors import UsageError
    from pcgkit.preflight.case import load

    with pytest.raises(UsageError, match="device"):
        load("/dev/zero")
