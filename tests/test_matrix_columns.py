"""The compatibility report's columns are generic over the case ids in the results: failure modes,
then fixes ("fix works in this cell: yes/no, why"), then any other case family, with no renderer edit."""

from __future__ import annotations

from pcgkit.harness.signature import Frame, Signature
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import ERROR, RAN, CellOutcome
from pcgkit.report.compat import build_compat, case_columns, case_family, fix_works, render_markdown
from pcgkit.report.dashboard import render_dashboard
from pcgkit.verdicts.fixmodes import FIX_MODES
from pcgkit.verdicts.modes import MODES
from pcgkit.verdicts.result import CaseResult
from pcgkit.verdicts.verdict import Verdict

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
    ids = [c["id"] for c in case_columns(OUTCOMES)]
    present_fixes = [m for m in FIX_MODES if m in ("fix-custom-op", "fix-allow-in-graph", "fix-no-fullgraph")]
    assert ids == [*MODES, *present_fixes, NEW_CASE]
    # The family comes from the catalog, never from an id's prefix: an id it does not know is "other".
    assert [case_family(i) for i in ("mode2", "fix-custom-op", "sglang-compile-sm90", "fix-future", NEW_CASE)] == [
        "failure", "fix", "sglang", "other", "other"]


def test_columns_follow_the_results_not_a_fixed_list():
    """A run with only mode1 and a new case has exactly those two columns; no cell fakes the others."""
    outcomes = [ran("x", "0.6.1", result(NEW_CASE, Verdict.REPRODUCED), result("mode1", Verdict.FIXED))]
    compat = build_compat(outcomes, created=CREATED)
    assert [m["id"] for m in compat["modes"]] == ["mode1", NEW_CASE]
    assert set(compat["cells"][0]["modes"]) == {"mode1", NEW_CASE}
    assert compat["modes"][1] == {"id": NEW_CASE, "family": "other", "title": NEW_CASE, "known_signature": ""}


def test_all_error_run_still_lists_the_registered_cases():
    """When no cell produced a result, the registered failure and fix modes are the columns, all 'error'."""
    compat = build_compat([OUTCOMES[2]], created=CREATED)
    assert [m["id"] for m in compat["modes"]] == [*MODES, *FIX_MODES]
    assert {e["verdict"] for e in compat["cells"][0]["modes"].values()} == {"error"}


def test_fix_works_maps_verdicts_to_yes_no_or_nothing():
    """fixed -> yes; reproduced/drifted -> no; not-applicable, skipped, error say nothing about the fix."""
    assert [fix_works(v) for v in ("fixed", "reproduced", "drifted", "not-applicable", "skipped", "error")] == [
        "yes", "no", "no", None, None, None]


def test_markdown_fix_columns_say_yes_no_and_why():
    """compat.md: a fix column entry reads 'yes/no (verdict): why'; failure columns keep verdict + signature."""
    md = render_markdown(build_compat(OUTCOMES, created=CREATED))
    header = next(ln for ln in md.splitlines() if ln.startswith("| cell |"))
    assert header.endswith("| mode1 | mode2 | mode3 | mode4 | fix-custom-op | fix-allow-in-graph | fix-no-fullgraph "
                           f"| {NEW_CASE} |")
    rows = {ln.split("`")[1]: ln for ln in md.splitlines() if ln.startswith("| `")}
    cols = {cell: [c.strip() for c in row.strip("|").split("|")] for cell, row in rows.items()}
    first_fix = 6 + len(MODES)
    assert cols["works"][first_fix] == "**yes** (fixed): traced cleanly under fullgraph=True"
    assert cols["broken-fix"][first_fix].startswith("**no** (drifted): the fix failed: RuntimeError: fake shape")
    assert cols["works"][first_fix + 1] == ("**no** (reproduced): matches the known failure "
                                            "`gb0007 cpp_ext.py:69:get_cuda_version`")
    assert cols["works"][-1] == "**fixed**"  # the unknown family renders as a plain verdict column
    assert cols["bad"][first_fix:] == ["**error** (install)"] * 4
    assert "fix works in this cell" in md
    assert f"- {NEW_CASE} (other): {NEW_CASE}" in md


def test_ranges_cover_fix_and_new_case_columns():
    """Version ranges are computed for every column: fix-custom-op works at 0.6.1, not from 0.7.4."""
    compat = build_compat(OUTCOMES, created=CREATED)
    text = compat["ranges"]["fix-custom-op"]["flashinfer-python"]["text"]
    assert text == "flashinfer-python ≤ 0.6.1 fixed for fix-custom-op (1 cell); drifted from 0.7.4 (1 cell)"
    assert "fixed in every cell that ran (2 cells)" in compat["ranges"][NEW_CASE]["flashinfer-python"]["text"]


def test_dashboard_has_a_column_and_fix_answer_per_case():
    """index.html: one header per case (the new family included) and fix cells that answer yes/no with why."""
    page = render_dashboard(build_compat(OUTCOMES, created=CREATED))
    present_fixes = ["fix-custom-op", "fix-allow-in-graph", "fix-no-fullgraph"]  # what OUTCOMES carry
    for case_id in [*MODES, *present_fixes, NEW_CASE]:
        assert f'th class="mode-col" data-mode="{case_id}"' in page
    assert 'data-mode="fix-upstream-op"' not in page  # a registered case no cell ran gets no column
    assert '<b>no</b> (drifted)<span class="sig why">the fix failed: RuntimeError' in page
    assert page.count("fix works here?") == len(present_fixes)
