"""What each issue draft asks upstream, derived from the advice model's evidence (never typed per release). Pure.

A draft a maintainer accepts says first what is asked and over which measured releases. Where the
project already shipped a fix, the draft says so and asks what is still open:
- FlashInfer: #2999 was closed by #3081's op, but the public `fp4_quantize` is still untraceable and no
  SGLang release calls the op: ask for the public API to route through it (or to say it must not be used
  under torch.compile);
- SGLang: fixed from the first measured-fixed release; the switch is asked to be documented only for releases that
  crash by default without naming it in their own capture-failure message (read from each wheel: 0.5.10-0.5.14
  all name it, so nothing is asked). No thread is asked to be closed: the open report's model is a MoE, which
  the kit does not judge;
- PyTorch: the behaviour is documented: acknowledge it and support the open request with the measured case.
"""

from __future__ import annotations

import dataclasses

from pcgkit.advice.model import FLASHINFER_OP_CASE, by_release, fixed_after_last_broken
from pcgkit.advice.summary import flashinfer_fixed, mode2_condition, sglang_fixed
from pcgkit.advice.values import CELLS, UPSTREAM, Evidence, Source, Statement, UpstreamRead
from pcgkit.sglang import facts as sglang_facts
from pcgkit.util.ranges import version_key
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
    op = by_release((m for m in evidence.measurements if m.case == FLASHINFER_OP_CASE and m.arch == "sm120"), "flashinfer")
    op_works = fixed_after_last_broken(op)
    op_failing = [r for r, ms in op.items() if any(m.verdict == "traces-but-fails" for m in ms)]
    if pr is not None and pr.first_release and still_broken:
        switch = (f"callers must switch to `torch.ops.flashinfer.fp4_quantize` (fixed in {op_works[0]}, measured)"
                  if op_works else "its `torch.ops.flashinfer.fp4_quantize` is not shown to run on a measured release")
        headline = (f"Public `flashinfer.fp4_quantize` is still untraceable under torch.compile(fullgraph=True) on every "
                    f"measured release through {public[-1]}; {switch}")
        last = _last_broken_sglang(evidence)
        who = (f"SGLang releases without their own op (measured through {last}) and direct callers still crash"
               if last else "direct callers still crash")
        failing = (f" On {', '.join(op_failing)} the op traces but its call path fails when run with a caller's arguments "
                   f"(`{FLASHINFER_OP_CASE}` traces-but-fails: the argument audit's evidence is in the measured cells), so "
                   f"calling it there is no fix." if op_failing else "")
        text = (f"{_cite(issue)} was closed by {_cite(pr)}, which added `torch.ops.flashinfer.fp4_quantize`. The public "
                f"wrapper does not route through it and no SGLang release calls the op, so {who}.{failing} What we ask: "
                f"make the public `fp4_quantize` dispatch through the registered op (or resolve its JIT module outside the "
                f"traced call); failing that, say in its docstring that code under torch.compile must call "
                f"`torch.ops.flashinfer.fp4_quantize`" + (f" (from {op_works[0]})." if op_works else "."))
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
    cells = [m for m in evidence.measurements if m.case == "sglang-compile-sm120" and m.versions.sglang]
    fixed = [m for m in cells if m.works]
    traced = [m for m in cells if m.traced_only]
    fixed_words = "fixed from {first} (measured)"
    if not fixed and traced:  # a `fixed` from before the run rule: it traced; its call path was not run
        fixed, fixed_words = traced, "traces from {first} (its call path not yet run by the kit)"
    broken = [m for m in cells if m.verdict in BROKEN]
    if not fixed or not broken:
        return Ask("SGLang's NVFP4 activation quantize under piecewise CUDA graphs (SM120)", (measured,))
    first = min((str(m.versions.sglang) for m in fixed), key=version_key)
    last = max((str(m.versions.sglang) for m in broken), key=version_key)
    crashed = {m.versions.sglang for m in broken}
    on_by_default = [r for r in evidence.releases if r.flags.default_state == sglang_facts.ON_BY_DEFAULT
                     and version_key(r.sglang) <= version_key(last)]
    silent = [r.sglang for r in on_by_default if not r.prints_switch_on_failure]
    printing = [r.sglang for r in on_by_default if r.prints_switch_on_failure]
    told = (f"the releases before {first} with piecewise CUDA graphs on by default ({', '.join(printing)}; measured "
            f"crashing: {', '.join(r for r in printing if r in crashed) or 'none of them run'}) already print the "
            f"switch that turns them off when capture fails (read from their wheels)") if printing else ""
    if silent:
        headline = (f"NVFP4 + piecewise CUDA graphs on SM120: {fixed_words.format(first=first)}; please document the "
                    f"switch for {', '.join(silent)}")
        ask = (f"What we ask: releases {', '.join(silent)} crash by default and do not name the switch in their "
               f"capture-failure message (read from their wheels): document `--disable-piecewise-cuda-graph` for "
               f"NVFP4 on SM120 there." + (f" Elsewhere {told}." if told else ""))
    else:
        headline = f"NVFP4 + piecewise CUDA graphs on SM120: {fixed_words.format(first=first)}; no change asked"
        ask = (f"What we ask: nothing to change. We file this so the crash on releases through {last} is findable with "
               f"its fix" + (f"; {told}." if told else "."))
    ran = "and its call path ran" if fixed and fixed[0].works else "(their call path not yet run by the kit)"
    text = (f"This is not a new bug: SGLang {first} and later trace the NVFP4 activation quantize (their own op) {ran}, "
            f"as measured below. {ask}")
    table = Source("parser", evidence.releases_source or "fixtures/sglang_releases.json",
                   max((r.read_on for r in evidence.releases), default="undated"))
    return Ask(headline, (Statement(text, measured.sources + (table,), measured.simulated, "ask"), measured))


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
