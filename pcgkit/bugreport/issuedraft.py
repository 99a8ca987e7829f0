"""`pcgkit issue --target sglang|flashinfer|pytorch`: an upstream issue body drafted from measured results.

Everything in the draft comes from results files (one run's reports/results.json, plus any matrix
cells' results.json found under the given folders): the signature, which measured version
combinations fail and which do not, and what each of the seed's workarounds did. Nothing is
hand-written about versions, nothing is posted anywhere. build_draft (pure) -> render (Jinja,
templates/issue/<target>.md.j2) -> stdout or --out.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from markupsafe import Markup
from packaging.version import InvalidVersion, Version

from pcgkit import catalog
from pcgkit.bugreport.asks import Ask, ask_for
from pcgkit.bugreport.envcapture import render_text
from pcgkit.bugreport.evidence import TARGET_AXIS, TARGET_CASE, newest_failing_release
from pcgkit.errors import UsageError
from pcgkit.matrix.plan import default_axis_releases
from pcgkit.report.markdown import GITHUB_BODY_LIMIT
from pcgkit.report.model import CompatSchemaError, from_json
from pcgkit.report.summary import SIMULATION_NOTE
from pcgkit.report.upstream import load_upstream
from pcgkit.report.wording import axis_name, describe, evidence_label
from pcgkit.util.ranges import measured_ranges, version_order
from pcgkit.util.sanitize import md_inline_code, md_text
from pcgkit.util.templating import render_markdown
from pcgkit.values.axes import AXIS_IDS
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import CaseResult, ResultsFileError, read_results

TARGETS = ("sglang", "flashinfer", "pytorch")
MAX_TABLE_ROWS = 24  # measured cells listed per verdict table; the rest are counted and left to compat.json
BASE_MODE = "mode1"  # the bug itself; the other modes are the workarounds tried against it
FAILING = (Verdict.REPRODUCED, Verdict.DRIFTED)


# The seed's workarounds, each measured by one failure mode (the catalog entry: its id, the workaround in its words).
WORKAROUNDS = tuple(e for e in catalog.workarounds() if e.family is catalog.Family.FAILURE)


@dataclasses.dataclass(frozen=True)
class MeasuredCell:
    """One environment's result for one mode, with the versions that identify the cell."""

    result: CaseResult

    @property
    def versions_label(self) -> str:
        v = self.result.versions
        return ", ".join(f"{axis} {v[axis]}" for axis in AXIS_IDS if v.get(axis))

    @property
    def where(self) -> str:
        """Versions, and the device when it is real (a simulated result is said once, in the draft's note)."""
        if self.result.simulated:
            return self.versions_label
        return f"{self.versions_label}; {self.result.device.get('label', '?')}"


def measured_versions(results: Sequence[CaseResult]) -> dict[str, list[str]]:
    """Per axis, the distinct versions these results were measured with, oldest first. Pure."""
    seen = {axis: {str(r.versions[axis]) for r in results if r.versions.get(axis)} for axis in AXIS_IDS}
    return {axis: sorted(values, key=version_order) for axis, values in seen.items() if values}


def _judged(results: Iterable[CaseResult], mode: str) -> list[CaseResult]:
    """A mode's results that say something about the bug (not skipped, not errors)."""
    return [r for r in results if r.mode == mode and r.verdict.is_bug_verdict]


def _workaround_outcome(result: CaseResult):
    """One Markdown line (marked safe for the draft's template: every measured value in it is escaped)."""
    sig = result.signature
    at = ""
    if sig is not None:
        inner = sig.innermost_library_frame
        at = f" at {md_inline_code(inner)}" if inner else f": {md_inline_code(sig.message_head)}"
        at += f" ({md_text(sig.graph_break_id)})" if sig.graph_break_id else ""
    if result.verdict is Verdict.FIXED:
        return Markup("worked: traced cleanly under fullgraph=True")
    if result.verdict is Verdict.REPRODUCED:
        return Markup(f"did not help: the trace still fails{at}")
    if result.verdict is Verdict.DRIFTED:
        return Markup(f"did not help, failed differently{at}: {md_text(result.reason)}")
    return Markup(f"not applicable: {md_text(result.reason)}")


@dataclasses.dataclass(frozen=True)
class MatrixRanges:
    """What a version matrix (compat.json) says, stated along the axis that explains each change."""

    source: str
    measured_over: str  # 'FlashInfer 0.5.0–0.7.4, torch 2.8.0–2.14.1, ...; simulated SM120: 19 cells'
    lines: tuple[str, ...]  # '<case>: <attribution> [<evidence>]'


def matrix_ranges(report, target: str, upstream, source: str = "compat.json") -> MatrixRanges:
    """The target project's cases (and the bug itself) over the matrix's cells. Pure."""
    project = upstream.project(target)
    wanted = [BASE_MODE] + [c for c in (project.cases if project else ()) if c != BASE_MODE]
    overall = evidence_label(report)

    def label(case: str) -> str:  # the device evidence, said per case only where it differs from the whole matrix's
        own = evidence_label(report, case)
        return "" if own == overall else f" [{own}]"

    lines = tuple(f"{case}: {describe(report.attribution[case])}{label(case)}"
                  for case in wanted if case in report.attribution and report.attribution[case].cells)
    ran = [c for c in report.cells if not c.is_error]
    over = []
    for axis in AXIS_IDS:
        values = sorted({v for c in ran if (v := c.axis_value(axis))}, key=version_order)
        if values:  # only over releases some cell ran, the others between them named (pcgkit.util.ranges)
            over.append(f"{axis_name(axis)} {measured_ranges(report.releases.get(axis, ()), values)}")
    ran_simulated = all(c.simulated for c in ran)  # then the draft's note says it, once
    cells = f"{len(ran)} cell{'s' if len(ran) != 1 else ''}" if ran_simulated else overall
    return MatrixRanges(source, ", ".join(over) + f"; {cells}", lines)


@dataclasses.dataclass(frozen=True)
class Draft:
    target: str
    primary: CaseResult  # the base mode's failing result whose signature the draft quotes
    affected: tuple[MeasuredCell, ...]
    unaffected: tuple[MeasuredCell, ...]
    affected_versions: dict[str, list[str]]
    unaffected_versions: dict[str, list[str]]
    workarounds: tuple[tuple[catalog.CaseEntry, tuple[MeasuredCell, ...], tuple[str, ...]], ...]
    other_approaches: tuple[MeasuredCell, ...]  # any further measured case (the kit's fix-* cases)
    simulated: bool
    env_text: str | None
    collect_env_text: str | None
    repro: str | None
    sources: tuple[str, ...]
    matrix: MatrixRanges | None = None
    known_links: tuple = ()  # pcgkit.report.upstream.Link: already filed upstream, cite rather than re-file
    ask: Ask | None = None  # what is asked, first, with the measured range behind it (pcgkit.bugreport.asks)
    compact: bool = False  # set when the full body would pass GitHub's limit: per-cell tables and extras dropped
    measured_line: str = ""  # the target's case over the target's releases, in one line
    repro_command: str = ""  # how to export the quoted cell's repro (`pcgkit repro mode1 --cell ID`), when known

    @property
    def shown_cells(self) -> tuple[tuple[MeasuredCell, ...], int]:
        """The cells the verdict table lists (capped) and how many more were measured."""
        cells = self.affected + self.unaffected
        limit = 4 if self.compact else MAX_TABLE_ROWS
        return cells[:limit], max(0, len(cells) - limit)

    def capped(self, versions: list[str], limit: int = 40) -> str:
        """A version list for the body: all of it up to `limit`, else its ends and how many are left out."""
        if len(versions) <= limit:
            return ", ".join(versions)
        half = limit // 2
        return f"{', '.join(versions[:half])}, ... ({len(versions) - limit} more), {', '.join(versions[-half:])}"

    @property
    def env_summary(self) -> str:
        """One line of the versions that matter and the device; the full capture travels as an attachment."""
        v = self.primary.versions
        parts = [f"{k} {v[k]}" for k in ("torch", "torch_cuda", "flashinfer-python", "sglang", "python") if v.get(k)]
        device = self.primary.device.get("label") or ("simulated (no GPU)" if self.primary.simulated else "?")
        if self.primary.simulated and "simulated" not in device.lower():
            device = f"simulated: {device}"
        return f"{', '.join(parts)}; device: {device}"

    @property
    def export_command(self) -> str:
        """The command that writes the quoted cell's standalone repro."""
        source = self.sources[0] if self.sources else "reports/results.json"
        return self.repro_command or f"pcgkit repro mode1 --results {source} --out repro-mode1"

    @property
    def repro_shape(self) -> tuple[int, int]:
        from pcgkit.fp4.layer import HIDDEN, TOKENS

        return TOKENS, HIDDEN

    @property
    def primary_cell(self) -> MeasuredCell:
        return MeasuredCell(self.primary)

    @property
    def frame_lines(self) -> list[str]:
        """The quoted frame chain; files outside a package shown by name (local paths are noise upstream)."""
        frames = self.primary.signature.frame_chain if self.primary.signature else ()
        return [str(f) if not f.file.startswith("/") else f.short for f in frames]


def _primary_cell(results: Sequence[CaseResult], failing: Sequence[CaseResult], target: str,
                  pin: str | None) -> CaseResult:
    """The failing cell the draft quotes: at `pin` (a release whose case failed; UsageError otherwise), by default
    the newest release where the target's case still fails."""
    axis = TARGET_AXIS[target]
    newest = newest_failing_release(results, target)
    chosen = pin or newest
    case = TARGET_CASE[target]
    case_failing = {str(r.versions[axis]) for r in results
                    if r.mode == case and r.verdict in FAILING and r.versions.get(axis)}
    if pin is not None and pin not in case_failing:
        raise UsageError(f"--pin {pin}: no measured {case} failure with {axis} {pin} in the results "
                         f"(failing there: {', '.join(sorted(case_failing, key=version_order)) or 'none'})")
    # The chosen release's cell first, then real hardware before the simulation, reproduced before drifted,
    # then the newest versions on every axis (the stack a maintainer would retry on).
    # A release whose cell ran only its SGLang-level case: the mode-1 cell with the same FlashInfer and torch.
    at_chosen = any(r.versions.get(axis) == chosen for r in failing)
    ref = {} if at_chosen else next((r.versions for r in results if r.mode == case and r.versions.get(axis) == chosen), {})
    stack = ("flashinfer-python", "torch") if ref else ()
    return sorted(failing, key=lambda r: (r.versions.get(axis) != chosen,
                                          any(r.versions.get(a) != ref.get(a) for a in stack), r.simulated,
                                          r.verdict is not Verdict.REPRODUCED,
                                          [_neg_key(r.versions.get(a)) for a in (axis, *AXIS_IDS)]))[0]


def build_draft(
    target: str,
    results: Sequence[CaseResult],
    sources: Sequence[str] = (),
    env: dict | None = None,
    repro: str | None = None,
    matrix: MatrixRanges | None = None,
    known_links: Sequence = (),
    ask: Ask | None = None,
    pin: str | None = None,
    releases: Mapping[str, Sequence[str]] | None = None,
) -> Draft:
    """The draft's content from measured results only, the target library's cases only. Pure.

    pin: the release whose failing cell the draft quotes (default: _primary_cell's). releases: per axis, the
    releases a range may span (its gaps are named)."""
    if target not in TARGETS:
        raise UsageError(f"unknown target {target!r}: one of {', '.join(TARGETS)}")
    results = [r for r in results if _family_of(r.mode) in TARGET_FAMILIES[target]]
    base = _judged(results, BASE_MODE)
    failing = [r for r in base if r.verdict in FAILING and r.signature is not None]
    if not failing:
        raise UsageError(f"no measured {BASE_MODE} failure in the results: there is no bug to report from them")
    primary = _primary_cell(results, failing, target, pin)
    unaffected = [r for r in base if r.verdict is Verdict.FIXED]
    # The workarounds and other approaches as tried on the quoted cell (the matrix lines give their ranges).
    same_cell = [r for r in results if r.versions == primary.versions] or list(results)
    workarounds = []
    for workaround in WORKAROUNDS:
        cells = tuple(MeasuredCell(r) for r in _judged(same_cell, workaround.id))
        workarounds.append((workaround, cells, tuple(_workaround_outcome(c.result) for c in cells)))
    known = {BASE_MODE} | {w.id for w in WORKAROUNDS}
    others = tuple(
        MeasuredCell(r) for r in sorted(same_cell, key=lambda r: (r.mode, r.variant))
        if r.mode not in known and r.verdict.is_bug_verdict
    )
    used = failing + unaffected + [c.result for _, cells, _ in workarounds for c in cells] + [c.result for c in others]
    return Draft(
        target=target,
        primary=primary,
        affected=tuple(MeasuredCell(r) for r in failing),
        unaffected=tuple(MeasuredCell(r) for r in unaffected),
        affected_versions=measured_versions(failing),
        unaffected_versions=measured_versions(unaffected),
        workarounds=tuple(workarounds),
        other_approaches=others,
        simulated=any(r.simulated for r in used),
        env_text=render_text(env) if env is not None else None,
        collect_env_text=(env.get("torch_collect_env") or {}).get("text") if env is not None else None,
        repro=repro,
        sources=tuple(sources),
        matrix=matrix,
        known_links=tuple(known_links),
        ask=ask,
        measured_line=measured_line(results, target, releases or {}),
    )


# The catalog families whose cases are each target's library's (an SGLang-level case is not FlashInfer's).
TARGET_FAMILIES: dict[str, frozenset[str]] = {
    "flashinfer": frozenset({"failure", "fix"}),
    "pytorch": frozenset({"failure", "fix"}),
    "sglang": frozenset({"failure", "fix", "sglang", "e2e"}),
}


def _family_of(mode: str) -> str:
    entry = catalog.entry(mode)
    return entry.family.value if entry is not None else "other"


def _neg_key(text: str | None):
    """A sort key that puts newer versions first (None last)."""
    if not text:
        return (1, ())
    try:
        v = Version(str(text))
        return (0, tuple(-x for x in v.release), 0 if v.post is None else -v.post)
    except InvalidVersion:
        return (0, (), 0)


def measured_line(results: Sequence[CaseResult], target: str, releases: Mapping[str, Sequence[str]]) -> str:
    """'mode1 fails on FlashInfer 0.5.0–0.7.4 (20 measured results); traces cleanly on no measured release' --
    the target's case over the target's own releases, in one line. Pure."""
    axis, case = TARGET_AXIS[target], TARGET_CASE[target]
    judged = [r for r in results if r.mode == case and r.verdict.is_bug_verdict and r.versions.get(axis)]
    if not judged:
        return ""

    def on(verdicts: tuple[Verdict, ...]) -> str:
        found = sorted({str(r.versions[axis]) for r in judged if r.verdict in verdicts}, key=version_order)
        return f"{axis_name(axis)} {measured_ranges(releases.get(axis, ()), found)}" if found else "no measured release"

    n = sum(1 for r in judged if r.verdict in FAILING)
    return f"{case} fails on {on(FAILING)} ({n} measured result{'s' if n != 1 else ''}); traces cleanly on {on((Verdict.FIXED,))}"


def render_draft(draft: Draft) -> str:
    """Markdown: a 'Title:' line, then the body in the target project's template shape, under GitHub's
    65,536-character body limit (a compact body when the full one would pass it). Pure."""
    def body(d: Draft) -> str:
        return render_markdown(f"issue/{d.target}.md.j2", d=d, sig=d.primary.signature, mode=catalog.BY_ID[BASE_MODE].mode,
                      simulation_note=SIMULATION_NOTE)

    text = body(draft)
    if len(text) > GITHUB_BODY_LIMIT:
        text = body(dataclasses.replace(draft, compact=True))
    if len(text) > GITHUB_BODY_LIMIT:
        raise UsageError(f"the {draft.target} draft is {len(text)} characters, over GitHub's {GITHUB_BODY_LIMIT}")
    return text


def find_results_files(paths: Sequence[Path]) -> list[Path]:
    """results.json files: given directly, or anywhere under a given folder (matrix cells)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(path.rglob("*results.json"))  # matrix cells, and named copies
        elif path.is_file():
            found.append(path)
        else:
            raise UsageError(f"{path}: no such results file or folder")
    if not found:
        raise UsageError(f"no results.json under {', '.join(map(str, paths))}: run `pcgkit run` first")
    return list(dict.fromkeys(p.resolve() for p in found))


def load_results(paths: Sequence[Path]) -> tuple[list[CaseResult], dict | None]:
    """All results, and the first env capture a results file embeds (environment.env)."""
    results: list[CaseResult] = []
    env = None
    for path in paths:
        try:
            environment, file_results = read_results(path)
        except (ResultsFileError, ValueError, KeyError) as exc:
            raise UsageError(f"{path}: not a pcgkit results file: {exc}") from exc
        results += file_results
        if env is None and isinstance(environment.get("env"), dict):
            env = environment["env"]
    return results, env


def upstream_inputs(target: str, compat: str | None) -> tuple[MatrixRanges | None, tuple, Ask | None]:
    """The matrix's measured ranges (from --compat), the known upstream links (fixtures/upstream.toml, with their
    dated reads) and what the draft asks (from the advice model's evidence)."""
    upstream = load_upstream()
    matrix = None
    if compat:
        try:
            report = from_json(json.loads(Path(compat).read_text()), releases_if_absent=default_axis_releases())
        except (OSError, ValueError, CompatSchemaError) as exc:
            raise UsageError(f"--compat {compat}: not a readable compat.json: {exc}") from exc
        matrix = matrix_ranges(report, target, upstream, compat)
    links = tuple(dict.fromkeys((*upstream.links_for(target), *upstream.links_for_case(BASE_MODE))))
    return matrix, links, ask_for(target, upstream.evidence)
