"""What `pcgkit run` and `pcgkit matrix` print: one compact table, rows = cases. Pure renderers
(`run_table`, `matrix_table` build rich Tables); `print_table` is the console edge.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from pcgkit.catalog import BY_ID
from pcgkit.report.model import SYMBOLS, CompatReport
from pcgkit.report.wording import short
from pcgkit.values import targets
from pcgkit.values.verdict import CANNOT_RUN, LEGEND, Verdict
from pcgkit.verdicts.result import CaseResult

STYLE = {v.value: legend.style for v, legend in LEGEND.items()}


def _cell_text(result: CaseResult) -> str:
    """'[style]reproduced[/] GB0001 cpp_ext.py:69:get_cuda_version': the verdict, then what of its signature exists."""
    sig = result.signature
    frame = sig.innermost_library_frame.short if sig and sig.innermost_library_frame else ""
    parts = [f"[{STYLE.get(result.verdict.value, '')}]{result.verdict.value}[/]", sig.graph_break_id if sig else "", frame]
    return " ".join(p for p in parts if p)


def _case_order(case_id: str) -> tuple:
    ids = list(BY_ID)
    return (ids.index(case_id) if case_id in ids else len(ids), case_id)


def run_table(results: Sequence[CaseResult]) -> tuple[Table, list[str]]:
    """Rows = cases, columns = the targets where something ran; plus notes: the skipped targets in one
    line each with their reason, and the reason of every drifted / error verdict."""
    by_target: dict[str, list[CaseResult]] = {}
    for r in results:
        by_target.setdefault(r.variant, []).append(r)
    main = [t.id for t in targets.TARGETS]
    others = [i for i in targets.PRECEDENCE if i in by_target and i not in main]  # hybrid, other simulated arches
    order = main + others + sorted(set(by_target) - set(targets.BY_ID))
    ran = [t for t in order if any(r.verdict.ran for r in by_target.get(t, ()))]
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("case")
    for t in ran:
        table.add_column(t + (" (simulated)" if targets.is_simulated(t) else ""))
    cases = sorted({r.mode for r in results}, key=_case_order)
    index = {(r.mode, r.variant): r for r in results}
    for case in cases:
        table.add_row(case, *(_cell_text(index[(case, t)]) if (case, t) in index else "-" for t in ran))
    notes = []
    for t in order:
        rows = by_target.get(t, ())
        if rows and t not in ran:
            reasons = Counter(r.reason for r in rows)
            reason, n = reasons.most_common(1)[0]
            more = f" (+{len(reasons) - 1} other reasons)" if len(reasons) > 1 else ""
            notes.append(f"skipped target {t}: all {len(rows)} cases, {reason}{more}")
    for r in sorted(results, key=lambda r: (_case_order(r.mode), r.variant)):
        if r.verdict in (Verdict.DRIFTED, Verdict.TRACES_BUT_FAILS, Verdict.ERROR) or (r.variant in ran and r.verdict.value == "skipped"):
            notes.append(f"{r.mode} [{r.variant}] {r.verdict.value}: {r.reason}")
    return table, notes


def render_text(table: Table, width: int = 160) -> list[str]:
    """The table as plain lines (no colour), for logs and pytest's terminal summary."""
    console = Console(width=width, no_color=True, record=True, file=io.StringIO())
    console.print(table)
    return console.export_text().rstrip("\n").splitlines()


def matrix_table(report: CompatReport) -> tuple[Table, list[str]]:
    """Rows = cases: verdict counts over the cells, the commonest signature, and where it changes."""
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    table.add_column("case", no_wrap=True)
    table.add_column("cells", no_wrap=True)
    table.add_column("commonest failure", overflow="fold")
    table.add_column("where it changes", overflow="fold")
    for case in report.cases:
        entries = [c.entries[case.id] for c in report.cells if case.id in c.entries and not c.is_error]
        counts = Counter(e.verdict for e in entries)
        verdicts = " ".join(f"[{STYLE.get(v, '')}]{SYMBOLS.get(v, '?')}{n}[/]" for v, n in counts.most_common())
        failing = Counter(" ".join(x for x in (e.graph_break_id, e.frame_short) if x)
                          for e in entries if e.verdict in ("reproduced", "drifted") and (e.graph_break_id or e.frame_short))
        common = failing.most_common(1)[0][0] if failing else "-"
        table.add_row(case.id, verdicts or "-", common, short(report.attribution.get(case.id)))
    errors = [c for c in report.cells if c.broken]
    expected = [c for c in report.cells if c.expected]
    notes = ["legend: " + ", ".join(f"{s} {v}" for v, s in SYMBOLS.items()) + "; details: compat.md, index.html"]
    if expected:  # recorded in fixtures/expectations.toml: said once, not as errors
        notes.append(f"{CANNOT_RUN} ({len(expected)}: {', '.join(c.id for c in expected)}): "
                     + "; ".join(sorted({c.expected.removeprefix(f'{CANNOT_RUN}: ') for c in expected})))
    if errors:
        reasons = Counter(f"{c.stage}: {c.reason}" if c.is_error else "error entries: " + "; ".join(
            sorted({e.reason for e in c.entries.values() if e.verdict == "error"})) for c in errors)
        notes.append(f"error cells ({len(errors)}: {', '.join(c.id for c in errors)}): "
                     + "; ".join(f"{r}" + (f" (x{n})" if n > 1 else "") for r, n in reasons.items()))
    if report.simulated:
        notes.append("simulated SM120 (no GPU) in " + str(sum(c.simulated for c in report.cells)) + " cells")
    return table, notes


# rich's highlighter is quadratic in a string's length (a 64 KB reason took 65 s, and a 40 MB one held
# the main thread past SIGTERM): the terminal never highlights, and a note is cut to what a screen holds.
MAX_NOTE_CHARS = 2000


def print_table(table_and_notes: tuple[Table, list[str]], console: Console | None = None) -> None:
    """A `run_table` or `matrix_table` on the console (stdout unless given), each note cut to MAX_NOTE_CHARS."""
    console = console or Console(highlight=False)
    table, notes = table_and_notes
    console.print(table, highlight=False)
    for note in notes:
        cut = note[:MAX_NOTE_CHARS] + f" ... ({len(note) - MAX_NOTE_CHARS} more characters)"
        console.print("  " + (note if len(note) <= MAX_NOTE_CHARS else cut), markup=False, highlight=False)
