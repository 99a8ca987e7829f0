"""fixtures/expectations.toml, which the docs tell users to edit, is checked against its schema when read: a misspelt
`when` made a rule apply to every version silently; a string `when`, a bad specifier or a misspelt key in
`[[cannot-run]]` was "internal error ... please report it" (exit 3). Now each is one line naming the file, the
line, the table and the key (exit 2), through `report` (which reads `[[cannot-run]]`) and the pytest plugin
(which reads `[[rule]]` before any case runs)."""

from __future__ import annotations

import pytest

from pcgkit.errors import UsageError
from pcgkit.matrix import uninstallable
from pcgkit.verdicts import expectations

from .helpers import assert_one_line_error, ran_cell, run_main, write_cells

RULE = '[[rule]]\nmode = "mode1"\nexpect = "reproduced"\nwhen = { "flashinfer-python" = ">=0.5" }\nwhy = "w"\n'
CANNOT = ('[[cannot-run]]\nwhen = { "flashinfer-python" = "<0.4.2" }\nmatch = "apache-tvm-ffi"\nwhy = "w"\n'
          'link = "l"\ntried = 2026-12-05\nretry-days = 7\n')
# (the file, what its one error line must say)
BROKEN = [
    (RULE.replace("when =", "wen ="), "expectations.toml:4: [[rule]] #1 ('mode1'): unknown key 'wen'"),
    (RULE.replace('{ "flashinfer-python" = ">=0.5" }', '">=0.5"'), "expectations.toml:4: [[rule]] #1 ('mode1'): when is str"),
    (RULE.replace('">=0.5"', '"=>0.5"'), "expectations.toml:4: [[rule]] #1 ('mode1'): when 'flashinfer-python' = '=>0.5' is not"),
    (RULE.replace('"reproduced"', '"reprodcued"'), "expectations.toml:3: [[rule]] #1 ('mode1'): expect is 'reprodcued'"),
    (RULE.replace("when = ", "# when = "), "expectations.toml:1: [[rule]] #1 ('mode1'): no 'when'"),
    (RULE + CANNOT.replace("retry-days", "retry_days"),
     "expectations.toml:12: [[cannot-run]] #1 ('apache-tvm-ffi'): unknown key 'retry_days'"),
    (RULE + CANNOT.replace('{ "flashinfer-python" = "<0.4.2" }', '"<0.4.2"'),
     "expectations.toml:7: [[cannot-run]] #1 ('apache-tvm-ffi'): when is str"),
    (RULE + CANNOT.replace('"<0.4.2"', '"< 0.4.2 or so"'),
     "expectations.toml:7: [[cannot-run]] #1 ('apache-tvm-ffi'): when 'flashinfer-python' = '< 0.4.2 or so' is not"),
    (RULE + CANNOT.replace("2026-12-05", '"last week"'),
     "expectations.toml:11: [[cannot-run]] #1 ('apache-tvm-ffi'): tried is 'last week', expected a date"),
    (RULE.replace("[[rule]]", "[[rules]]"), "expectations.toml:1: unknown top-level key 'rules'"),
]


@pytest.fixture
def edited(tmp_path, monkeypatch):
    """Point both readers of the expectations file at a copy the test writes (as a user edits theirs)."""
    path = tmp_path / "expectations.toml"
    monkeypatch.setattr(expectations.load_expectations, "__defaults__", (path,))
    monkeypatch.setattr(uninstallable.load_uninstallable, "__defaults__", (path,))
    return path


@pytest.mark.parametrize(("text", "says"), BROKEN, ids=[says.split(": ", 2)[-1][:40] for _, says in BROKEN])
def test_a_broken_expectations_file_is_one_line_naming_the_key_and_line(edited, tmp_path, capsys, text, says):
    """`report` with an edited expectations file that is wrong: exit 2, one line with the file, line, table, key."""
    edited.write_text(text)
    reports = tmp_path / "reports"
    write_cells(reports, ran_cell("seed"))
    status, _, err = run_main(["report", "--reports", str(reports)], capsys)
    line = assert_one_line_error(err)
    assert status == 2 and says in line and str(edited) in line, err
    with pytest.raises(UsageError, match="expectations.toml:"):
        expectations.load_expectations()


def test_the_shipped_file_and_a_correct_edit_are_accepted(edited):
    """The kit's own baseline passes its schema, and so does a file with one rule and one cannot-run entry."""
    assert expectations.load_expectations(expectations.DEFAULT_EXPECTATIONS)
    edited.write_text(RULE + CANNOT)
    (rule,) = expectations.load_expectations()
    assert rule.when == (("flashinfer-python", ">=0.5"),)
    assert uninstallable.load_uninstallable()[0].retry_days == 7


def test_the_plugin_refuses_a_broken_baseline_before_any_case(edited):
    """The kit's pytest plugin (what `pcgkit run` and every matrix cell run) stops at configure time with the line
    (pytest prints a UsageError as one 'ERROR:' line, exit 4), instead of judging cases against a silent rule."""
    from pcgkit import plugin

    edited.write_text(RULE.replace("when =", "wen ="))
    with pytest.raises(pytest.UsageError, match="unknown key 'wen'"):
        plugin.pytest_configure(None)  # type: ignore[arg-type]  (it stops before touching the config)
