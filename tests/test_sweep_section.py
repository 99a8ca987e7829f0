"""The report's sweep section: readiness per release x arch, since/fixed history, flips, cross-check."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from pcgkit.report.sweep_section import (
    SweepRow,
    build_sweep,
    history,
    readiness,
    render_sweep_section,
)


def rows_from_sweep_json(documents: Iterable[Mapping]) -> list[SweepRow]:
    """Rows from `pcgkit sweep` output files (schema pcgkit.sweep/1), e.g. tests/data/sweep_samples/."""
    rows = []
    for doc in documents:
        simulated = not str(doc.get("header", {}).get("device", "")).startswith("real")
        for r in doc["results"]:
            rows.append(SweepRow(
                flashinfer=r["flashinfer"], torch=r["torch"], arch=r["arch"], entry=r["entry_id"], family=r["family"],
                cls=r["classification"]["class"], where=r["classification"]["where"], verdict=r["verdict"],
                simulated=simulated, expected=r.get("expected"), link=r.get("expectation_link"),
            ))
    return rows



def _row(fi: str, cls: str, entry="fp4_quantize", arch="sm120", where="core.py:169:register", expected=None) -> SweepRow:
    return SweepRow(fi, "2.9.1", arch, entry, "quant", cls, where, "x", True, expected, "https://example.invalid/t" if expected else None)


def test_readiness_of_a_measured_release():
    """tests/data/sweep_samples/fi-0.5.0.json (measured): per arch, counts add up to the entry points swept."""
    doc = json.loads((Path(__file__).parent / "data" / "sweep_samples" / "fi-0.5.0.json").read_text())
    rows = rows_from_sweep_json([doc])
    table = readiness(rows)
    assert {r["arch"] for r in table} == {"sm120", "sm100", "sm90"}
    for r in table:
        assert sum(r["counts"].values()) == int(doc["header"]["entry points"])
        assert r["judged"] <= r["applicable"] and r["counts"].get("needs-gpu", 0) == r["applicable"] - r["judged"] - r["counts"].get("error", 0)


def test_history_says_since_when_and_what_fixed_it():
    """A failure run, then a trace as an opaque op: 'fixed in' that release, by that op; unjudged releases skipped."""
    rows = [_row("0.6.1", "breaks-in-jit-loader"), _row("0.6.3", "needs-gpu"), _row("0.6.12", "opaque-op", where="flashinfer::fp4_quantize"),
            _row("0.5.0", "breaks-in-jit-loader")]
    (h,) = history(rows)
    assert (h["state"], h["since"], h["releases"]) == ("opaque-op", "0.6.12", ["0.5.0", "0.6.1", "0.6.12"])
    assert h["events"] == [{"release": "0.6.12", "kind": "fixed", "cls": "opaque-op", "where": "flashinfer::fp4_quantize",
                            "previous": "breaks-in-jit-loader"}]


def test_the_section_flags_sweep_flips_and_public_disagreement():
    """Markdown: readiness row, the fix, a ⚑ for a sweep case that flipped (not for others), a 'no' cross-check."""
    rows = [_row("0.6.1", "breaks-in-jit-loader"), _row("0.7.4", "opaque-op", where="flashinfer::fp4_quantize"),
            _row("0.7.4", "breaks-elsewhere", entry="rmsnorm", expected="breaks-in-jit-loader")]
    changes = {"fi-0.7.4": [{"mode": "sweep.sm120.fp4_quantize", "previous": "reproduced", "current": "fixed"},
                            {"mode": "mode1", "previous": "reproduced", "current": "fixed"}]}
    text = "\n".join(render_sweep_section(build_sweep(rows), changes))
    assert "| 0.7.4 | 2.9.1 | sm120 | 1/2 |" in text
    assert "`fp4_quantize` [sm120]: traces since 0.7.4, opaque-op since 0.7.4; fixed in 0.7.4" in text
    assert "⚑ `fi-0.7.4` sweep.sm120.fp4_quantize: reproduced → fixed" in text and "mode1" not in text
    assert "| `rmsnorm` | 0.7.4 | sm120 | [breaks-in-jit-loader](https://example.invalid/t) | breaks-elsewhere | **no** |" in text
    assert history(rows[:1] + [_row("0.7.4", "breaks-elsewhere")])[0]["state_since"] == "0.7.4"


def test_no_sweep_rows_no_section():
    """A matrix run without the sweep adds nothing to compat.md."""
    assert render_sweep_section(build_sweep([])) == []
