"""What each issue draft asks upstream, derived from the advice model's evidence (never typed per release). Pure.

A draft a maintainer accepts says first what is asked and over which measured releases. Where the
project already shipped a fix, the draft says so and asks what is still open:
- FlashInfer: #2999 was closed by #3081's op, but the public `fp4_quantize` is still untraceable and no
  SGLang release calls the op: ask for the public API to route through it (or to say it must not be used
  under torch.compile);
- SGLang: fixed from the first measured-fixed release: ask to confirm the open thread whose frames are the
  path that release replaced, and to document the switch for the releases that crash by default;
- PyTorch: the behaviour is documented: acknowledge it and support the open request with the measured case.
"""

from __future__ import annotations

import dataclasses

from pcgkit.advice.summary import flashinfer_fixed, mode2_condition, sglang_fixed
from pcgkit.advice.values import CELLS, UPSTREAM, Evidence, Source, Statement, UpstreamRead
from pcgkit.sglang import facts as sglang_facts
from pcgkit.sglang.releases import version_key
from pcgkit.values.verdict import BROKEN


@dataclasses.dataclass(frozen=True)
class Ask:
    headline: str  # one line: what is asked (the draft's first sentence)
    statements: tuple[Statement, ...]  # the ask and the measured range, each with its sources
    notes: tuple[Statement, ...] = ()  # measured context shown beside the workarounds (mode 2's condition)


def _src(read: UpstreamRead) -> Source:
    return Source(UPSTREAM, f"{read.ref} ({read.url})", read.as_of)


def _cite(read: UpstreamRead | None) -> str:
    return (f"[{read.ref}]({read.url}) ({read.state_text(dated=False)}, as of {read.as_of})" if read
            else "the upstream thread (not read)")


def _last_broken_sglang(evidence: Evidence) -> str | None:
    broken = [m.versions.sglang for m in evidence.measurements
              if m.case == "sglang-compile-sm120" and m.verdict in BROKEN and m.versions.sglang]
    return max(broken, key=version_key) if broken else None


def _flashinfer(evidence: Evidence) -> Ask | None:
    measured = flashinfer_fixed(evidence)
    if measured is None:
        return None
    issue, pr = evidence.read("flashinfer-2999"), evidence.read("flashinfer-3081")
    public = sorted({m.versions.flashinfer for m in evidence.measurements if m.case == "mode1" and m.versions.flashinfer},
                    key=version_key)
    still_broken = "untraceable on every measured release" in measured.text
    if pr is not None and pr.first_release and still_broken:
        headline = (f"Public `flashinfer.fp4_quantize` is still untraceable under torch.compile(fullgraph=True) on every "
                    f"measured release through {public[-1]}; callers must switch to `torch.ops.flashinfer.fp4_quantize`")
        last = _last_broken_sglang(evidence)
        who = (f"SGLang releases without their own op (measured through {last}) and direct callers still crash"
               if last else "direct callers still crash")
        text = (f"{_cite(issue)} was closed by {_cite(pr)}, which added `torch.ops.flashinfer.fp4_quantize`. The public "
                f"wrapper does not route through it and no SGLang release calls the op, so {who}. What we ask: make the public `fp4_quantize` dispatch through the registered op (or resolve its JIT "
                f"module outside the traced call); failing that, say in its docstring that code under torch.compile must "
                f"call `torch.ops.flashinfer.fp4_quantize`.")
    else:
        headline = "`flashinfer.fp4_quantize` cannot be traced by torch.compile(fullgraph=True)"
        text = ("What we ask: register `fp4_quantize` as a `torch.library.custom_op` with a fake, so dynamo treats it as "
                "one opaque node instead of tracing its lazy JIT loader.")
    sources = tuple(_src(r) for r in (issue, pr) if r) + measured.sources
    return Ask(headline, (Statement(text, sources, measured.simulated, "ask"), measured))


def _sglang(evidence: Evidence) -> Ask | None:
    measured = sglang_fixed(evidence)
    if measured is None:
        return None
    thread = evidence.read("sglang-23386")
    fixed = [m for m in evidence.measurements if m.case == "sglang-compile-sm120" and m.verdict == "fixed" and m.versions.sglang]
    broken = [m for m in evidence.measurements if m.case == "sglang-compile-sm120"
              and m.verdict in BROKEN and m.versions.sglang]
    if not fixed or not broken:
        return Ask("SGLang's NVFP4 activation quantize under piecewise CUDA graphs (SM120)", (measured,))
    first = min((m.versions.sglang for m in fixed if m.versions.sglang), key=version_key)
    last = max((m.versions.sglang for m in broken if m.versions.sglang), key=version_key)
    crashed = {m.versions.sglang for m in broken}
    on_by_default = [r.sglang for r in evidence.releases if r.flags.default_state == sglang_facts.ON_BY_DEFAULT
                     and version_key(r.sglang) <= version_key(last)]
    headline = (f"NVFP4 + piecewise CUDA graphs on SM120: fixed from {first} (measured); please confirm the open report "
                f"and document the switch for releases through {last}")
    text = (f"This is not a new bug: SGLang {first} and later trace the NVFP4 activation quantize (their own op), as "
            f"measured below. What we ask: (1) {_cite(thread)}, whose frames are the path {first} replaced, be confirmed "
            f"fixed in {first} and closed; (2) the releases before {first} with piecewise CUDA graphs on by default "
            f"(read from their parsers: {', '.join(on_by_default) or 'none'}; measured crashing: "
            f"{', '.join(r for r in on_by_default if r in crashed) or 'none of them run'}) get "
            f"`--disable-piecewise-cuda-graph` documented for NVFP4 on SM120.")
    table = Source("parser", evidence.releases_source or "fixtures/sglang_releases.json",
                   max((r.read_on for r in evidence.releases), default="undated"))
    sources = ((_src(thread),) if thread else ()) + measured.sources + (table,)
    return Ask(headline, (Statement(text, sources, measured.simulated, "ask"), measured))


def _pytorch(evidence: Evidence) -> Ask | None:
    doc, request = evidence.read("pytorch-fullgraph-doc"), evidence.read("pytorch-144908")
    mode4 = [m for m in evidence.measurements if m.case == "mode4" and m.verdict in BROKEN]
    if doc is None or not mode4:
        return None
    torches = sorted({m.versions.torch for m in mode4 if m.versions.torch}, key=version_key)
    headline = ("fullgraph=True rejects calls wrapped in torch.compiler.disable (documented): a measured case for an "
                "opt-in that lets explicitly disabled calls through")
    text = (f"This is documented behaviour, not a bug report: `torch.compile(fullgraph=True)` raises on any graph break, "
            f"and `torch.compiler.disable` is one ([docs]({doc.url}), GB0098; read {doc.as_of}). What we ask: "
            f"{_cite(request)} proposes letting explicitly disabled calls through under fullgraph=True. SGLang's piecewise "
            f"CUDA graphs compile with fullgraph=True, and wrapping FlashInfer's `fp4_quantize` in `torch.compiler.disable` "
            f"fails on every measured torch ({', '.join(torches)}): a concrete case for that opt-in.")
    cells = Source(CELLS, f"mode4 in cells {', '.join(sorted({m.cell for m in mode4}))} of {mode4[0].source}",
                   max(m.as_of for m in mode4))
    sources = (_src(doc),) + ((_src(request),) if request else ()) + (cells,)
    return Ask(headline, (Statement(text, sources, any(m.simulated for m in mode4), "ask"),))


def ask_for(target: str, evidence: Evidence) -> Ask | None:
    """What the draft for `target` asks, with the measured range behind it, and mode 2's measured condition beside
    the workarounds; None without evidence. Pure."""
    ask = {"flashinfer": _flashinfer, "sglang": _sglang, "pytorch": _pytorch}[target](evidence)
    mode2 = mode2_condition(evidence)
    return dataclasses.replace(ask, notes=(mode2,)) if ask is not None and mode2 is not None else ask
