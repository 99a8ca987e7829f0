"""The compatibility report's columns are generic over the case ids in the results: failure modes,
then fixes ("fix works in this cell: yes/no, why"), then any other case family, with no renderer edit."""

from __future__ import annotations

from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import ERROR, RAN, CellOutcome
from pcgkit.report.compat import build_compat, case_columns, case_family, fix_works
from pcgkit.report.dashboard import build_page
from pcgkit.report.markdown import render_markdown
from pcgkit.report.model import CaseColumn
from pcgkit.values.signature import Frame, Signature
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.fixmodes import FIX_MODES
from pcgkit.verdicts.modes import MODES
from pcgkit.verdicts.result import CaseResult

DEVICE = {"label": "simulated SM120 (no GPU; hardware queries answered as 12.0)", "simulated": True}
NEW_CASE = "sglang-piecewise"  # a case family the renderer has never heard of
CREATED = "2026-01-01T00:00:00+00:00"
ALLOW_SIG = Signature(
    "torch._dynamo.exc.Unsupported", "call to get_fp4_quantization_module", "gb0007",
    innermost_library_frame=Frame("flashinfer/jit/cpp_ext.py", 69, "get_cuda_version"),
)


def result(case_id: str, verdict: Verdict, reason: str = "", signature: Signature | None = None) -> CaseResult:
    return CaseResult(case_id, "sim-sm120", verdict, reason or f"{case_id} said {verdict.value}", DEVICE,
                      {"flashinfer-python": "0.6.1", "torch": "2.9.1"}, 1.0, signature=signature)


def ran(cell_id: str, flashinfer: str, *results: CaseResult) -> CellOutcome:
    versions = {"flashinfer-python": flashinfer, "torch": "2.9.1", "python": "3.12.1", "sglang": None}
    return CellOutcome(Cell(cell_id, flashinfer=flashinfer, torch="2.9.1"), RAN, 9.0, versions=versions,
                       results=results)


def full_cell(cell_id: str, flashinfer: str, custom_op: Verdict) -> CellOutcome:
    """Every failure mode reproduced, the three fixes, and one case of a new family (listed out of order)."""
    return ran(
        cell_id, flashinfer,
        result(NEW_CASE, Verdict.FIXED, "server compiled the layer"),
        result("fix-no-fullgraph", Verdict.FIXED, "traced under fullgraph=False (2 graph breaks)"),
        result("fix-custom-op", custom_op, "the fix failed: RuntimeError: fake shape (8, 4) != real (8, 8)"
               if custom_op is not Verdict.FIXED else "traced cleanly under fullgraph=True"),
        result("fix-allow-in-graph", Verdict.REPRODUCED, "matches the known failure", ALLOW_SIG),
        *(result(m, Verdict.REPRODUCED) for m in reversed(list(MODES))),
    )


OUTCOMES = [
    full_cell("works", "0.6.1", Verdict.FIXED),
    full_cell("broken-fix", "0.7.4", Verdict.DRIFTED),
    CellOutcome(Cell("bad", flashinfer="0.0.0", torch="2.9.1"), ERROR, 2.0, "install", "unknown version", "tail"),
]


def test_columns_are_failure_modes_then_fixes_then_other_families():
    """Column order comes from the results: mode1..4, the fixes in registry order, then the new family."""
    ids = [c.id for c in case_columns(OUTCOMES)]
    present_fixes = [m for m in FIX_MODES if m in ("fix-custom-op", "fix-allow-in-graph", "fix-no-fullgraph")]
    assert ids == [*MODES, *present_fixes, NEW_CASE]
    # The family comes from the catalog, never from an id's prefix: an id it does not know is "other".
    assert [case_family(i) for i in ("mode2", "fix-custom-op", "sglang-compile-sm90", "fix-future", NEW_CASE)] == [
        "failure", "fix", "sglang", "other", "other"]


def test_columns_follow_the_results_not_a_fixed_list():
    """A run with only mode1 and a new case has exactly those two columns; no cell fakes the others."""
    outcomes = [ran("x", "0.6.1", result(NEW_CASE, Verdict.REPRODUCED), result("mode1", Verdict.FIXED))]
    compat = build_compat(outcomes, created=CREATED)
    assert [m.id for m in compat.cases] == ["mode1", NEW_CASE]
    assert set(compat.cells[0].entries) == {"mode1", NEW_CASE}
    assert compat.cases[1] == CaseColumn(NEW_CASE, "other", NEW_CASE, "")


def test_all_error_run_still_lists_the_registered_cases():
    """When no cell produced a result, the registered failure and fix modes are the columns, all 'error'."""
    compat = build_compat([OUTCOMES[2]], created=CREATED)
    assert [m.id for m in compat.cases] == [*MODES, *FIX_MODES]
    assert {e.verdict for e in compat.cells[0].entries.values()} == {"error"}


def test_fix_works_maps_verdicts_to_yes_no_or_nothing():
    """fixed -> yes; reproduced/drifted -> no; not-applicable, skipped, error say nothing about the fix."""
    assert [fix_works(v) for v in ("fixed", "reproduced", "drifted", "not-applicable", "skipped", "error")] == [
        "yes", "no", "no", None, None, None]


def test_markdown_fix_cells_say_yes_no_and_why_uncut():
    """compat.md: the grid has a column per case; a fix's details read 'fix works: yes/no' with the whole reason."""
    md = render_markdown(build_compat(OUTCOMES, created=CREATED))
    header = next(ln for ln in md.splitlines() if ln.startswith("| cell |"))
    assert header.endswith("| mode1 | mode2 | mode3 | mode4 | fix-custom-op | fix-allow-in-graph | fix-no-fullgraph "
                           f"| {NEW_CASE} |")
    assert "✓ fixed (fix works: yes)" in md and "≈ drifted (fix works: no)" in md
    assert "the fix failed: RuntimeError: fake shape" in md and "…" not in md
    assert f"- {NEW_CASE} (other): {NEW_CASE}" in md


def test_attribution_covers_fix_and_new_case_columns():
    """Every column is attributed: fix-custom-op works at 0.6.1, not from 0.7.4; the new case is fixed everywhere."""
    compat = build_compat(OUTCOMES, created=CREATED)
    spans = compat.attribution["fix-custom-op"].spans["flashinfer-python"]
    assert [(s.outcome, s.first) for s in spans] == [("fixed", "0.6.1"), ("drifted", "0.7.4")]
    assert compat.attribution[NEW_CASE].basis == "same"


def test_dashboard_has_a_column_per_case_present():
    """index.html: one header per case present (the new family included), none for a case no cell ran."""
    page = build_page(build_compat(OUTCOMES, created=CREATED)).html
    present_fixes = ["fix-custom-op", "fix-allow-in-graph", "fix-no-fullgraph"]  # what OUTCOMES carry
    for case_id in [*MODES, *present_fixes, NEW_CASE]:
        assert f'<th class="case" data-case="{case_id}"' in page
    assert '<th class="case" data-case="fix-upstream-op"' not in page