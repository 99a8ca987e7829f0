"""The statements the answer (pcgkit.advice.answer) is built from: measured cells and dated reads per question. Pure.

The case that matters depends on who the user is. An SGLang user runs SGLang's own FP4 call
under SGLang's compile wrapper (the SGLang-level case); upgrading FlashInfer does nothing for them
unless their SGLang calls FlashInfer's traceable op, which no release does (read from every wheel).
A user who calls FlashInfer directly runs the public `flashinfer.fp4_quantize` (mode 1).
Only releases that were run as themselves count as measured; a release between two measured ones
is "unknown", with its measured neighbours named.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from pcgkit.advice.values import (
    AFFECTED,
    CELLS,
    MEASUREMENT,
    NOT_AFFECTED,
    PARSER,
    UNKNOWN,
    UPSTREAM,
    Evidence,
    Measurement,
    Source,
    Statement,
    Versions,
)
from pcgkit.sglang.case import SGLANG_COMPILE_OTHER, SGLANG_COMPILE_SM120
from pcgkit.sglang.releases import ReleaseFacts
from pcgkit.util.ranges import version_key
from pcgkit.values.verdict import BROKEN
from pcgkit.verdicts.fixmodes import FIX_UPSTREAM_OP
from pcgkit.verdicts.modes import MODE1

# The SGLang-level case per architecture family (the non-SM120 case simulates SM90).
SGLANG_CASE_BY_ARCH: dict[str, str] = {"sm120": SGLANG_COMPILE_SM120.id, "sm90": SGLANG_COMPILE_OTHER.id}
FLASHINFER_CASE = MODE1.id  # the public flashinfer.fp4_quantize under fullgraph=True
FLASHINFER_OP_CASE = FIX_UPSTREAM_OP.id  # torch.ops.flashinfer.fp4_quantize under fullgraph=True
COST_FILE = "fixtures/measurements/piecewise-cost.json"

_CLEAN = ("fixed", "not-applicable")


def arch_family(arch: str | None) -> str | None:
    """'sm120' for sm_121 / SM120 / 12.1 / 121; 'sm90' for 9.0 / sm90a; None when unreadable. Pure."""
    if not arch:
        return None
    text = arch.strip().lower().removeprefix("sm").removeprefix("_").rstrip("afx")
    if "." in text:
        major_text, _, minor_text = text.partition(".")
    else:
        major_text, minor_text = text[:-1], text[-1:]
    if not (major_text.isdigit() and minor_text.isdigit()):
        return None
    major = int(major_text)
    return f"sm{major}0" if major >= 9 else f"sm{major}{minor_text}"


def sim_label(measurements: Iterable[Measurement]) -> str:
    flags = {m.simulated for m in measurements}
    return "simulated" if flags == {True} else "real" if flags == {False} else "simulated and real"


def cell_source(measurements: Iterable[Measurement]) -> Source:
    ms = list(measurements)
    cases = sorted({m.case for m in ms})
    refs = ", ".join(sorted({m.cell for m in ms}))
    dates = sorted({m.as_of for m in ms})  # each cell's own measurement date (a re-measured cell carries its own)
    return Source(CELLS, f"{'/'.join(cases)} in cells {refs} of {ms[0].source}", dates[-1],
                  since=dates[0] if len(dates) > 1 else "")


def _state(verdicts: Iterable[str]) -> str:
    found = set(verdicts)
    if found & set(BROKEN):
        return AFFECTED
    if found & set(_CLEAN):
        return NOT_AFFECTED
    return UNKNOWN


def fixed_after_last_broken(grouped: dict[str, list[Measurement]], traced: bool = False) -> list[str]:
    """Releases measured `fixed` with their call path run (Measurement.works) above the newest release measured
    broken (traces-but-fails included), oldest first: a release that only traced is not "fixed from" while a later
    one fails to run. `traced=True` gives the releases that only traced (fixed before the run rule) instead. Pure."""
    broken = [r for r, ms in grouped.items() if any(m.verdict in BROKEN for m in ms)]
    wanted = (lambda m: m.traced_only) if traced else (lambda m: m.works)
    return [r for r, ms in grouped.items() if any(wanted(m) for m in ms)
            and (not broken or version_key(r) > version_key(broken[-1]))]


def verdict_words(m: Measurement) -> str:
    """A measurement's verdict as a user reads it: `fixed` measured before the run rule says it only traced. Pure."""
    return "fixed (traced; its call path not yet run by the kit)" if m.traced_only else m.verdict


def by_release(measurements: Iterable[Measurement], axis: str) -> dict[str, list[Measurement]]:
    """Measurements grouped by the release of `axis` the cell ran as itself, oldest first. Pure."""
    grouped: dict[str, list[Measurement]] = {}
    for m in measurements:
        release = getattr(m.versions, axis)
        if release:
            grouped.setdefault(release, []).append(m)
    return dict(sorted(grouped.items(), key=lambda kv: version_key(kv[0])))


def _pins(m: Measurement) -> str:
    return ", ".join(f"{k} {v}" for k, v in m.versions.known().items())


def user_case(versions: Versions, arch: str | None) -> tuple[str, str | None, str | None]:
    """(who, axis, the case that matters) for this user on this arch family. Pure."""
    if versions.sglang:
        return "SGLang", "sglang", SGLANG_CASE_BY_ARCH.get(arch or "")
    if versions.flashinfer:
        return "FlashInfer", "flashinfer", FLASHINFER_CASE
    return "", None, None


def measured_cells(evidence: Evidence, case: str, arch: str, axis: str) -> dict[str, list[Measurement]]:
    return by_release((m for m in evidence.measurements if m.case == case and m.arch == arch), axis)


def affected(who: str, axis: str | None, case: str | None, release: str | None, arch: str | None,
              measured: dict[str, list[Measurement]], versions: Versions,
              evidence: Evidence) -> tuple[str, Statement]:
    if axis is None or release is None:
        text = "No SGLang or FlashInfer version is known, so nothing measured applies; run `pcgkit env` or triage a log."
        return UNKNOWN, Statement(text, (table_source(evidence),), False, "affected")
    where = arch.upper() if arch else "an unknown architecture"
    if arch is None:
        return UNKNOWN, _per_arch(who, axis, release, evidence)
    if case is None:
        measured_arches = sorted({m.arch for m in evidence.measurements if m.case in SGLANG_CASE_BY_ARCH.values()})
        text = (f"{who} {release} on {where}: unknown. The kit measures the SGLang-level case on "
                f"{', '.join(a.upper() for a in measured_arches) or 'no architecture'} only.")
        return UNKNOWN, Statement(text, (table_source(evidence),), False, "affected")
    own = measured.get(release)
    if own:
        state = _state(m.verdict for m in own)
        verdicts = "; ".join(f"{m.case} {verdict_words(m)} in cell {m.cell} ({_pins(m)})" for m in own)
        differs = _pin_difference(own[0], versions, axis)
        text = f"{who} {release} on {where}: {state} ({verdicts}; {sim_label(own)} {arch.upper()}){differs}."
        return state, Statement(text, (cell_source(own),), any(m.simulated for m in own), "affected")
    below = [r for r in measured if version_key(r) < version_key(release)]
    above = [r for r in measured if version_key(r) > version_key(release)]
    near = below[-1:] + above[:1]
    named = "; ".join(f"{r} {measured[r][0].verdict} (cell {measured[r][0].cell})" for r in near)
    text = (f"{who} {release} on {where}: unknown: it has not been run as itself ({case}). "
            + (f"Nearest measured releases: {named}." if near else "No release of it was measured."))
    sources = (cell_source(m for r in near for m in measured[r]),) if near else (table_source(evidence),)
    return UNKNOWN, Statement(text, sources, any(m.simulated for r in near for m in measured[r]), "affected")


def _per_arch(who: str, axis: str, release: str, evidence: Evidence) -> Statement:
    """The architecture is not known: what each measured architecture says for this release. Pure."""
    cases = SGLANG_CASE_BY_ARCH if axis == "sglang" else {"sm120": FLASHINFER_CASE}
    found = [(arch, [m for m in evidence.measurements if m.case == case and m.arch == arch
                     and getattr(m.versions, axis) == release]) for arch, case in cases.items()]
    found = [(arch, ms) for arch, ms in found if ms]
    if not found:
        text = (f"{who} {release}: unknown: the architecture is not known and {release} has not been run as itself; "
                f"give the GPU's architecture for an answer.")
        return Statement(text, (table_source(evidence),), False, "affected")
    parts = "; ".join(f"on {arch.upper()}: {_state(m.verdict for m in ms)} ({ms[0].case} {ms[0].verdict}, cell "
                      f"{ms[0].cell}, {sim_label(ms)})" for arch, ms in found)
    text = f"{who} {release}, architecture not known: {parts}. Give the GPU's architecture for the upgrade that fits."
    used = [m for _, ms in found for m in ms]
    return Statement(text, (cell_source(used),), any(m.simulated for m in used), "affected")


def _pin_difference(m: Measurement, versions: Versions, axis: str) -> str:
    """' (yours: flashinfer 0.6.12)' when the user's other pins differ from the cell's. Pure."""
    other = {k: v for k, v in versions.known().items() if k != axis and getattr(m.versions, k) not in (None, v)}
    return f"; measured with the release's own pins, yours differ: {', '.join(f'{k} {v}' for k, v in other.items())}" if other else ""


def table_source(evidence: Evidence) -> Source:
    newest = max((r.read_on for r in evidence.releases), default="undated")
    return Source(PARSER, evidence.releases_source or "no release table loaded", newest)


def find_release(evidence: Evidence, release: str | None) -> ReleaseFacts | None:
    return next((r for r in evidence.releases if r.sglang == release), None)


def release_source(facts: ReleaseFacts) -> Source:
    return Source(PARSER, f"sglang {facts.sglang}: {facts.flags.source}", facts.read_on)


def release_range(evidence: Evidence) -> str:
    releases = [r.sglang for r in evidence.releases]
    if not releases:
        return "none"
    return releases[0] if len(releases) == 1 else f"{releases[0]} through {releases[-1]}"


def upgrade_sglang(release: str, case: str, arch: str, measured: dict[str, list[Measurement]],
                    evidence: Evidence) -> Statement:
    later = {r: ms for r, ms in measured.items() if version_key(r) > version_key(release)}
    works = fixed_after_last_broken(later)
    traced = [r for r in fixed_after_last_broken(later, traced=True) if not works or version_key(r) < version_key(works[0])]
    if not works and not traced:
        newest = list(measured)[-1] if measured else "none"
        text = (f"No measured SGLang release after {release} is fixed for {case} on {arch.upper()} "
                f"(measured through {newest}).")
        sources = (cell_source(m for ms in measured.values() for m in ms),) if measured else (table_source(evidence),)
        return Statement(text, sources, any(m.simulated for ms in measured.values() for m in ms), "upgrade")
    target = works[0] if works else traced[0]
    proof = measured[target][0]
    from_target = [r for r in measured if version_key(r) >= version_key(target)]
    broken = [r for r in from_target if _state(m.verdict for m in measured[r]) != NOT_AFFECTED]
    in_range = [r.sglang for r in evidence.releases
                if version_key(target) <= version_key(r.sglang) <= version_key(from_target[-1])]
    gaps = [r for r in in_range if r not in measured]
    cell = f"cell {proof.cell}: {verdict_words(proof)}, {sim_label(measured[target])}, with its own pins {_pins(proof)}"
    if works:
        claim = (f"Upgrade SGLang to {target}: fixed there, measured: the smallest measured release where {case} "
                 f"traces on {arch.upper()} and its call path ran ({cell}).")
    else:
        claim = (f"Upgrade SGLang to {target}: the smallest measured release where {case} traces on {arch.upper()} "
                 f"({cell}); the kit has not yet run its call path there, so it is not shown to run.")
    ran = [r for r in from_target if any(m.works for m in measured[r])]
    only = [r for r in from_target if r not in ran and any(m.traced_only for m in measured[r])]
    text = (claim + f" Measured releases from it: {', '.join(from_target)}"
            + (f" (call path ran: {', '.join(ran)}; traced, call path not yet run: {', '.join(only)})" if ran and only else "")
            + (f"; not fixed among them: {', '.join(broken)}" if broken else "")
            + (f"; not measured in that range (not run as themselves, or no verdict there): {', '.join(gaps)}." if gaps else "."))
    proof_ms = [m for r in from_target for m in measured[r]]
    cited = [cell_source(proof_ms)]
    cited += [Source(UPSTREAM, f"{read.ref} ({read.url}): {read.state_text(dated=False)}", read.as_of)
              for read in evidence.reads if read.project == "sglang" and read.first_release == target]
    return Statement(text, tuple(cited), any(m.simulated for m in proof_ms), "upgrade")


def upgrade_flashinfer(release: str, arch: str, evidence: Evidence) -> Statement:
    public = measured_cells(evidence, FLASHINFER_CASE, arch, "flashinfer")
    op = measured_cells(evidence, FLASHINFER_OP_CASE, arch, "flashinfer")
    public_fixed = fixed_after_last_broken(public)
    op_fixed = fixed_after_last_broken(op)
    op_traced = [r for r in fixed_after_last_broken(op, traced=True) if not op_fixed or version_key(r) < version_key(op_fixed[0])]
    op_failing = [r for r, ms in op.items() if any(m.verdict == "traces-but-fails" for m in ms)]
    parts, used = [], []
    if public_fixed:
        parts.append(f"The public `flashinfer.fp4_quantize` is fixed in FlashInfer {public_fixed[0]}, measured "
                     f"({', '.join(public_fixed)}).")
        used += [m for r in public_fixed for m in public[r]]
    elif public:
        parts.append(f"No measured FlashInfer release makes the public `flashinfer.fp4_quantize` traceable "
                     f"({FLASHINFER_CASE} on {arch.upper()}, measured {', '.join(public)}).")
        used += [m for ms in public.values() for m in ms]
    if op_failing:
        parts.append(f"`torch.ops.flashinfer.fp4_quantize` traces but fails when run on {', '.join(op_failing)} "
                     f"({FLASHINFER_OP_CASE} traces-but-fails: the call path misbinds or raises with a caller's "
                     f"arguments): do not call it there.")
        used += [m for r in op_failing for m in op[r]]
    if op_traced:
        parts.append(f"On {', '.join(op_traced)} `torch.ops.flashinfer.fp4_quantize` traced, measured before the kit ran "
                     f"call paths: not shown to run, so not a release to switch to.")
        used += [m for r in op_traced for m in op[r]]
    if op_fixed:
        first = op_fixed[0]
        have = version_key(release) >= version_key(first)
        own = ("" if release in op_fixed or not have else
               f" Your release {release} is above it; its own call path was not run by the kit.")
        parts.append(("Your release's `torch.ops.flashinfer.fp4_quantize` is fixed there, measured" if release in op_fixed
                      else f"`torch.ops.flashinfer.fp4_quantize` is fixed in FlashInfer {first}, measured")
                     + f" ({FLASHINFER_OP_CASE}: traces and its call path ran on {', '.join(op_fixed)}): callers must "
                       f"switch to it" + ("." if have else f", so upgrade to {first} or later and call the op.") + own)
        used += [m for r in op_fixed for m in op[r]]
    if not parts:
        return Statement(f"No FlashInfer-level cell was measured on {arch.upper()}.", (table_source(evidence),),
                         False, "upgrade")
    sources = [cell_source(used)]
    sources += [Source(UPSTREAM, f"{read.ref} ({read.url}): {read.state_text(dated=False)}", read.as_of)
                for read in evidence.reads if read.project == "flashinfer" and read.kind == "pr" and read.first_release]
    return Statement(" ".join(parts), tuple(sources), any(m.simulated for m in used), "upgrade")


def call_path_state(evidence: Evidence, sglang: str | None, arch: str | None) -> tuple[bool | None, str]:
    """What the kit's matrix measured of this SGLang release's compiled call path on this arch family: True (`fixed`,
    its call path ran), False (it fails: traces-but-fails, reproduced, drifted), None (only traced, or not run as
    itself), with the words and cell that say so. Pure."""
    family = arch_family(arch)
    case = SGLANG_CASE_BY_ARCH.get(family or "")
    own = [m for m in evidence.measurements if case and m.case == case and m.arch == family and m.versions.sglang == sglang]
    if not own:
        return None, f"{case or 'the SGLang-level case'} not run as SGLang {sglang} on {(family or '?').upper()}"
    m = own[0]
    where = f"{case} {verdict_words(m)} in cell {m.cell} of {m.source}, {m.as_of}{', simulated' if m.simulated else ''}"
    if any(x.verdict in BROKEN for x in own):
        return False, where
    return (True, where) if any(x.works for x in own) else (None, where)


_NAMED_CALLS = 6  # the calls a certificate statement names; the certificate's Markdown lists them all


def certificate_statement(flashinfer: str, arch: str | None, evidence: Evidence) -> Statement | None:
    """What the release's trace-safety certificate says a user of it cannot compile: the public FlashInfer calls
    whose first trace under fullgraph=True breaks in a lazy JIT loader. None without a certificate of that
    release (for that arch family, when one is asked) or when its list is empty. Pure."""
    rows = sorted((u for u in evidence.unsafe_calls if u.flashinfer == flashinfer and (arch is None or u.arch == arch)),
                  key=lambda u: u.target)
    if not rows:
        return None
    first = rows[0]
    how = ("simulated " if first.simulated else "") + first.arch.upper()
    named = ", ".join(u.name for u in rows[:_NAMED_CALLS]) + (f" and {len(rows) - _NAMED_CALLS} more" if len(rows) > _NAMED_CALLS else "")
    text = (f"FlashInfer {flashinfer}'s trace-safety certificate ({how}, {first.created}) finds {len(rows)} public "
            f"calls not compile-safe on this release: under torch.compile(fullgraph=True) their first trace breaks "
            f"in a lazy JIT loader ({named}); `pcgkit triage` names the one in a crash log")
    sources = tuple(Source(MEASUREMENT, f"{src} (trace-safety certificate, {how})", first.created)
                    for src in dict.fromkeys(u.source for u in rows))
    return Statement(text, sources, any(u.simulated for u in rows), topic="compile-safety")


@dataclasses.dataclass(frozen=True)
class CompileSafety:
    """The certificate's word on one FlashInfer call: `headline` for a diagnosis line, `statement` with its sources."""

    call: str  # flashinfer.single_prefill_with_kv_cache
    headline: str  # "this FlashInfer call (...) is not compile-safe on this release (certificate of X, simulated SM120, date)"
    statement: Statement


def compile_unsafe(evidence: Evidence, calls: Iterable[str], flashinfer: str | None) -> CompileSafety | None:
    """"This FlashInfer call is not compile-safe on this release", from the certificates' JIT-loader sets. Pure.

    `calls`: a failure's FlashInfer frame names, outermost first; the first a certificate lists is the call. With
    the user's FlashInfer release known only its certificate speaks (else None); without it, every release that
    lists the call is named."""
    for name in dict.fromkeys(calls):
        found = sorted((u for u in evidence.unsafe_calls if u.name == name and (not flashinfer or u.flashinfer == flashinfer)),
                       key=lambda u: version_key(u.flashinfer))
        if not found:
            continue
        newest = found[-1]
        how = ("simulated " if newest.simulated else "") + newest.arch.upper()
        if flashinfer:
            headline = (f"this FlashInfer call ({newest.target}) is not compile-safe on this release "
                        f"(certificate of {newest.flashinfer}, {how}, {newest.created})")
        else:
            releases = ", ".join(u.flashinfer for u in found)
            headline = (f"this FlashInfer call ({newest.target}) is not compile-safe on FlashInfer {releases} "
                        f"(their certificates, {how}, {newest.created}; the log names no FlashInfer release)")
        text = (f"{headline}: its first trace under fullgraph=True broke in a lazy JIT loader ({newest.loader}) at "
                f"{newest.where}" + (f" on {newest.flashinfer}" if not flashinfer else ""))
        sources = tuple(Source(MEASUREMENT, f"{u.source} (trace-safety certificate, {'simulated ' if u.simulated else ''}"
                               f"{u.arch.upper()})", u.created) for u in found)
        return CompileSafety(newest.target, headline, Statement(text, sources, any(u.simulated for u in found),
                                                                 topic="compile-safety"))
    return None
