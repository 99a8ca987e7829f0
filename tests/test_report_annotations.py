"""What other stages add to a report cell, as compat.md and the dashboard show it: where it ran, the input it
was read from, disagreements flagged in the grid, cannot-run cells labelled as such."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import ERROR, RAN, CellOutcome
from pcgkit.matrix.uninstallable import parse_uninstallable
from pcgkit.matrix.where import Where
from pcgkit.report.annotations import disagreement_marks, mark_expected, where_line
from pcgkit.report.compat import build_compat
from pcgkit.report.dashboard import build_page
from pcgkit.report.markdown import render_markdown
from pcgkit.report.writers import publish
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.modes import MODES
from pcgkit.verdicts.result import CaseResult

RULES = parse_uninstallable('''
[[cannot-run]]
when = { "flashinfer-python" = ">=0.4.0,<=0.4.1" }
match = "apache-tvm-ffi==0.1.0b15"
why = "flashinfer-python 0.4.x pins a pre-release the index no longer serves"
link = "https://github.com/flashinfer-ai/flashinfer/issues/1962"
tried = 2026-12-05
retry-days = 7
''')
GPU_BOX = Where(host="gpu-box", runner_labels=("self-hosted", "h200"), backend="docker",
                image="lmsysorg/sglang:v0.5.12", image_digest="sha256:abc", device="NVIDIA H200 (compute capability 9.0)")
TVM_FAILURE = "flashinfer-python==0.4.1 depends on apache-tvm-ffi==0.1.0b15, which the index does not have"


def ran(cell_id: str, mode1: Verdict, where: Where | None = None) -> CellOutcome:
    results = tuple(CaseResult(m, "sim-sm120", mode1 if m == "mode1" else Verdict.REPRODUCED, "r",
                               {"label": "sim", "simulated": True}, {"flashinfer-python": "0.6.1"}, 1.0) for m in MODES)
    return CellOutcome(Cell(cell_id, flashinfer="0.6.1", torch="2.9.1"), RAN, 5.0, results=results, where=where)


def report():
    outcomes = [
        ran("here", Verdict.REPRODUCED, GPU_BOX), ran("there", Verdict.FIXED),
        CellOutcome(Cell("sglang-0.5.4", sglang="0.5.4", flashinfer="0.4.1", torch="2.8.0"), ERROR, 1.0, "install",
                    TVM_FAILURE, "uv says: " + TVM_FAILURE),
        CellOutcome(Cell("broken", flashinfer="0.4.1", torch="2.8.0"), ERROR, 1.0, "install", "disk full", "no space"),
    ]
    compat = mark_expected(build_compat(outcomes, created="2026-01-01T00:00:00+00:00"), RULES)
    here = compat.cells[0]
    cells = (dataclasses.replace(here, source={"from": "artifacts/h200.tar.gz", "member": "here/cell.json"}),
             *compat.cells[1:])
    disagreement = {"cell": "here", "definition_hash": "d", "case": "mode1", "kind": "simulated-vs-real",
                    "fields": ["verdict"],
                    "first": {"row": "there", "where": "laptop/venv", "target": "sim-sm120", "verdict": "fixed"},
                    "second": {"row": "here", "where": "gpu-box[self-hosted,h200]/docker", "target": "gpu",
                               "verdict": "reproduced", "graph_break_id": "gb0007"}}
    return dataclasses.replace(compat, cells=cells, disagreements=(disagreement,))


def test_expected_uninstallable_needs_both_the_versions_and_the_failure_text():
    """The recorded failure at covered versions is expected; another failure at the same versions stays an error."""
    cells = {c.id: c for c in report().cells}
    assert cells["sglang-0.5.4"].expected.startswith("cannot-run: flashinfer-python 0.4.x")
    assert cells["broken"].expected == "" and cells["here"].expected == ""


def test_compat_md_labels_expected_cells_apart_from_errors_and_shows_where_and_source():
    """Header counts them apart; their own section (not 'Error cells'); details say where it ran and what was read."""
    text = render_markdown(report())
    assert "4 cells, 2 with verdicts, 1 error cells, 1 cannot-run" in text
    errors = text.split("## Error cells")[1].split("##")[0]
    assert "`broken`" in errors and "sglang-0.5.4" not in errors
    assert "## Cells that cannot run" in text and "⊘ `sglang-0.5.4`" in text
    grid_row = next(line for line in text.splitlines() if line.startswith("| `sglang-0.5.4`"))
    assert "⊘" in grid_row and "!" not in grid_row and "| expected |" in grid_row
    assert "- ran on: gpu-box[self-hosted,h200] / docker; image lmsysorg/sglang:v0.5.12 (sha256:abc)" in text
    assert "- read from: `h200.tar.gz: here/cell.json`" in text  # its name, not the folder it lay in


def test_disagreement_is_flagged_on_both_rows_of_the_grid():
    """Both sides of a simulated-vs-real disagreement carry ≠ on that case in compat.md; other cases do not."""
    compat = report()
    assert set(disagreement_marks(compat)) == {("here", "mode1"), ("there", "mode1")}
    text = render_markdown(compat)
    header = next(line for line in text.splitlines() if line.startswith("| cell |")).split(" | ")
    for cell in ("here", "there"):
        row = next(line for line in text.splitlines() if line.startswith(f"| `{cell}`")).split(" | ")
        assert "≠" in row[header.index("mode1")] and "≠" not in row[header.index("mode2")]


def test_dashboard_grid_flags_disagreements_and_carries_where_in_the_sidecar():
    """The grid cell gets class 'disagree' with the text in its title; the sidecar has the where/source lines."""
    page = build_page(report())
    assert page.html.count(" disagree\" data-case=\"mode1\"") == 2
    assert "disagrees: simulated-vs-real (verdict differ)" in page.html
    assert 'data-machine="gpu-box[self-hosted,h200]/docker"' in page.html and ">Ran on <select" in page.html
    assert 'data-verdict="cannot-run"' in page.html and 'id="count-expected">1 cannot-run' in page.html
    sidecar = json.loads(page.sidecars["index.files/cells/0.js"].split(", ", 1)[1].removesuffix(");\n"))
    assert sidecar["where_line"] == where_line(GPU_BOX.to_dict())
    assert sidecar["source_line"] == "h200.tar.gz: here/cell.json" and "source" not in sidecar
    assert sidecar["entries"]["mode1"]["disagrees"][0].startswith("simulated-vs-real")


def test_publish_labels_expected_cells_from_a_compat_document_without_outcomes(tmp_path: Path):
    """`report --compat` has no outcomes: publish still applies the rules, and compat.json keeps the label."""
    plain = dataclasses.replace(report(), cells=tuple(dataclasses.replace(c, expected="") for c in report().cells))
    published, paths = publish(plain, tmp_path, names=("json",), uninstallable=RULES)
    assert [c.id for c in published.cells if c.expected] == ["sglang-0.5.4"]
    cells = {c["id"]: c for c in json.loads(paths["json"][0].read_text())["cells"]}
    assert cells["sglang-0.5.4"]["expected"].startswith("cannot-run") and not cells["broken"].get("expected")
