"""The advice model's values: what goes in (evidence) and what comes out (statements). Pure.

Every statement the kit prints to people carries its sources: measured cells (which cell, which
case, simulated or real), a dated upstream read (an issue/PR state, a release's wheel), or a
measurement file. Nothing here reads a file.
"""

from __future__ import annotations

import dataclasses

from pcgkit.advice.cost import CostTable
from pcgkit.sglang.releases import ReleaseFacts

# Source kinds (Statement.sources): where a sentence comes from.
CELLS = "cells"  # verdicts of the kit's matrix cells
UPSTREAM = "upstream"  # an upstream issue/PR/tag as read on a date
MEASUREMENT = "measurement"  # a measurement file of the kit (e.g. the workaround's cost on the H200)
PARSER = "parser"  # a release's own code, read from its wheel
SOURCE_KINDS = (CELLS, UPSTREAM, MEASUREMENT, PARSER)

# What a user's stack is, for the case that matters to them.
AFFECTED = "affected"
NOT_AFFECTED = "not affected"
UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True)
class Versions:
    """What is known of the user's stack; None = unknown."""

    sglang: str | None = None
    flashinfer: str | None = None
    torch: str | None = None

    def known(self) -> dict[str, str]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v}

    def describe(self) -> str:
        names = {"sglang": "SGLang", "flashinfer": "FlashInfer", "torch": "torch"}
        return ", ".join(f"{names[k]} {v}" for k, v in self.known().items()) or "no versions known"


@dataclasses.dataclass(frozen=True)
class Source:
    kind: str  # one of SOURCE_KINDS
    ref: str  # cell ids, URL, measurement file, release + parser
    as_of: str  # ISO date of the read or measurement (the newest, when the cells behind it differ)
    since: str = ""  # the oldest measurement date when the cells behind it were measured on different dates

    @property
    def dates(self) -> str:
        """'2026-12-05', or '2026-12-01 to 2026-12-05' when its cells were measured on different dates."""
        return f"{self.since} to {self.as_of}" if self.since and self.since != self.as_of else self.as_of

    def __post_init__(self) -> None:
        if self.kind not in SOURCE_KINDS:
            raise ValueError(f"source kind {self.kind!r} is not one of {SOURCE_KINDS}")

    def cite(self) -> str:
        """'ref, as of DATE' as printed beside a statement."""
        if self.kind == CELLS and self.since:
            return f"{self.ref} (measured {self.dates})"
        return f"{self.ref} (as of {self.as_of})"


@dataclasses.dataclass(frozen=True)
class Statement:
    text: str  # one sentence (or two) a user reads
    sources: tuple[Source, ...]  # never empty
    simulated: bool  # True when any measured cell behind it was simulated
    topic: str = ""  # affected | flashinfer-alone | upgrade | switch | cost | mode2 | upstream | compile-safety

    def __post_init__(self) -> None:
        if not self.sources:
            raise ValueError(f"a statement without a source: {self.text!r}")

    def cite_short(self, say_simulated: bool = True) -> str:
        """The sources in a few words for tight places (README box, drafts): kind, what, the date. say_simulated
        False where the page already says it once (an issue draft's note)."""
        parts = []
        for source in self.sources:
            if source.kind == CELLS:
                parts.append(f"matrix cells of {source.dates}")
            elif source.kind == PARSER:
                parts.append(f"release wheels read {source.as_of}")
            elif source.kind == UPSTREAM:
                parts.append(f"{source.ref.split(' (')[0]} as of {source.as_of}")
            else:
                parts.append(f"{source.ref.split(' (')[0]}, {source.as_of}")
        return "; ".join(dict.fromkeys(parts)) + ("; simulated" if self.simulated and say_simulated else "")

    def to_dict(self) -> dict:
        return {"topic": self.topic, "text": self.text, "simulated": self.simulated,
                "sources": [dataclasses.asdict(s) for s in self.sources]}


@dataclasses.dataclass(frozen=True)
class Measurement:
    """One cell x case verdict of the kit's matrix."""

    cell: str
    case: str
    verdict: str  # the verdict vocabulary (reproduced, fixed, drifted, not-applicable, skipped, error)
    arch: str  # the architecture family the verdict speaks for: sm120, sm100, sm90
    simulated: bool
    versions: Versions  # as installed in the cell
    as_of: str  # ISO date of the matrix run
    source: str  # the file the verdict was read from
    ran: bool = False  # a `fixed` whose call path ran (the snapshot's `ran`); False: it only traced

    @property
    def works(self) -> bool:
        """`fixed` with its call path run: the only verdict a "fixed from" or an upgrade target may rest on."""
        return self.verdict == "fixed" and self.ran

    @property
    def traced_only(self) -> bool:
        """`fixed` measured before the run rule: it traced; nothing says it runs."""
        return self.verdict == "fixed" and not self.ran


@dataclasses.dataclass(frozen=True)
class UpstreamRead:
    """An upstream issue, PR or tag as read on a date (by the GitHub API, or recorded by hand with the tool named)."""

    id: str  # e.g. flashinfer-2999
    project: str  # sglang | flashinfer | pytorch
    kind: str  # issue | pr | doc
    number: int
    url: str
    title: str
    state: str  # open | closed | merged | unknown
    as_of: str  # ISO date of the read
    how: str  # "GitHub REST API", or the recorded read's tool and what it showed
    closed_at: str = ""  # ISO date, when closed or merged
    closed_by: str = ""  # the PR that closed an issue (e.g. flashinfer#3081)
    first_release: str = ""  # the first release tag containing a merged PR ("" unknown / none)
    first_release_how: str = ""  # how first_release was established (git tag --contains ..., a wheel read)

    @property
    def ref(self) -> str:
        return f"{self.project}#{self.number}" if self.number else self.id

    def state_text(self, dated: bool = True) -> str:
        """'merged 2026-05-22, first released in 0.6.12 (as of 2026-12-01)', the state as printed everywhere."""
        state = self.state + (f" {self.closed_at}" if self.closed_at else "")
        if self.closed_by:
            state += f" by {self.closed_by}"
        if self.first_release:
            state += f", first released in {self.first_release}"
        return f"{state} (as of {self.as_of})" if dated else state


@dataclasses.dataclass(frozen=True)
class Quote:
    """An upstream figure shown as a quote with its link, never as the kit's number."""

    text: str
    url: str
    phase: str  # the phase the figure is about: prefill/extend, decode, end-to-end
    as_of: str


@dataclasses.dataclass(frozen=True)
class Mode2Run:
    """One measurement of where mode 2 stops, in one process state (the fp4 JIT spec registered or not)."""

    spec_registered: bool
    stops_at: str  # the innermost FlashInfer frame, e.g. flashinfer/jit/core.py:169:register
    refused: str  # what dynamo would not trace, e.g. datetime.now / posix.stat
    versions: Versions
    device: str
    simulated: bool
    as_of: str
    source: str


@dataclasses.dataclass(frozen=True)
class UnsafeCall:
    """One FlashInfer call a release's trace-safety certificate found breaking in a lazy JIT loader under
    fullgraph (the certificate's `jit_loader_breaks`, read by pcgkit.sweep.certificate.compile_unsafe_calls)."""

    target: str  # flashinfer.single_prefill_with_kv_cache
    loader: str  # flashinfer-jit | cute-dsl
    where: str  # the first untraceable site, e.g. flashinfer/jit/attention/modules.py:1835:gen_customize_single_prefill_module
    flashinfer: str  # the release certified
    arch: str  # sm120
    simulated: bool
    device: str  # "simulated sm120 on CPU", or the real device
    created: str  # ISO date of the certificate
    source: str  # the certificate file

    @property
    def name(self) -> str:
        """The call's own name, as a traceback's frame names it ('single_prefill_with_kv_cache')."""
        return self.target.rsplit(".", 1)[-1]


@dataclasses.dataclass(frozen=True)
class FirstTryRun:
    """One launch of the first try (or its control) on the lent GPU (fixtures/measurements/first-try.json): on SM90 a
    hybrid, so at best it gets past the point of the crash, never `fixed`."""

    sglang: str
    tried: str  # default (the crash, control) | breakable (the first try) | off (piecewise off)
    label: str  # "hybrid: real NVIDIA H100 80GB HBM3 (SM90) with architecture queries answered as SM120"
    past_crash_point: bool
    outcome: str  # what the launch did, in the run's own words (past the crash, then the sm_120 kernel SM90 cannot run)
    date: str
    source: str


@dataclasses.dataclass(frozen=True)
class Evidence:
    """Everything the advice is derived from; the loader fills it, advise() only reads it."""

    measurements: tuple[Measurement, ...] = ()
    reads: tuple[UpstreamRead, ...] = ()
    releases: tuple[ReleaseFacts, ...] = ()  # every SGLang release in range, read from its wheel
    releases_source: str = ""  # the table file
    cost_quotes: tuple[Quote, ...] = ()
    mode2: tuple[Mode2Run, ...] = ()  # fixtures/measurements/mode2-condition.json
    unsafe_calls: tuple[UnsafeCall, ...] = ()  # fixtures/certificates/: each whole certificate's JIT-loader set
    cost_table: CostTable | None = None  # piecewise off against on (pcgkit.advice.cost), from the measurement file
    breakable_table: CostTable | None = None  # the breakable runner against piecewise off, on the file's own release
    # each further release's own breakable measurement (the cost file's `by_release`, benchmarks/piecewise_cost.py
    # add-release): a release's first-try cost is its own entry or the top level's release, never another's
    breakable_by_release: tuple[CostTable, ...] = ()
    first_try_runs: tuple[FirstTryRun, ...] = ()  # the first try's launches on the lent GPU, per release measured
    capture: str = ""  # the start-up line: what piecewise capture takes (pcgkit.advice.cost.capture_line)

    def read(self, read_id: str) -> UpstreamRead | None:
        return next((r for r in self.reads if r.id == read_id), None)
