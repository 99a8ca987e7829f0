"""What to do about a diagnosis, from the kit's data only (no advice typed in code).

- the one answer (pcgkit.advice.advise, rendered by pcgkit.advice.render: measured cells, dated upstream reads, every
  SGLang release's own switch read from its wheel, the measured cost): every sentence about upstream, with its source;
- fixtures/upstream.toml: the projects (which cases each one's code breaks) and the measured dead ends;
- fixtures/matrix_snapshot.json: the kit's newest matrix, verdicts per version (simulated: said);
- the case catalog's view (CatalogView: its modes, which export, each dead end's workaround wording),
  handed down by the command handler: this stage never imports the catalog.
`load_data()` reads the files; `advise()` and `next_steps()` are pure.
"""

from __future__ import annotations

import dataclasses
import json

from pcgkit import resources
from pcgkit.advice import (
    CompileSafety,
    Evidence,
    Statement,
    Versions,
    cost_statement,
    every_release,
    load_evidence,
)
from pcgkit.advice import advise as advise_versions
from pcgkit.advice.render import off_words, pass_words, per_release_lines, tag
from pcgkit.advice.summary import upstream_states, where_fixed
from pcgkit.advice.values import UpstreamRead
from pcgkit.sglang.case import SGLANG_COMPILE_SM120
from pcgkit.triage.diagnose import Diagnosis, Kind, MatchableMode
from pcgkit.triage.facts import Fact, fact
from pcgkit.triage.steps import FlashInferSource, load_source
from pcgkit.util.tomlfile import tomllib


@dataclasses.dataclass(frozen=True)
class CatalogView:
    """What triage needs of the case catalog, as values (the handler builds it from the catalog)."""

    modes: tuple[MatchableMode, ...]  # the modes whose rules judge a failure, in catalog order
    exportable: frozenset[str] = frozenset()  # ids `pcgkit repro` can export
    workarounds: tuple[tuple[str, str], ...] = ()  # (case id, the workaround it measures, in the user's words)


@dataclasses.dataclass(frozen=True)
class KitData:
    upstream: dict
    snapshot: dict
    evidence: Evidence  # the advice model's inputs (pcgkit.advice.load_evidence)
    source: FlashInferSource | None = None  # where FlashInfer defines its FP4 path's functions (pcgkit.triage.steps)


def load_data() -> KitData:
    upstream = tomllib.loads(resources.fixture("upstream.toml").read_text())
    snapshot = json.loads(resources.fixture("matrix_snapshot.json").read_text())
    return KitData(upstream, snapshot, load_evidence(), load_source())


def cite(statement: Statement) -> str:
    """A statement with its sources in a few words and their dates (Statement.cite_short), one line."""
    return f"{statement.text} [{statement.cite_short()}]"


def _fixed_in(evidence: Evidence, facts: tuple[Fact, ...], sglang: str | None) -> list[str]:
    """The advice model's answer for the log's (or the user's) versions and arch: affected, the upgrade, the safe
    call; where-fixed per project when no version is known."""
    versions = Versions(sglang or fact(facts, "sglang"), fact(facts, "flashinfer"), fact(facts, "torch"))
    if not versions.known():
        return [cite(s) for s in where_fixed(evidence)]
    answer = advise_versions(versions, fact(facts, "compute_capability"), evidence)
    return [cite(s) for s in (answer.affected, answer.upgrade, answer.safe_call) if s]


def switch_for(evidence: Evidence, sglang: str | None) -> list[str]:
    """What to pass: the user's release's own answer, else one line per run of releases with the same answer (SM120's,
    each release's flags read from its wheel) (pcgkit.advice.render)."""
    if sglang:
        answer = advise_versions(Versions(sglang=sglang), "sm120", evidence)
        if answer.switch is not None:
            return [f"SGLang {sglang}: pass first {pass_words(answer)}; turn off: {off_words(answer)}{tag(answer.switch)}"]
    where = f" [{evidence.releases_source}]" if evidence.releases_source else ""
    return [f"{line}{where}" for line in per_release_lines(every_release(evidence))]


def _matrix(snapshot: dict, facts: tuple[Fact, ...], mode: str | None, view: CatalogView) -> list[str]:
    """What the newest matrix says for the versions in the log (the nearest SGLang cell when only it is known)."""
    wanted = {"sglang": fact(facts, "sglang"), "flashinfer-python": fact(facts, "flashinfer"), "torch": fact(facts, "torch")}
    cells = snapshot.get("cells", [])
    matching = [c for c in cells if any(v and c.get(k) == v for k, v in wanted.items())]
    label = "simulated SM120" if snapshot.get("simulated") else "real hardware"
    head = f"kit matrix of {str(snapshot.get('matrix_created', '?'))[:10]} ({label})"
    if not matching:
        found = ", ".join(f"{k} {v}" for k, v in wanted.items() if v)
        return [f"{head}: no cell for {found}" if found else f"{head}: the log names no versions to look up"]
    out = []
    for cell in matching[:3]:
        modes = [mode] if mode in cell["verdicts"] else [m.id for m in view.modes[:3]]
        verdicts = ", ".join(f"{m} {_verdict_words(cell, m)}" for m in modes if m and m in cell["verdicts"])
        versions = f"sglang {cell['sglang'] or '-'} / flashinfer {cell['flashinfer-python']} / torch {cell['torch']}"
        # a cell re-measured after the matrix was created says its own date (the snapshot's `measured`)
        measured = cell.get("measured")
        when = f"measured {measured}; " if measured and measured != str(snapshot.get("matrix_created", ""))[:10] else ""
        out.append(f"{head}: cell {cell['id']} ({when}{versions}): {verdicts}")
    return out


def _verdict_words(cell: dict, case: str) -> str:
    """A snapshot verdict as a user reads it (pcgkit.advice.model.verdict_words). Pure."""
    verdict = cell["verdicts"][case]
    return "fixed (traced; its call path not yet run by the kit)" if verdict == "fixed" and case not in cell.get("ran", ()) else verdict


def _dead_ends(upstream: dict, snapshot: dict, view: CatalogView) -> list[str]:
    out = []
    for dead in upstream.get("dead_end", ()):
        tried = dict(view.workarounds).get(dead["case"]) or dead["case"]
        verdicts = sorted({c["verdicts"].get(dead["case"]) for c in snapshot.get("cells", [])} - {None, "error", "skipped"})
        measured = f"; matrix: {'/'.join(verdicts)}" if verdicts else ""
        out.append(f"{tried}: {dead['outcome']} ({dead['case']}{measured})")
    return out


@dataclasses.dataclass(frozen=True)
class Advice:
    workaround: tuple[str, ...]
    cost: str
    fixed_in: tuple[str, ...]
    dead_ends: tuple[str, ...]
    matrix: tuple[str, ...]
    links: tuple[str, ...]
    next_steps: tuple[str, ...]
    compile_safety: tuple[str, ...] = ()  # the certificate's statement on the failing FlashInfer call, cited

    def to_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


def issue_project(upstream: dict, mode: str | None) -> str:
    """The project whose code a known-bug mode breaks (fixtures/upstream.toml's [[project]] cases), the first listed
    when the mode is undetermined (FlashInfer: the lazy JIT loader is where the family dies)."""
    return next((p["id"] for p in upstream.get("project", ()) if mode and mode in p.get("cases", ())), "flashinfer")


def reported_threads(data: KitData, mode: str | None, sglang_user: bool) -> list[UpstreamRead]:
    """The upstream issues that already report this failure (fixtures/upstream.toml's links to the mode's case, or
    to any failure mode when the mode is undetermined; the SGLang-level case's too for an SGLang user). Pure."""
    wanted = {mode} if mode else {m for link in data.upstream.get("link", ()) for m in link.get("cases", ())
                                  if m.startswith("mode")}
    if sglang_user:
        wanted.add(SGLANG_COMPILE_SM120.id)
    reads = [data.evidence.read(link["id"]) for link in data.upstream.get("link", ())
             if wanted & set(link.get("cases", ()))]
    return [r for r in reads if r is not None and r.kind == "issue"]


def next_steps(diagnosis: Diagnosis, facts: tuple[Fact, ...], data: KitData, sglang: str | None = None,
               prog: str = "pcgkit", sglang_user: bool = True, log: str = "LOG") -> tuple[str, ...]:
    """What to run or do next, spelled as the user runs the kit (`prog`, on `log`): for this bug, the thread that
    already reports it (else how to draft one) and how to get their release's answer; for anything else, what the log
    itself advises, in their SGLang release's spelling when known. Pure."""
    version = sglang or fact(facts, "sglang")
    if diagnosis.kind is Kind.KNOWN_BUG:
        steps: list[str] = []
        if not version:
            steps += [f"{prog} triage {log} --sglang X", "  for your release's answer (X: `pip show sglang`, or the image tag)"]
        threads = reported_threads(data, diagnosis.mode, sglang_user)
        if threads:  # a reported bug: its thread, not a draft; an open thread first (where versions still help)
            threads = sorted(threads, key=lambda r: r.state != "open")
            states = "; ".join(f"{r.ref} {r.state_text(dated=False)}" for r in threads[:3])
            steps.append(f"already reported, no new issue needed ({states}; as of {threads[0].as_of}):")
            steps.append(threads[0].url)
        if not threads:
            project = issue_project(data.upstream, diagnosis.mode)
            steps += [f"{prog} env --json --out env.json  # the environment, for the report",
                      f"{prog} issue --target {project} --env env.json  # a draft: no thread reports this mode yet"]
        return tuple(steps)
    if diagnosis.kind is Kind.NO_FAILURE:
        return ()
    steps = [f"the log advises: {hint}" for hint in diagnosis.log_advice]
    if diagnosis.log_advice and version:
        steps.append("for your release: " + switch_for(data.evidence, version)[0])
    if diagnosis.kind is Kind.RELATED:
        steps.append("not this bug: the same mechanism in another op; report it to the project that owns that op")
    return tuple(steps)


def maintainer_steps(diagnosis: Diagnosis, data: KitData, view: CatalogView, prog: str) -> tuple[str, ...]:
    """For whoever reproduces it (--verbose): the environment, the standalone repro, the issue draft. Pure."""
    if diagnosis.kind is not Kind.KNOWN_BUG:
        return ()
    mode = diagnosis.mode
    steps = [f"{prog} env --json --out env.json"]
    repro = ""
    if mode and mode in view.exportable:
        steps.append(f"{prog} repro {mode} --real --out repro-{mode}  # --simulate without SM120")
        repro = f" --repro repro-{mode}"
    steps.append(f"{prog} issue --target {issue_project(data.upstream, mode)} --env env.json{repro}")
    return tuple(steps)


def advise(diagnosis: Diagnosis, facts: tuple[Fact, ...], data: KitData, view: CatalogView,
           sglang: str | None = None, prog: str = "pcgkit", sglang_user: bool = True, log: str = "LOG",
           safety: CompileSafety | None = None) -> Advice | None:
    """What to do; None when the log does not show this bug or a related one. `safety`: the certificate's word on its FlashInfer call. Pure."""
    if diagnosis.kind not in (Kind.KNOWN_BUG, Kind.RELATED):
        return None
    cost = cost_statement(data.evidence)
    return Advice(
        workaround=tuple(switch_for(data.evidence, sglang or fact(facts, "sglang"))),
        cost=cite(cost) if cost is not None else "not measured and not stated upstream",
        fixed_in=tuple(_fixed_in(data.evidence, facts, sglang)),
        dead_ends=tuple(_dead_ends(data.upstream, data.snapshot, view)),
        matrix=tuple(_matrix(data.snapshot, facts, diagnosis.mode, view)),
        links=tuple(cite(s) for s in upstream_states(data.evidence, tuple(link["id"] for link in data.upstream.get("link", ())))),
        next_steps=next_steps(diagnosis, facts, data, sglang, prog, sglang_user, log),
        compile_safety=(cite(safety.statement),) if safety is not None else (),
    )
