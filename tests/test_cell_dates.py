"""Statements cite each matrix cell's own measurement date (issue 34): a cell re-measured after the matrix was
created carries its date through compat.json (finished), the snapshot (measured) and the advice model's sources."""

from __future__ import annotations


def _snapshot(measured_a, measured_b):
    cell = {"sglang": "0.5.12", "flashinfer-python": "0.6.1", "torch": "2.9.1", "simulated": True,
            "device": "simulated SM120 (no GPU)", "verdicts": {"sglang-compile-sm120": "reproduced"}, "ran": []}
    return {"schema": "pcgkit.matrix-snapshot/1", "matrix_created": "2026-12-01T23:12:43+00:00",
            "cells": [{**cell, "id": "a", "measured": measured_a}, {**cell, "id": "b", "measured": measured_b}]}


def test_a_re_measured_cell_keeps_its_own_date():
    """A cell with its own `measured` date is dated by it; one without falls back to the matrix's creation date."""
    from pcgkit.advice.load import parse_snapshot

    dates = {m.cell: m.as_of for m in parse_snapshot(_snapshot("2026-12-05", None))}
    assert dates == {"a": "2026-12-05", "b": "2026-12-01"}


def test_the_citation_names_the_range_of_cell_dates():
    """Cells measured on two dates are cited as 'matrix cells of FIRST to LAST', never the creation date alone."""
    from pcgkit.advice.load import parse_snapshot
    from pcgkit.advice.model import cell_source
    from pcgkit.advice.values import Statement

    source = cell_source(parse_snapshot(_snapshot("2026-12-05", None)))
    assert Statement("x", (source,), True).cite_short() == "matrix cells of 2026-12-01 to 2026-12-05; simulated"
    assert source.cite().endswith("(measured 2026-12-01 to 2026-12-05)")
    same = cell_source(parse_snapshot(_snapshot("2026-12-05", "2026-12-05")))
    assert Statement("x", (same,), True).cite_short(say_simulated=False) == "matrix cells of 2026-12-05"


def test_the_committed_snapshot_dates_the_cells_re_measured_on_2026_12_05():
    """The sample's re-run cells (fi-0.7.1, sglang-0.5.12) carry 2026-12-05 from their cell.json's finished time."""
    import json

    from pcgkit.advice.load import SNAPSHOT_FILE
    from pcgkit.resources import fixtures_dir

    cells = {c["id"]: c for c in json.loads((fixtures_dir() / SNAPSHOT_FILE).read_text())["cells"]}
    assert cells["fi-0.7.1"]["measured"] == cells["sglang-0.5.12"]["measured"] == "2026-12-05"
    assert cells["fi-0.5.0"]["measured"] is None  # not recorded: the matrix's creation date stands for it


def test_triage_names_a_re_measured_cells_own_date():
    """triage's matrix line for a cell re-run after the matrix was created says 'measured <its date>'."""
    from pcgkit.triage.advice import CatalogView, _matrix
    from pcgkit.triage.facts import Fact

    snapshot = _snapshot("2026-12-05", None)
    lines = _matrix(snapshot, (Fact("sglang", "0.5.12", 1, "log"),), "sglang-compile-sm120", CatalogView(()))
    assert "cell a (measured 2026-12-05; sglang 0.5.12" in lines[0]
    assert "cell b (sglang 0.5.12" in lines[1]  # unrecorded: the matrix's date in the line's head stands


def test_compat_cell_details_say_when_each_cell_was_measured():
    """compat.md's cell details name a re-run cell's own finished time, and say when a cell recorded none."""
    import json
    from pathlib import Path

    from pcgkit.report.markdown import render_markdown
    from pcgkit.report.model import from_json

    sample = Path(__file__).resolve().parents[1] / "reports/samples/matrix-2026-12-01/compat.json"
    text = render_markdown(from_json(json.loads(sample.read_text())))
    block = text.split("<code>sglang-0.5.12</code>")[1].split("</details>")[0]
    assert "- measured: 2026-12-05T09:34:26+00:00" in block
    assert "- measured: not recorded in this cell" in text.split("<code>fi-0.5.0</code>")[1].split("</details>")[0]
