"""reports/index.html: the at-a-glance dashboard (jinja2, autoescaped, no server, no CDN). Pure but for
`write_dashboard`.

The page holds only the grid (cells x cases, one symbol each, flips flagged); each cell's evidence
(signature, frames, versions, device, log tail, provenance, its timeline across runs) is a sidecar
script, index.files/cells/<n>.js, loaded with <script src> when the cell is opened: fetch() of a
file:// URL is blocked, a script tag is not, and 500 cells' evidence never loads all at once.
Sidecars stay small at 100 runs: a case's history is a string of one verdict code per run
(pcgkit.report.history.VERDICT_CODES), and the run dates and the code table are on the page once.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import jinja2

from pcgkit import resources
from pcgkit.report import annotations as notes
from pcgkit.report import attribution as attr
from pcgkit.report.answers import answers as answers_for
from pcgkit.report.answers import flips_across_runs, unjudged_cases, version_order
from pcgkit.report.history import RunSummary, Timeline, timelines
from pcgkit.report.model import SYMBOLS, CellReport, CompatReport
from pcgkit.report.site import SIDECAR_FOLDER
from pcgkit.report.summary import SIMULATION_NOTE
from pcgkit.report.upstream import EMPTY, Upstream
from pcgkit.report.wording import axis_name, describe
from pcgkit.util import atomic
from pcgkit.values.axes import AXIS_IDS, OPTIONAL_AXES
from pcgkit.values.verdict import CANNOT_RUN_LEGEND, LEGEND

TEMPLATE = "dashboard.html.j2"
SIDECAR_DIR = f"{SIDECAR_FOLDER}/cells"
# The verdicts' colours and the cannot-run state's (pcgkit.values.verdict: LEGEND, CANNOT_RUN_LEGEND).
COLOURS = {**{v.value: legend.colour for v, legend in LEGEND.items()}, notes.EXPECTED_LABEL: CANNOT_RUN_LEGEND.colour}


@dataclasses.dataclass(frozen=True)
class Page:
    html: str
    sidecars: Mapping[str, str]  # path relative to the page -> content


def _evidence(cell: CellReport, lines: Mapping[tuple[str, str], Timeline], run_index: Mapping[str, int],
              marks: Mapping[tuple[str, str], Sequence[str]]) -> dict:
    """A cell's sidecar data; empty fields are left out (the module's docstring says why it stays small)."""
    entries = {}
    for case, e in cell.entries.items():
        data = {k: v for k, v in e.to_dict().items() if v or k == "verdict"}
        t = lines.get((cell.id, case))
        if t is not None:
            data.update(h=t.codes, flips=t.flips, since=run_index[t.since])  # since: an index into RUNS
        if (cell.id, case) in marks:
            data["disagrees"] = list(marks[(cell.id, case)])
        entries[case] = data
    data = cell.to_dict()
    data.pop("modes", None)
    data.pop("source", None)  # shown as source_line: its name, not the folder of the machine that made the report
    return {**data, "entries": entries, "where_line": notes.where_line(cell.where), "source_line": notes.source_line(cell.source)}


def _advice_statements(upstream: Upstream) -> tuple:
    """Where it is fixed, mode 2's condition and the workaround's cost, from the advice model (each sourced)."""
    from pcgkit.advice import cost_statement
    from pcgkit.advice.summary import mode2_condition, where_fixed

    evidence = upstream.evidence
    if not evidence.measurements:
        return ()
    return tuple(s for s in (*where_fixed(evidence), mode2_condition(evidence), cost_statement(evidence)) if s)


def build_page(report: CompatReport, runs: Sequence[RunSummary] = (), upstream: Upstream = EMPTY) -> Page:
    """The page and its sidecars. Pure. Every string from a run is escaped (autoescape) or set as text."""
    lines = timelines(runs) if runs else {}
    run_dates = sorted(r.created for r in runs)
    run_index = {d: i for i, d in enumerate(run_dates)}
    versions = {a: attr.sorted_versions(c.axis_value(a) for c in report.cells) for a in AXIS_IDS}  # oldest first
    ranks = {a: {v: i for i, v in enumerate(values)} for a, values in versions.items()}
    marks = notes.disagreement_marks(report)
    first_answers = answers_for(report, upstream)
    first_fixed = {(a.axis, a.first_fixed_measured) for a in first_answers if a.first_fixed_measured}
    unjudged = unjudged_cases(report)
    index = {cell.id: i for i, cell in enumerate(report.cells)}  # sidecar numbers follow the report's order
    rows = []
    sidecars = {}
    for cell in version_order(report.cells):
        i = index[cell.id]
        tracks = {case: t for case in cell.entries if (t := lines.get((cell.id, case)))}
        rows.append({
            "i": i, "cell": cell,
            "values": {a: cell.axis_value(a) for a in AXIS_IDS},
            "ranks": {a: ranks[a][cell.axis_value(a)] for a in AXIS_IDS},
            "evidence": notes.evidence_kind(cell),
            "broken": cell.broken,  # what makes `report` exit non-zero
            "machine": (cell.where or {}).get("key") or "-",
            "disagrees": {case: "; ".join(marks[(cell.id, case)]) for case in cell.entries if (cell.id, case) in marks},
            "flips": sum(t.flips for t in tracks.values()),
            "flipped": {case for case, t in tracks.items() if t.flipped_last},
            "since": {case: t.since for case, t in tracks.items() if t.flips},
            "first_fixed": {a for a in AXIS_IDS if (a, cell.axis_value(a)) in first_fixed},
        })
        # json.dumps output is a valid JS expression; the page reads it with textContent only.
        evidence = json.dumps(_evidence(cell, lines, run_index, marks), sort_keys=True, separators=(",", ":"))
        sidecars[f"{SIDECAR_DIR}/{i}.js"] = f"window.pcgkitEvidence({i}, {evidence});\n"
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resources.templates_dir())), autoescape=True)
    html = env.get_template(TEMPLATE).render(
        report=report, rows=rows, axes=AXIS_IDS, optional_axes=OPTIONAL_AXES, first_answers=first_answers, unjudged=unjudged,
        grid_cases=[c for c in report.cases if c.id not in unjudged], run_flips=flips_across_runs(runs),
        axis_name=axis_name, symbols=SYMBOLS, colours=COLOURS,
        axis_values={a: [v for v in values if v] for a, values in versions.items()},
        answers=[(c, describe(report.attribution[c.id])) for c in report.cases if c.id in report.attribution],
        runs=len(runs), first_run=runs[0].created if runs else report.created, sidecar_dir=SIDECAR_DIR,
        simulation_note=SIMULATION_NOTE, links=upstream.links, statements=_advice_statements(upstream),
        machines=sorted({r["machine"] for r in rows if r["machine"] != "-"}), expected_label=notes.EXPECTED_LABEL,
        expected_symbol=notes.EXPECTED_SYMBOL, cannot_run_meaning=CANNOT_RUN_LEGEND.meaning, run_dates=run_dates, verdict_of_code=next(iter(lines.values())).verdicts if lines else {},
    )
    return Page(html, sidecars)


def write_page(page: Page, reports_dir: Path) -> Path:
    """index.html and its sidecars; stale sidecars from a larger previous run removed."""
    folder = reports_dir / SIDECAR_DIR
    folder.mkdir(parents=True, exist_ok=True)
    keep = {atomic.write_text(reports_dir / rel, text).name for rel, text in page.sidecars.items()}
    for old in folder.glob("*.js"):
        if old.name not in keep:
            old.unlink()
    return atomic.write_text(reports_dir / "index.html", page.html)
