"""Ids read from files the kit did not just write (a CI artifact's cell.json, a results.json, a history
line) pass one safe-id rule before they name a folder, a table column or a history track."""

from __future__ import annotations

import json

import pytest

from pcgkit.matrix.cells import Cell
from pcgkit.report import history
from pcgkit.util.untrusted import UntrustedValueError, safe_id
from pcgkit.verdicts.result import CaseResult

from .helpers import ran_cell, run_main, write_cells

HOSTILE_IDS = ("../../../x", "/tmp/abs", "a/b", "..", ".hidden", "x|y", "x\ny", "", "a" * 300, "c:\\x", "ok id")


@pytest.mark.parametrize("bad", HOSTILE_IDS)
def test_safe_id_refuses_path_and_markup_characters(bad):
    """Traversal, absolute paths, separators, '|', newlines, empty and over-long ids are refused."""
    with pytest.raises(UntrustedValueError):
        safe_id(bad, "cell id")


@pytest.mark.parametrize("good", ("seed", "fi-0.6.18.post1", "sglang-0.5.8", "seed@host-venv", "fix-allow-in-graph",
                                  "sim-sm120", "torch-2.9.1+cu128", "fi-0.6.1__bisect_fi-0.6.2"))
def test_safe_id_keeps_the_ids_the_kit_makes(good):
    """Every id shape the planner, the merge and the catalog produce passes unchanged."""
    assert safe_id(good, "id") == good


@pytest.mark.parametrize("bad", ("../../../x", "/abs/path", 7, None))
def test_cell_from_dict_refuses_an_unsafe_or_wrong_typed_id(bad):
    """Cell.from_dict, the reader every cell.json goes through, refuses an id that is not a safe name."""
    with pytest.raises(ValueError):
        Cell.from_dict({"id": bad})


def test_case_result_from_dict_refuses_an_unsafe_mode_id():
    """A results.json whose case id carries '|' or a path cannot become a compat.md column."""
    data = ran_cell("good").results[0].to_dict()
    for bad in ("mode1 | injected", "../mode1"):
        with pytest.raises(ValueError):
            CaseResult.from_dict({**data, "mode": bad})


@pytest.mark.parametrize("bad", ("../../../escaped", "ABSOLUTE"))
def test_report_from_never_writes_outside_the_reports_folder(tmp_path, capsys, bad):
    """`report --from` an artifact whose cell.json carries a traversal or absolute id: an error row, no file outside."""
    artifact = tmp_path / "artifact"
    write_cells(artifact, ran_cell("good"), ran_cell("evil"))
    hostile = str(tmp_path / "outside" / "abs") if bad == "ABSOLUTE" else bad
    evil = artifact / "matrix" / "cells" / "evil" / "cell.json"
    data = json.loads(evil.read_text())
    data["cell"]["id"] = hostile
    evil.write_text(json.dumps(data))
    (evil.parent / "junit.xml").write_text("<testsuites/>")
    reports = tmp_path / "sub" / "dir" / "reports"
    status, out, err = run_main(["report", "--reports", str(reports), "--from", str(artifact)], capsys)
    assert status == 3, err
    written = {p for p in tmp_path.rglob("*") if p.is_file()} - {p for p in artifact.rglob("*")}
    assert all(reports in p.parents for p in written), sorted(map(str, written))
    assert not (tmp_path / "outside").exists() and not (tmp_path / "sub" / "escaped").exists()
    rows = {c["id"]: c for c in json.loads((reports / "compat.json").read_text())["cells"]}
    assert "good" in rows
    reasons = " ".join(c.get("reason", "") for c in rows.values())
    assert "cell id" in reasons and "not a safe name" in reasons


def test_history_line_with_wrong_types_is_skipped_and_later_reports_still_work(tmp_path, capsys):
    """A history.jsonl line whose verdicts are a list, or whose ids are unsafe, is named and skipped, twice over."""
    reports = tmp_path / "reports"
    write_cells(reports, ran_cell("good"))
    lines = [
        {"schema": history.HISTORY_SCHEMA, "created": "2026-01-01", "verdicts": ["x"]},
        {"schema": history.HISTORY_SCHEMA, "created": "2026-01-02", "verdicts": {"../x": {"mode1": "reproduced"}}},
        {"schema": history.HISTORY_SCHEMA, "created": "2026-01-03", "verdicts": {"good": {"mode1": 5}}},
        {"schema": history.HISTORY_SCHEMA, "created": 7, "verdicts": {}, "simulated": []},
    ]
    reports.mkdir(exist_ok=True)
    (reports / history.HISTORY_FILE).write_text("".join(json.dumps(line) + "\n" for line in lines))
    for _ in range(2):  # the first report appends its own line; the second must still read the file
        status, out, err = run_main(["report", "--reports", str(reports)], capsys)
        assert status == 0, err
        assert "Traceback" not in out + err and "internal error" not in err
        assert out.count("unreadable history line") == 4
