"""Statements for everyone at once (README box, compat.md, dashboard, issue drafts), from the same evidence. Pure.

`where_fixed` says, per project, where the case that matters to its users stops reproducing, over
measured releases only (gaps named); `upstream_states` prints each upstream thread with its state
and the date it was read; `mode2_condition` states where mode 2 stops and the condition that decides
it, from the trace-level case's two measured runs.
"""

from __future__ import annotations

from pcgkit.advice.model import (
    FLASHINFER_CASE,
    FLASHINFER_OP_CASE,
    SGLANG_CASE_BY_ARCH,
    by_release,
    cell_source,
    fixed_after_last_broken,
    release_range,
    sim_label,
    table_source,
)
from pcgkit.advice.values import MEASUREMENT, UPSTREAM, Evidence, Measurement, Source, Statement, UpstreamRead
from pcgkit.util.ranges import version_key
from pcgkit.values.verdict import BROKEN


def _read_source(read: UpstreamRead) -> Source:
    return Source(UPSTREAM, f"{read.ref} ({read.url}): {read.how}", read.as_of)


def _from_first_fixed(grouped: dict[str, list[Measurement]], traced: bool = False) -> list[str]:
    """The measured releases from the first one fixed after the last broken (fixed_after_last_broken) on. Pure."""
    fixed = fixed_after_last_broken(grouped, traced)
    return [r for r in grouped if fixed and version_key(r) >= version_key(fixed[0])]


def _from_words(works: list[str], traced: list[str], grouped: dict[str, list[Measurement]] | None = None) -> str:
    """'fixed from 0.7.1, measured (call path ran: ...)', or 'traces from ...' where no release's call path ran yet.
    `works`: the releases from the first one that ran; `grouped` tells which of them ran. Pure."""
    if works:
        ran = [r for r in works if not grouped or any(m.works for m in grouped[r])]
        only = [r for r in works if grouped and r not in ran]
        return (f"fixed from {works[0]}, measured (call path ran: {', '.join(ran)}"
                + (f"; traced, call path not yet run: {', '.join(only)}" if only else "") + ")")
    if traced:
        return (f"traces from {traced[0]} ({', '.join(traced)}); its call path not yet run by the kit, so not "
                f"shown to run")
    return ""


def sglang_fixed(evidence: Evidence, arch: str = "sm120") -> Statement | None:
    """Where SGLang's own NVFP4 call stops failing under piecewise compile, over releases run as themselves. Pure."""
    case = SGLANG_CASE_BY_ARCH[arch]
    grouped = by_release((m for m in evidence.measurements if m.case == case and m.arch == arch), "sglang")
    if not grouped:
        return None
    broken = [r for r, ms in grouped.items() if any(m.verdict in BROKEN for m in ms)]
    fixed = _from_first_fixed(grouped)
    traced = [] if fixed else _from_first_fixed(grouped, traced=True)
    in_range = [r.sglang for r in evidence.releases]
    gaps = [r for r in in_range if r not in grouped]
    used = [m for ms in grouped.values() for m in ms]
    text = f"SGLang ({case}, {sim_label(used)} {arch.upper()}): "
    text += f"reproduces on every measured release through {broken[-1]} ({', '.join(broken)})" if broken else "never reproduced"
    text += f"; {_from_words(fixed, traced, grouped)}" if fixed or traced else "; no measured release traces it"
    text += (f". Releases in range not measured (not run as themselves, or no verdict there): {', '.join(gaps)}." if gaps
             else f". Every release in range ({release_range(evidence)}) was run as itself.")
    sources = [cell_source(used)] + [_read_source(read) for read in evidence.reads
                                      if read.project == "sglang" and (fixed or traced)
                                      and read.first_release == (fixed or traced)[0]]
    return Statement(text, tuple(sources), any(m.simulated for m in used), "upstream")


def flashinfer_fixed(evidence: Evidence, arch: str = "sm120") -> Statement | None:
    """The public fp4_quantize and the traceable op, over measured FlashInfer releases; and who calls the op. Pure."""
    public = by_release((m for m in evidence.measurements if m.case == FLASHINFER_CASE and m.arch == arch), "flashinfer")
    op = by_release((m for m in evidence.measurements if m.case == FLASHINFER_OP_CASE and m.arch == arch), "flashinfer")
    if not public:
        return None
    public_fixed = fixed_after_last_broken(public)
    public_traced = fixed_after_last_broken(public, traced=True)
    op_fixed = [r for r in _from_first_fixed(op) if any(m.works or m.traced_only for m in op[r])]
    op_traced = [r for r, ms in op.items() if any(m.traced_only for m in ms) and not any(m.verdict in BROKEN for m in ms)
                 and (not op_fixed or version_key(r) < version_key(op_fixed[0]))]
    op_failing = [r for r, ms in op.items() if any(m.verdict == "traces-but-fails" for m in ms)]
    releases = list(public)
    text = (f"FlashInfer ({FLASHINFER_CASE}, {sim_label(m for ms in public.values() for m in ms)} {arch.upper()}): the public "
            f"`flashinfer.fp4_quantize` " + (_from_words(public_fixed, public_traced) if public_fixed or public_traced else
                                             f"is untraceable on every measured release ({releases[0]} through {releases[-1]})"))
    if op_failing:
        text += (f"; `torch.ops.flashinfer.fp4_quantize` traces but fails when run on {', '.join(op_failing)} "
                 f"({FLASHINFER_OP_CASE} traces-but-fails)")
    if op_fixed:
        text += (f"; `torch.ops.flashinfer.fp4_quantize` is {_from_words(op_fixed, [], op)} ({FLASHINFER_OP_CASE}): "
                 f"callers must switch to it")
    if op_traced:
        text += (f"; on {', '.join(op_traced)} it traced, its call path not yet run by the kit ({FLASHINFER_OP_CASE}, "
                 f"measured before the run rule): not shown to run, not a release to switch to")
    callers = [r.sglang for r in evidence.releases if r.calls_flashinfer_fp4_op]
    if evidence.releases:
        text += (f"; SGLang releases that call it: {', '.join(callers)}" if callers else
                 f"; no SGLang release calls it ({release_range(evidence)}, read from every wheel)")
    used = [m for ms in (*public.values(), *op.values()) for m in ms]
    sources = [cell_source(used)] + ([table_source(evidence)] if evidence.releases else [])
    sources += [_read_source(read) for read in evidence.reads
                if read.project == "flashinfer" and read.kind == "pr" and (op_fixed or op_traced)
                and read.first_release == (op_fixed or op_traced)[0]]
    return Statement(text + ".", tuple(sources), any(m.simulated for m in used), "upstream")


def where_fixed(evidence: Evidence) -> tuple[Statement, ...]:
    """Per project, where the case that matters to its users is measured fixed. Pure."""
    return tuple(s for s in (sglang_fixed(evidence), flashinfer_fixed(evidence)) if s is not None)


def upstream_states(evidence: Evidence, ids: tuple[str, ...] = ()) -> tuple[Statement, ...]:
    """Each upstream thread (or those named) with its state and the date of the read. Pure."""
    reads = [r for r in evidence.reads if r.kind in ("issue", "pr") and (not ids or r.id in ids)]
    return tuple(Statement(f"[{r.ref}]({r.url}) {r.title}: {r.state_text()}", (_read_source(r),), False, "upstream")
                 for r in reads)


def mode2_condition(evidence: Evidence) -> Statement | None:
    """Where mode 2 stops, with the condition that decides it, from runs measured in both process states. Pure."""
    cold = [r for r in evidence.mode2 if not r.spec_registered]
    warm = [r for r in evidence.mode2 if r.spec_registered]
    if not cold or not warm:
        return None
    envs = sorted({f"flashinfer {r.versions.flashinfer} / torch {r.versions.torch}" for r in evidence.mode2})
    device = sorted({r.device for r in evidence.mode2})
    text = (f"With `get_cuda_version` patched, where the trace stops depends on the process, not only on the release: "
            f"while FlashInfer has not registered the fp4 module's JIT spec (no fp4 call yet in that process) it stops "
            f"in `JitSpecRegistry.register` at `{cold[0].refused}` ({cold[0].stops_at}); once the spec is registered "
            f"(an eager call, e.g. a warm-up forward, before the compile) it stops at `{warm[0].refused}` "
            f"({warm[0].stops_at}). Measured both ways on {', '.join(envs)} ({'; '.join(device)}).")
    sources = tuple(dict.fromkeys(Source(MEASUREMENT, r.source, r.as_of) for r in evidence.mode2))
    return Statement(text, sources, any(r.simulated for r in evidence.mode2), "mode2")
