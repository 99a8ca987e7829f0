"""What other stages add to a report cell, worded once for compat.md and the dashboard: where it ran, which input
it was read from, the results that disagree with it, and whether it is a cannot-run cell. Pure.

A cannot-run cell ([[cannot-run]] in fixtures/expectations.toml: planned not to run from a measured fact, or failed
exactly as recorded on a retry day) is labelled as such rather than as a plain error; it keeps status "error" and
its entries stay "error": it says nothing about the bug.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from pcgkit.matrix.outcome import STAGE_CANNOT_RUN, STAGE_INSTALL
from pcgkit.matrix.uninstallable import LABEL, Uninstallable
from pcgkit.report.model import CellReport, CompatReport
from pcgkit.values.verdict import CANNOT_RUN_LEGEND

EXPECTED_LABEL = LABEL  # a cannot-run cell's label (pcgkit.values.verdict.CANNOT_RUN)
EXPECTED_SYMBOL = CANNOT_RUN_LEGEND.symbol  # a cannot-run cell's entries, in place of "!"
DISAGREE_SYMBOL = "≠"  # beside a verdict another result of the same cell contradicts


def where_line(where: Mapping[str, Any] | None) -> str:
    """'gpu-box-3[self-hosted,h200] / docker, image lmsysorg/sglang:v0.5.12 (sha256:…), NVIDIA H200 …'."""
    if not where:
        return ""
    labels = ",".join(where.get("runner_labels") or ())
    machine = where.get("host") or "unknown"
    if where.get("runner_environment") == "github-hosted":
        machine = f"github-hosted[{labels}]" if labels else "github-hosted"
    elif labels:
        machine = f"{machine}[{labels}]"
    parts = [f"{machine} / {where.get('backend') or 'venv'}"]
    if where.get("image"):
        digest = where.get("image_digest") or ""
        parts.append(f"image {where['image']}" + (f" ({digest})" if digest else ""))
    if where.get("device"):
        parts.append(str(where["device"]) + (f", driver {where['driver']}" if where.get("driver") else ""))
    if where.get("ci"):
        parts.append(f"{where['ci']}" + (f" job {where['job']}" if where.get("job") else "")
                     + (f" {where['run_url']}" if where.get("run_url") else ""))
    return "; ".join(parts)


def source_line(source: Mapping[str, Any] | None) -> str:
    """'h200.tar.gz: cells/fi-0.6.1/cell.json' (`pcgkit report --from`): the source by its own name only, never the
    folder it lay in on the machine that made the report (pages are pasted and published; issue 44)."""
    if not source:
        return ""
    member = source.get("member") or ""
    origin = PurePath(str(source.get("from") or "?")).name or "?"
    return origin + (f": {member}" if member else "")


def witness_text(w: Mapping[str, Any]) -> str:
    """'sim-sm120 on box-a/venv: reproduced GB0001 cpp_ext.py:69:get_cuda_version': one side of a disagreement."""
    extra = " ".join(x for x in (w.get("graph_break_id") or "", w.get("innermost_frame") or "") if x)
    return f"{w.get('target', '?')} on {w.get('where', '?')}: {w.get('verdict', '?')}" + (f" {extra}" if extra else "")


def disagreement_marks(report: CompatReport) -> dict[tuple[str, str], list[str]]:
    """(report row id, case) -> what each disagreement touching it says. Both sides are marked; a side
    whose row is not in the report falls back to the planned cell id, so no disagreement goes unshown."""
    ids = {c.id for c in report.cells}
    marks: dict[tuple[str, str], list[str]] = {}
    for d in report.disagreements:
        text = (f"{d.get('kind', '?')} ({', '.join(d.get('fields') or ())} differ): "
                f"{witness_text(d.get('first') or {})} vs {witness_text(d.get('second') or {})}")
        rows = {str(side.get("row")) for side in (d.get("first") or {}, d.get("second") or {})} & ids
        for row in sorted(rows) or ([str(d["cell"])] if d.get("cell") in ids else []):
            marks.setdefault((row, str(d.get("case"))), []).append(text)
    return marks


def expected_rule(cell: CellReport, rules: Sequence[Uninstallable]) -> Uninstallable | None:
    """The [[cannot-run]] rule that explains this error cell (as
    pcgkit.matrix.uninstallable.expected_failure, on a report cell)."""
    if not cell.is_error or cell.stage not in (STAGE_INSTALL, STAGE_CANNOT_RUN):
        return None
    text = f"{cell.reason}\n{cell.log_tail}"
    return next((r for r in rules if r.covers_axes(cell.axes) and r.match in text), None)


def mark_expected(report: CompatReport, rules: Sequence[Uninstallable]) -> CompatReport:
    """The report with each cannot-run cell's `expected` set to the rule's wording."""
    cells = tuple(dataclasses.replace(c, expected=rule.describe()) if (rule := expected_rule(c, rules)) else c
                  for c in report.cells)
    return dataclasses.replace(report, cells=cells)


def evidence_kind(cell: CellReport) -> str:
    """'real' / 'sim' / 'expected' (cannot-run) / 'none' (an error cell)."""
    if cell.is_error:
        return "expected" if cell.expected else "none"
    return "sim" if cell.simulated else "real"
