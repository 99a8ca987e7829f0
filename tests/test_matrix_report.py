"""Matrix reports from synthetic cell outcomes: ranges, compat.md/json, history flags, merged JUnit, HTML."""

from __future__ import annotations

import json
from pathlib import Path

from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import ERROR, RAN, CellOutcome, read_outcome, write_outcome
from pcgkit.report.compat import build_compat
from pcgkit.report.dashboard import build_page
from pcgkit.report.junit_merge import validate, write_merged
from pcgkit.report.markdown import render_markdown
from pcgkit.report.writers import publish
from pcgkit.values.signature import Frame, Signature
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.modes import MODES
from pcgkit.verdicts.result import CaseResult

DEVICE = {"label": "simulated SM120 (no GPU; hardware queries answered as 12.0)", "simulated": True}
MODE1_SIG = Signature(
    "torch._dynamo.exc.Unsupported", "Attempted to call function marked as skipped", "gb0007",
    innermost_library_frame=Frame("flashinfer/jit/cpp_ext.py", 69, "get_cuda_version"),
    frame_chain=(Frame("flashinfer/fp4_quantization.py", 123, "fp4_quantize"),
                 Frame("flashinfer/jit/cpp_ext.py", 69, "get_cuda_version")),
)
HOSTILE = "<script>document.title='pwned'</script> & friends"


def ran(cell_id: str, flashinfer: str, mode1: Verdict, torch: str = "2.9.1", reason: str = "ok") -> CellOutcome:
    results = tuple(
        CaseResult(
            mode=m, variant="sim-sm120", verdict=mode1 if m == "mode1" else Verdict.REPRODUCED, reason=reason,
            device=DEVICE, versions={"flashinfer-python": flashinfer, "torch": torch}, duration_s=1.0,
            signature=MODE1_SIG if (m != "mode1" or mode1 is Verdict.REPRODUCED) else None,
        )
        for m in MODES
    )
    cell = Cell(cell_id, flashinfer=flashinfer, torch=torch)
    versions = {"flashinfer-python": flashinfer, "torch": torch, "python": "3.12.1", "sglang": None}
    return CellOutcome(cell, RAN, 12.0, versions=versions, results=results)


def broken(cell_id: str) -> CellOutcome:
    cell = Cell(cell_id, flashinfer="0.0.0", torch="2.9.1")
    return CellOutcome(cell, ERROR, 3.0, "install", "unknown version: flashinfer-python==0.0.0", "no version " + HOSTILE)


OUTCOMES = [
    ran("a", "0.5.3", Verdict.REPRODUCED),
    ran("b", "0.6.1", Verdict.REPRODUCED),
    broken("bad"),
    ran("c", "0.7.4", Verdict.FIXED, torch="2.14.1", reason=HOSTILE),
]


def test_attribution_spans_merge_equal_verdicts_and_ignore_error_cells():
    """flashinfer 0.5.3 and 0.6.1 reproduce, 0.7.4 (torch 2.14.1) is fixed; the error cell adds no span."""
    a = build_compat(OUTCOMES, created="x").attribution["mode1"]
    spans = a.spans[a.explaining[0]] if a.explaining else ()
    assert a.basis == "confounded" and set(a.explaining) == {"flashinfer-python", "torch"}
    assert [(s.outcome, s.first, s.last) for s in a.spans["flashinfer-python"]] == [
        ("reproduced", "0.5.3", "0.6.1"), ("fixed", "0.7.4", "0.7.4")]
    assert "bad" not in {c for s in spans for c in s.cells}


def test_disagreeing_cells_at_one_version_are_mixed_and_attributed_to_the_other_axis():
    """Same flashinfer, different torch, different verdicts: torch matters (controlled), flashinfer spans are mixed."""
    outcomes = [ran("a", "0.6.1", Verdict.REPRODUCED), ran("b", "0.6.1", Verdict.FIXED, torch="2.15.0")]
    a = build_compat(outcomes, created="x").attribution["mode1"]
    assert (a.basis, a.explaining) == ("controlled", ("torch",))
    assert a.finding("torch").pair == ("a", "b")


def test_markdown_grid_has_rows_per_cell_details_and_error_reasons():
    """compat.md: one grid row per cell (symbols), a <details> per cell with signatures, error cells named."""
    md = render_markdown(build_compat(OUTCOMES, created="2026-01-01T00:00:00+00:00"))
    rows = [ln for ln in md.splitlines() if ln.startswith("| `")]
    # grid rows in version order (flashinfer 0.0.0, 0.5.3, 0.6.1, 0.7.4), not the report's order
    assert [r.split("|")[1].strip() for r in rows] == ["`bad`", "`a`", "`b`", "`c`"]
    assert rows[1].split("|")[6].strip() == "✗" and rows[3].split("|")[6].strip() == "✓"
    assert md.count("<details>") == 4 and "`flashinfer/jit/cpp_ext.py:69:get_cuda_version`" in md
    assert "`bad` (install): unknown version: flashinfer-python==0.0.0" in md
    assert "fixed from 0.7.4" in md and "## Legend" in md and "simulated" in md.lower()
    fenced = md.split("```")  # odd pieces are inside code fences, where a log's markup is inert text
    assert all("<script>" not in piece for piece in fenced[::2]) and "<script>" in "".join(fenced[1::2])


def test_history_flags_cells_whose_verdict_changed(tmp_path: Path):
    """A second run where cell 'b' turns fixed is flagged against the first; history.jsonl gets a line per run."""
    first, _ = publish(build_compat(OUTCOMES, created="2026-01-01T00:00:00+00:00"), tmp_path, names=("json",))
    assert first.changes == ()
    second_outcomes = [OUTCOMES[0], ran("b", "0.6.1", Verdict.FIXED), *OUTCOMES[2:]]
    second, paths = publish(build_compat(second_outcomes, created="2026-01-02T00:00:00+00:00"), tmp_path,
                            names=("json", "markdown", "dashboard"))
    assert [(c.cell, c.case, c.previous, c.current) for c in second.changes] == [("b", "mode1", "reproduced", "fixed")]
    assert second.previous_run == "2026-01-01T00:00:00+00:00"
    assert len((tmp_path / "history.jsonl").read_text().splitlines()) == 2
    assert json.loads(paths["json"][0].read_text())["schema"] == "pcgkit.compat/2"
    assert "⚑ `b` mode1: reproduced → fixed" in paths["markdown"][0].read_text()
    sidecar = (tmp_path / "index.files/cells/1.js").read_text()
    mode1 = json.loads(sidecar.removeprefix("window.pcgkitEvidence(1, ").removesuffix(");\n"))["entries"]["mode1"]
    # The history rides as one verdict code per run, since as a run index; the dates are on the page, once.
    assert (mode1["h"], mode1["flips"], mode1["since"]) == ("RF", 1, 1)
    page = (tmp_path / "index.html").read_text()
    assert '["2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"]' in page and "2026-01-01T00:00:00+00:00" not in sidecar


def test_outcome_round_trips_through_cell_json(tmp_path: Path):
    """cell.json keeps status, results and evidence; an unreadable file reads as None, not a crash."""
    path = tmp_path / "cell.json"
    write_outcome(path, OUTCOMES[0])
    again = read_outcome(path)
    assert again.results == OUTCOMES[0].results and again.cell == OUTCOMES[0].cell
    path.write_text("{not json")
    assert read_outcome(path) is None


XUNIT1_CELL = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest"
 errors="0" failures="0" skipped="1" tests="2" time="1.23456" timestamp="2026-01-01T00:00:00" hostname="vm">
<testcase classname="cases.test_mode1_nvcc_subprocess" name="test_nvcc_subprocess[sim-sm120]" time="1.0123">
<properties><property name="pcgkit.verdict" value="reproduced" /><property name="pcgkit.reason" value="R &lt;x&gt;" />
</properties><skipped type="pytest.xfail" message="known bug" /></testcase>
<testcase classname="cases.test_mode1_nvcc_subprocess" name="test_nvcc_subprocess[gpu]" time="0.001" /></testsuite>
</testsuites>"""


def test_merged_junit_is_xunit2_valid_and_tags_every_testcase(tmp_path: Path):
    """Two cells with the same tests stay distinct; evidence moves to system-out; error cells are <error>."""
    import xml.etree.ElementTree as ET

    for cell_id in ("a", "b"):
        (tmp_path / cell_id).mkdir()
        (tmp_path / cell_id / "junit.xml").write_text(XUNIT1_CELL)
    path = write_merged([OUTCOMES[0], OUTCOMES[1], OUTCOMES[2]], tmp_path, tmp_path / "merged.xml")
    assert validate(path) == []
    root = ET.parse(path).getroot()
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert len(names) == len(set(names)) == 5
    assert "test_nvcc_subprocess[sim-sm120][cell=b]" in names
    first = next(root.iter("testcase"))
    assert first.find("properties") is None and "pcgkit.verdict=reproduced" in first.find("system-out").text
    error = [tc for tc in root.iter("testcase") if tc.find("error") is not None]
    assert len(error) == 1 and "unknown version" in error[0].find("error").get("message")
    props = {p.get("name"): p.get("value") for p in root.find("testsuite").iter("property")}
    assert props["pcgkit.cell.id"] == "a"


def test_xunit1_file_is_rejected_by_the_schema(tmp_path: Path):
    """The schema does bite: a per-cell xunit1 file (testcase properties) is invalid xunit2."""
    path = tmp_path / "x1.xml"
    path.write_text(XUNIT1_CELL)
    assert validate(path)


def test_dashboard_escapes_untrusted_strings_and_has_one_sidecar_per_cell():
    """Exception text with <script> never reaches the page as markup; every cell has a row and a sidecar."""
    page = build_page(build_compat(OUTCOMES, created="2026-01-01T00:00:00+00:00"))
    assert "<script>document.title" not in page.html
    assert page.html.count('class="cell-row"') == 4 and len(page.sidecars) == 4
    assert "document.title='pwned'" in page.sidecars["index.files/cells/3.js"]  # data, shown via textContent
    assert "simulated" in page.html