"""What a reader asks first, computed once for the dashboard and compat.md: rows in version order, per upstream
project and case the user's question answered from the measured cells, the cases with no verdict in any cell
(set apart instead of drawn as a column of `skipped`), and the flips across runs. Pure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pcgkit import catalog
from pcgkit.report import attribution as attr
from pcgkit.report.history import RunSummary, verdict_changes
from pcgkit.report.model import FIX, CellReport, Change, CompatReport
from pcgkit.report.upstream import Upstream
from pcgkit.report.wording import fixed_from, traced_only
from pcgkit.util.ranges import version_key
from pcgkit.values.axes import AXIS_IDS
from pcgkit.values.verdict import JUDGED


def version_order(cells: Sequence[CellReport]) -> list[CellReport]:
    """Cells by (has SGLang, each axis as a Version, id): a clean fix boundary reads as one. Pure.
    AXIS_IDS puts sglang first, then flashinfer-python, torch, python."""
    def key(cell: CellReport) -> tuple:
        values = [cell.axis_value(a) for a in AXIS_IDS]
        return (values[0] is not None, *((v is not None, version_key(v or "0")) for v in values), cell.id)
    return sorted(cells, key=key)


@dataclasses.dataclass(frozen=True)
class Answer:
    project: str  # "SGLang"
    axis: str
    case: str
    title: str
    reproduced_in: tuple[str, ...]  # versions on the axis where some cell reproduced it, in version order
    first_fixed_measured: str | None
    first_fixed_upstream: str | None  # the upstream record's release ("" / None: none names one)
    simulated: bool  # every cell behind it simulated
    traced_only: tuple[str, ...] = ()  # versions whose `fixed` only traced (call path not run): not in first_fixed_measured
    arch: str = "sm120"  # the architecture the case judges (arch_of_case)
    workaround: str = ""  # the workaround the case measures (catalog), in the user's words; "" for the bug itself

    @property
    def question(self) -> str:
        """The reader's question, on the architecture the case judges; a workaround's case asks whether it still
        crashes with that workaround (the case id is shown beside it)."""
        with_it = f" with the workaround: {self.workaround}" if self.workaround else ""
        return f"Does {self.project} still crash on {self.arch.upper()}{with_it}?" if with_it else \
            f"Does {self.project} crash on {self.arch.upper()}?"

    @property
    def reproduced_range(self) -> str:
        """'0.5.0 – 0.7.4 (21 releases)': the measured releases that reproduced it, as a range."""
        found = self.reproduced_in
        if not found:
            return "in no measured release"
        span = found[0] if len(found) == 1 else f"{found[0]} – {found[-1]}"
        return f"{self.project} {span}" + (f" ({len(found)} releases measured)" if len(found) > 2 else "")


def arch_of_case(case: str) -> str:
    """The architecture a case judges: the SGLang-level cases each name theirs (pcgkit.advice.model's table; the
    non-SM120 one simulates SM90); every other case of the kit judges SM120. Pure."""
    from pcgkit.advice.model import SGLANG_CASE_BY_ARCH

    return next((arch for arch, id_ in SGLANG_CASE_BY_ARCH.items() if id_ == case), "sm120")


def answers(report: CompatReport, upstream: Upstream) -> list[Answer]:
    """One answer per upstream project x bug case with a verdict in these cells (fix attempts answer another
    question: whether a workaround works; they stay in the grid). Pure."""
    out = []
    unjudged = set(unjudged_cases(report))
    present = {c.id: c for c in report.cases if c.family != FIX and c.id not in unjudged}
    for project in upstream.projects:
        for case in project.cases:
            if case not in present:
                continue
            repro = sorted({v for c in report.cells if (e := c.entries.get(case)) and e.verdict == "reproduced"
                            and (v := c.axis_value(project.axis))}, key=version_key)
            links = [link.read.first_release for link in upstream.links_for(project.id) if link.read.first_release and case in link.cases]
            judged = [c for c in report.cells if (e := c.entries.get(case)) and e.verdict in JUDGED]
            out.append(Answer(project.name, project.axis, case, present[case].title, tuple(repro),
                              fixed_from(report, case, project.axis),
                              min(links, key=version_key) if links else None,
                              bool(judged) and all(c.simulated for c in judged),
                              traced_only(report, case, project.axis), arch_of_case(case),
                              entry.workaround if (entry := catalog.entry(case)) is not None else ""))
    return out


def unjudged_cases(report: CompatReport) -> list[str]:
    """Cases with no verdict about the bug in any cell (all skipped, not applicable or error). Pure."""
    return [c.id for c in report.cases
            if (a := report.attribution.get(c.id)) is not None and a.basis == attr.NONE
            or not any((e := cell.entries.get(c.id)) and e.verdict in JUDGED for cell in report.cells)]


@dataclasses.dataclass(frozen=True)
class RunFlips:
    created: str
    previous: str
    changes: tuple[Change, ...]


def flips_across_runs(runs: Sequence[RunSummary]) -> list[RunFlips]:
    """For each run, the cell x case verdicts that differ from the run before it; newest first, runs
    without a flip left out. Pure."""
    ordered = sorted(runs, key=lambda r: r.created)
    out = []
    for before, after in zip(ordered, ordered[1:]):
        changes = verdict_changes(before, {cell: dict(sorted(cases.items())) for cell, cases in sorted(after.verdicts.items())})
        if changes:
            out.append(RunFlips(after.created, before.created, changes))
    return out[::-1]
