"""compat.md: an answer first (per upstream: where it breaks, where it is fixed and by which change,
what the workaround costs), then a compact verdict grid, then each cell's evidence in <details>. Pure.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence

from pcgkit.report import attribution as attr
from pcgkit.report.annotations import (
    DISAGREE_SYMBOL,
    EXPECTED_LABEL,
    EXPECTED_SYMBOL,
    disagreement_marks,
    evidence_kind,
    source_line,
    where_line,
)
from pcgkit.report.model import FIX, SYMBOLS, CellReport, CompatReport, changes_by_cell
from pcgkit.report.sglang_section import render_sglang_facts
from pcgkit.report.summary import SIMULATION_NOTE
from pcgkit.report.sweep_section import is_sweep_case, render_sweep_section
from pcgkit.report.upstream import EMPTY, Upstream
from pcgkit.report.wording import axis_name, describe, evidence_label, fixed_from, not_judged, traced_only
from pcgkit.util.sanitize import md_cell, md_code
from pcgkit.values.axes import GRID_AXES
from pcgkit.values.runcheck import says_call_path_ran
from pcgkit.values.verdict import CANNOT_RUN_LEGEND


def md(text: object) -> str:
    """Table-safe text: one line, pipes escaped, control characters gone, HTML-looking text shown as text
    (the one sanitiser, pcgkit.util.sanitize)."""
    return _md_str(text) if isinstance(text, str) else md_cell(text)


@functools.lru_cache(maxsize=65536)
def _md_str(text: str) -> str:
    # Cells repeat the same reasons, frames and versions thousands of times at matrix scale.
    return md_cell(text)


def symbol(verdict: str) -> str:
    return SYMBOLS.get(verdict, "?")


def _case_line(report: CompatReport, case_id: str) -> str:
    case = report.case(case_id)
    a = report.attribution.get(case_id)
    if case is None or a is None:
        return ""
    if a.basis == attr.NONE:
        return f"- **{case.id}** ({md(case.title)}): no verdict in any cell: {md(not_judged(report, case_id))}"
    cells = [s for spans in a.spans.values() for span in spans for s in span.cells]
    line = f"- **{case.id}** ({md(case.title)}): {md(describe(a))} [{evidence_label(report, case_id, cells)}]"
    point = report.failure_points.get(case_id)
    if point is not None and point.basis not in (attr.SAME, attr.NONE) and (point.explaining, point.basis) != (a.explaining, a.basis):
        line += f"\n  - where it fails: {md(describe(point))}"
    return line


def _fix_summary(report: CompatReport, case_id: str) -> str:
    ran = [c.entries[case_id] for c in report.cells if case_id in c.entries and c.entries[case_id].fix_works]
    if not ran:
        return "not measured in these cells"
    works = [e for e in ran if e.fix_works == "yes"]
    traced = sum(1 for e in works if not says_call_path_ran(e.reason))  # a `fixed` from before the run rule
    return (f"works in {len(works) - traced} of {len(ran)} cells that judged it"
            + (f" (call path ran); {traced} more traced, measured before the kit ran call paths, so not shown to run"
               if traced else ""))


def _measured_here(report: CompatReport, link, axis: str) -> str:
    """What these cells measure for the cases a thread bears on, said either way, beside its read state."""
    parts = []
    for case in (c for c in link.cases if report.case(c)):
        first, traced = fixed_from(report, case, axis), traced_only(report, case, axis)
        only = (f" ({axis_name(axis)} {', '.join(traced)} traced only, call path not run: not counted)"
                if traced else "")
        if first is None:
            parts.append(f"measured here ({case}): no change to fixed with its call path run along {axis_name(axis)}"
                         + only)
            continue
        note = ""
        if link.read.first_release and first != link.read.first_release:
            note = f", DISAGREES with the read first release {link.read.first_release}"
        elif link.read.kind == "issue" and link.read.state == "open":
            note = ": the thread is open although the case it matches is measured fixed; ask upstream to confirm and close"
        parts.append(f"measured here ({case}): fixed (call path ran) from {axis_name(axis)} {first}{only}{note}")
    return " " + "; ".join(parts) + "." if parts else ""


def _answer_table(report: CompatReport, upstream: Upstream) -> list[str]:
    """What to pass per SGLang release, from the answer model (pcgkit.advice.every_release, not composed here): one
    row per run of consecutive releases that read the same (the model's own row template), and where the rest is."""
    from pcgkit.advice import every_release, render
    from pcgkit.util.ranges import measured_ranges

    evidence = upstream.evidence
    if not evidence.releases:
        return []
    answers = every_release(evidence, "sm120")
    in_range = tuple(report.releases.get("sglang", ()) or (a.versions.sglang or "" for a in answers))
    read = max((r.read_on for r in evidence.releases), default="never")
    lines = ["", f"**What to pass, per SGLang release** (the kit's one answer, `pcgkit.advice`; flags read from each "
             f"release's wheel, {md_code(evidence.releases_source or 'fixtures/sglang_releases.json')}, {read}; "
             "affected from the matrix cells; the cost and every release's whole answer: docs/answers.md):", "",
             *render.RELEASE_HEAD, *render.group_rows(answers, render.release_row, lambda a: render.release_row([a], ""),
                                                      lambda releases: measured_ranges(in_range, releases))]
    runners = [f"- {a.runner.text}{render.tag(a.runner)}" for a in answers if a.runner is not None]
    return lines + ([""] + runners if runners else [])


def _statement_line(statement) -> str:
    """A statement as a bullet, its sources cited with their dates."""
    sim = " (simulated)" if statement.simulated else ""
    return f"- {statement.text}{sim} Sources: {'; '.join(md(s.cite()) for s in statement.sources)}."


def render_upstream(report: CompatReport, upstream: Upstream) -> list[str]:
    from pcgkit.advice import cost_statement
    from pcgkit.advice.summary import mode2_condition, where_fixed

    lines: list[str] = []
    present = {c.id for c in report.cases}
    evidence = upstream.evidence
    fixed = where_fixed(evidence) if evidence.measurements else ()
    if fixed:
        lines += ["", "## Where it is fixed (the kit's matrix snapshot)", ""] + [_statement_line(s) for s in fixed]
    for project in upstream.projects:
        lines += ["", f"## {project.name}", "", f"**Where it breaks:** {md(project.breaks)}.", ""]
        lines += [ln for case in project.cases if case in present and (ln := _case_line(report, case))]
        links = upstream.links_for(project.id)
        if links:
            lines += ["", "**Upstream threads** (state as read on the date shown):"]
            lines += [f"- [{link.read.ref}]({link.read.url}) {md(link.read.title)}: **{md(link.read.state_text())}**. {md(link.relation)}."
                      + _measured_here(report, link, project.axis) for link in links]
        workarounds = upstream.workarounds_for(project.id)
        if workarounds:
            lines += ["", "**Workarounds and what they cost (measured by the kit's cases):**"]
            for w in workarounds:
                measured = "; ".join(f"{c}: {_fix_summary(report, c)}" for c in w.cases if c in present)
                lines.append(f"- {md(w.what)}: {md(w.cost)}" + (f". Measured: {measured}" if measured else ""))
        if project.id == "flashinfer" and (mode2 := mode2_condition(evidence)) is not None:
            lines += ["", "**Mode 2 (where the trace stops once get_cuda_version is patched):**", _statement_line(mode2)]
        if project.id == "sglang":
            lines += _answer_table(report, upstream)
            cost = cost_statement(evidence)
            if cost is not None:
                lines += ["", "**Cost of running without piecewise CUDA graphs:**", _statement_line(cost)]
    return lines


def render_grid(report: CompatReport) -> list[str]:
    """The verdict grid: rows in version order; cases with no verdict in any cell named once, not drawn. Pure."""
    from pcgkit.report.answers import unjudged_cases, version_order

    unjudged = unjudged_cases(report)
    cases = [c for c in report.cases if not is_sweep_case(c.id) and c.id not in unjudged]  # the sweep has its own section
    machines = any(c.where for c in report.cells)  # a column only when some cell says where it ran
    head = ["cell", *(axis_name(a) for a in GRID_AXES), "evidence", *(["ran on"] if machines else []), *(c.id for c in cases)]
    legend = ", ".join(f"{s} {v}" for v, s in SYMBOLS.items())
    lines = ["", "## Verdict grid", "", f"Legend: {legend}; {EXPECTED_SYMBOL} {EXPECTED_LABEL} ({CANNOT_RUN_LEGEND.meaning}); ⚑ changed since the previous run; {DISAGREE_SYMBOL} another result of this cell "
             "disagrees (see below); fix columns: ✓ = the fix works in this cell. Evidence: sim = simulated SM120 "
             "(no GPU), real = a real GPU.", "",
             "| " + " | ".join(md(h) for h in head) + " |", "|---" * len(head) + "|"]
    changed = {(ch.cell, ch.case) for ch in report.changes}
    marks = disagreement_marks(report)
    for cell in version_order(report.cells):
        kind = evidence_kind(cell)
        row = [*(cell.axis_value(a) or "-" for a in GRID_AXES), {"none": "-"}.get(kind, kind)]
        if machines:
            row.append((cell.where or {}).get("key") or where_line(cell.where).split(";")[0] or "-")
        for case in (c.id for c in cases):
            e = cell.entries.get(case)
            if e is None:
                row.append(" ")
                continue
            mark = EXPECTED_SYMBOL if cell.expected else symbol(e.verdict)
            row.append(mark + ("⚑" if (cell.id, case) in changed else "") + (DISAGREE_SYMBOL if (cell.id, case) in marks else ""))
        lines.append("| " + " | ".join([md_code(cell.id), *(md(x) for x in row)]) + " |")
    if unjudged:
        lines += ["", f"Not drawn: {len(unjudged)} case(s) with no verdict in any cell ({', '.join(unjudged)}); "
                  "the cell details give each reason."]
    return lines


def _cell_details(report: CompatReport, cell: CellReport) -> list[str]:
    counts = Counter(e.verdict for e in cell.entries.values())
    where = (f"{EXPECTED_LABEL}: no verdict" if cell.expected else "error: no verdict") if cell.is_error \
        else ("simulated" if cell.simulated else "real") + f": {cell.device}"
    summary = f"<code>{md(cell.id)}</code>: {md(cell.label)}; {md(where)}; " + ", ".join(f"{n} {v}" for v, n in counts.items())
    lines = ["", "<details>", f"<summary>{summary}</summary>", ""]
    installed = ", ".join(f"{k} {v}" for k, v in cell.versions.items() if v)
    others = ", ".join(v for v in cell.covers_sglang if v != cell.axes.get("sglang"))
    if cell.scope != "all":
        twin = next((c.id for c in report.cells if cell.axes.get("sglang") in c.covers_sglang), None)
        lines.append("- cases: only this release's SGLang-level ones (its own install); its FlashInfer-only verdicts are "
                     + (f"those of cell {md_code(twin)} (same flashinfer and torch pins)" if twin else "not in this report"))
    elif others:
        lines.append(f"- its FlashInfer-only verdicts also stand for sglang {md(others)} (same pins); their SGLang-level "
                     "cases ran in cells of their own")
    lines += [f"- pins: {cell.pin_status} ({md(cell.pin_note)})", f"- installed: {md(installed) or 'nothing (the install failed)'}",
              f"- duration: {cell.duration_s:.1f} s" + (", reused from a previous run" if cell.from_cache else "")]
    # the cell's own measurement time (a cell re-run into the report later than its creation says so)
    lines.append(f"- measured: {md(cell.finished)}" if cell.finished else
                 f"- measured: not recorded in this cell (the report was created {md(report.created)})")
    if cell.where:
        lines.append(f"- ran on: {md(where_line(cell.where))}")
    if cell.source:
        lines.append(f"- read from: {md_code(source_line(cell.source))}")
    if cell.expected:
        lines.append(f"- {md(cell.expected)}; stage **{cell.stage}**: {md(cell.reason)}")
    elif cell.is_error:
        lines.append(f"- broke at **{cell.stage}**: {md(cell.reason)}")
    else:
        lines += ["", "| case | verdict | graph break | innermost frame | reason |", "|---|---|---|---|---|"]
        for case in (c for c in report.cases if c.id in cell.entries):
            e = cell.entries[case.id]
            verdict = f"{symbol(e.verdict)} {e.verdict}" + (f" (fix works: {e.fix_works})" if case.family == FIX and e.fix_works else "")
            lines.append("| " + " | ".join([md(case.id), md(verdict), md(e.graph_break_id or "-"),
                                             md_code(e.innermost_frame) if e.innermost_frame else "-", md(e.reason)]) + " |")
    if cell.log_tail:
        lines += ["", "```text", cell.log_tail.rstrip().replace("```", "'''"), "```"]
    return lines + ["", "</details>"]


GITHUB_BODY_LIMIT = 65536  # characters GitHub accepts in an issue, comment or PR body
# compat.md's own budget (issue 44): under GitHub's limit with room for a sentence around it when pasted upstream.
COMPAT_BUDGET = 60_000
CELL_DETAILS_FILE = "compat-cells.md"  # where the sections that grow with the cells go when compat.md would pass it
# Sections that grow with the number of cells (and how compat.md names them once moved), moved to
# CELL_DETAILS_FILE in this order until compat.md fits.
MOVABLE = {"details": "each cell's evidence (pins, versions, every case's signature, log tails)",
           "sglang-facts": "the SGLang per-version facts", "certificate": "the trace-safety certificate's tables",
           "grid": "the verdict grid"}


def _section(report: CompatReport, upstream: Upstream, key: str, certificate: Sequence[str]) -> list[str]:
    if key == "details":
        return ["", "## Cell details"] + [ln for cell in report.cells for ln in _cell_details(report, cell)]
    if key == "sglang-facts":
        wheel_states = {r.sglang: r.flags.default_state for r in upstream.evidence.releases}
        return render_sglang_facts([dict(f) for f in report.sglang_facts], md, wheel_states)
    if key == "certificate":
        return ["", *certificate] if certificate else []
    return render_grid(report)


def _sidecar(report: CompatReport, upstream: Upstream | None, moved: Sequence[str], certificate: Sequence[str]) -> str:
    lines = ["# pcgkit compatibility report: cell details", "",
             f"The parts of compat.md of {report.created} that grow with the number of cells."]
    for key in moved:
        lines += _section(report, upstream or EMPTY, key, certificate)
    return "\n".join(lines) + "\n"


def split_markdown(report: CompatReport, upstream: Upstream | None = None,
                   certificate: Sequence[str] = ()) -> tuple[str, str | None]:
    """(compat.md, its sidecar or None): whole when it fits COMPAT_BUDGET; else the MOVABLE sections go to
    CELL_DETAILS_FILE, one at a time in that order, each leaving a linked line. Pure."""
    text = ""
    for n in range(len(MOVABLE) + 1):
        moved = tuple(MOVABLE)[:n]
        text = render_markdown(report, upstream, moved=moved, certificate=certificate)
        if len(text) <= COMPAT_BUDGET:
            return text, (_sidecar(report, upstream, moved, certificate) if moved else None)
    # what stays grows with the cases and the upstream threads, not the cells: say so rather than pass the limit
    raise ValueError(f"compat.md is {len(text):,} characters with every cell-sized section moved out "
                     f"(budget {COMPAT_BUDGET:,})")


def _cannot_run_lines(expected: Sequence[CellReport]) -> list[str]:
    """One line per distinct measured reason, naming its cells (five cells with one reason are one line). Pure."""
    by_reason: dict[str, list[str]] = {}
    for cell in expected:
        by_reason.setdefault(cell.expected, []).append(cell.id)
    return [f"- {EXPECTED_SYMBOL} {', '.join(md_code(c) for c in cells)}: {md(reason)}" for reason, cells in by_reason.items()]


def render_markdown(report: CompatReport, upstream: Upstream | None = None, moved: Sequence[str] = (),
                    certificate: Sequence[str] = ()) -> str:
    """reports/compat.md; each section named in `moved` (MOVABLE) is a pointer to CELL_DETAILS_FILE instead. Pure."""
    upstream = upstream or EMPTY
    ran = [c for c in report.cells if not c.is_error]
    expected = [c for c in report.cells if c.expected]
    errors = [c for c in report.cells if c.broken]
    lines = ["# pcgkit compatibility report", "",
             f"{len(report.cells)} cells, {len(ran)} with verdicts, {len(errors)} error cells"
             + (f", {len(expected)} {EXPECTED_LABEL}" if expected else "")
             + f" (no statement about the bug). Evidence: {evidence_label(report)}."]
    if report.simulated:
        lines += ["", f"> {SIMULATION_NOTE}"]
    if moved:
        lines += ["", f"Moved to [{CELL_DETAILS_FILE}]({CELL_DETAILS_FILE}) to keep this page under "
                  f"{COMPAT_BUDGET:,} characters (GitHub refuses a body over {GITHUB_BODY_LIMIT:,}): "
                  + "; ".join(MOVABLE[k] for k in moved) + ". The dashboard's drill-down has each cell too."]
    lines += render_upstream(report, upstream)
    others = [c.id for c in report.cases if not any(c.id in p.cases for p in upstream.projects)]
    if others:
        lines += ["", "## Other cases", ""] + [ln for case in others if (ln := _case_line(report, case))]
    if "grid" not in moved:
        lines += render_grid(report)
    if report.changes:
        lines += ["", f"## Changed since the previous run ({report.previous_run})", ""]
        lines += [f"- ⚑ `{ch.cell}` {ch.case}: {ch.previous} → {ch.current}" for ch in report.changes]
    if errors:
        lines += ["", "## Error cells (no statement about the bug)", ""]
        lines += [f"- {md_code(c.id)} ({md(c.stage or '')}): {md(c.reason)}" if c.is_error else
                  f"- {md_code(c.id)} (error entries): " + "; ".join(f"{k}: {md(e.reason)}" for k, e in c.entries.items()
                                                                    if e.verdict == "error") for c in errors]
    if expected:
        lines += ["", f"## Cells that cannot run ({EXPECTED_LABEL}: a measured reason in fixtures/expectations.toml, the date "
                  "last tried, retried on a schedule; not an error, no statement about the bug)", ""]
        lines += _cannot_run_lines(expected)
    if report.disagreements:  # pcgkit/report/sources.py: parity at matrix scale (`pcgkit report --from`)
        lines += ["", "## Results that disagree (simulated vs real hardware, or between machines)", ""]
        for d in report.disagreements:
            sides = [f"{w['target']} on {w['where']}: {w['verdict']} {w.get('innermost_frame') or ''}".strip()
                     for w in (d["first"], d["second"])]
            lines.append(f"- {DISAGREE_SYMBOL} {md_code(d['cell'])} {md(d['case'])} ({md(d['kind'])}; {', '.join(d['fields'])} differ): "
                         f"{md(sides[0])} vs {md(sides[1])}")
    if "details" not in moved:
        lines += _section(report, upstream, "details", certificate)
    if report.sweep:
        lines += render_sweep_section(report.sweep, changes_by_cell(report.changes), md)
    if "sglang-facts" not in moved:
        lines += _section(report, upstream, "sglang-facts", certificate)
    lines += render_images(report.cells)
    lines += ["", "## Legend and environment", ""]
    lines += [f"- {symbol(v)} **{v}**: {text}" for v, text in report.legend.items()]
    lines += ["- pins: on-pin = exactly the flashinfer-python and torch an SGLang release declares; off-pin otherwise",
              f"- pcgkit {report.kit_version}, created {report.created}, host {report.environment.get('platform', '?')}"]
    lines += [f"- {c.id} ({c.family}): {md(c.title)}" + (f"; known signature: {md(c.known_signature)}" if c.known_signature else "")
              for c in report.cases]
    if "certificate" not in moved:
        lines += _section(report, upstream, "certificate", certificate)
    return "\n".join(lines) + "\n"


def render_images(cells: Sequence[CellReport]) -> list[str]:
    """'## Images': where each cell that ran in an image ran (image id, digest, base, CUDA, host driver), from its
    provenance: the report never asks which backend that was. Pure."""
    rows = [c for c in cells if (c.provenance or {}).get("image_id")]
    if not rows:
        return []
    lines = ["", "## Images (docker backend)", "",
             "| cell | image id | digest | base image | CUDA in image | host driver |", "|---" * 6 + "|"]
    for cell in rows:
        p = cell.provenance
        cols = [f"`{cell.id}`", f"`{p.get('image_id', '')[:19]}`", p.get("image_digest", ""),
                f"{p.get('base_image', '')} ({p.get('base_image_digest', '')})", p.get("cuda_in_image", ""),
                p.get("host_driver", "")]
        lines.append("| " + " | ".join(md(c) for c in cols) + " |")
    return lines
