"""The one answer (what it is for and who prints it: pcgkit.advice's docstring), computed once as a value. Pure.

Five questions, each answered by a short value and the Statement (with its sources and dates) behind it:
affected? (`state`, `affected`; with launch flags also `launch_state`, `launch`), what to pass? (`first_try`,
`turn_off`, `switch`, `runner`, `first_try_run`), what does it cost? (`cost`, `first_try_cost`, `table`), fixed
where? (`fixed_in`, `upgrade`), which call is safe? (`safe_call`). `check_input` names what is not known (a
release, an architecture, a flag) and where it would come from.
"""

from __future__ import annotations

import dataclasses

from pcgkit.advice import model as m
from pcgkit.advice.cost import COST_PAGE, CostTable
from pcgkit.advice.values import (
    MEASUREMENT,
    NOT_AFFECTED,
    PARSER,
    Evidence,
    Source,
    Statement,
    Versions,
)
from pcgkit.sglang import facts as sglang_facts
from pcgkit.sglang.releases import ReleaseFacts

SCHEMA = "pcgkit.advice/2"

class UnknownInput(ValueError):
    """A release, architecture or flag the model does not know: the message says which, and where it would come from."""


@dataclasses.dataclass(frozen=True)
class Answer:
    """The answer for one user's versions, architecture and launch flags; each short value backed by a Statement."""

    versions: Versions
    arch: str | None  # the architecture family answered for (sm120, sm90), None when not known
    case: str | None  # the case that matters to this user
    state: str  # affected? AFFECTED | NOT_AFFECTED | UNKNOWN, for the release as it starts by default
    affected: Statement
    upgrade: Statement | None = None  # fixed where: the upgrade that fixes it, measured
    switch: Statement | None = None  # what to pass: the release's own flags, read from its wheel
    cost: Statement | None = None  # what turning piecewise off costs, in one sentence (the table: COST_PAGE)
    certificate: Statement | None = None  # the FlashInfer release's certificate: its calls not compile-safe
    first_try: str | None = None  # the argv to pass first (keeps prefill graphs without torch.compile), or None
    turn_off: str | None = None  # the argv that turns the torch.compile piecewise graphs off, or None (nothing to)
    turn_on: str | None = None  # where they are opt-in: the argv that turns them on (not to pass), else None
    runner: Statement | None = None  # what the first try's runner serves on this release (0.5.11: one request only)
    first_try_cost: Statement | None = None  # the first try's measured cost, or on which release it was measured
    first_try_run: Statement | None = None  # what the first try did when launched on the lent GPU (hybrid), or not run
    fixed_in: str | None = None  # the first release measured fixed with its call path run (this user's axis)
    safe_call: Statement | None = None  # which FlashInfer call is compile-safe, and whether this release calls it
    launch: Statement | None = None  # what the given launch flags do on this release
    launch_state: str | None = None  # affected? for that launch
    table: CostTable | None = None  # the whole cost table (rendered once, on COST_PAGE)

    def statements(self) -> tuple[Statement, ...]:
        """All statements, in reading order."""
        return tuple(s for s in (self.affected, self.launch, self.switch, self.runner, self.first_try_run, self.cost,
                                 self.first_try_cost, self.upgrade, self.safe_call, self.certificate) if s)

    @property
    def simulated(self) -> bool:
        return any(s.simulated for s in self.statements())

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, "versions": self.versions.known(), "arch": self.arch, "case": self.case,
                "state": self.state, "launch_state": self.launch_state, "first_try": self.first_try,
                "turn_off": self.turn_off, "turn_on": self.turn_on, "fixed_in": self.fixed_in, "simulated": self.simulated,
                "statements": [s.to_dict() for s in self.statements()]}


def check_input(evidence: Evidence, versions: Versions, arch: str | None = None, flags: tuple[str, ...] = ()) -> None:
    """UnknownInput naming the first thing the model does not know and the source it would come from. Pure."""
    if arch is not None and m.arch_family(arch) not in {ms.arch for ms in evidence.measurements} | {"sm120"}:
        measured = ", ".join(sorted({ms.arch.upper() for ms in evidence.measurements}))
        raise UnknownInput(f"architecture {arch!r} is not known to the kit: its answers come from the matrix cells "
                           f"(fixtures/matrix_snapshot.json), measured on {measured} only")
    releases = [r.sglang for r in evidence.releases]
    if versions.sglang and versions.sglang not in releases:
        raise UnknownInput(f"SGLang {versions.sglang!r} is not a release the kit read: the release table "
                           f"({evidence.releases_source}) covers {m.release_range(evidence)}, each read from its wheel "
                           f"by `bin/pcgkit lab read-releases`")
    known_fi = {ms.versions.flashinfer for ms in evidence.measurements} | {u.flashinfer for u in evidence.unsafe_calls}
    if versions.flashinfer and versions.flashinfer not in known_fi and not versions.flashinfer[:1].isdigit():
        raise UnknownInput(f"FlashInfer {versions.flashinfer!r} is not a release: the kit's FlashInfer answers come "
                           f"from the matrix cells (fixtures/matrix_snapshot.json)")
    facts = m.find_release(evidence, versions.sglang)
    for flag in flags:
        name = flag.split("=", 1)[0]
        if name.startswith("--") and _graph_flag(name) and (facts is None or name not in _release_flags(facts)):
            where = (f"SGLang {versions.sglang}'s parser (read from its wheel, {evidence.releases_source})"
                     if facts else "the release table: give --sglang for the release the flag belongs to")
            raise UnknownInput(f"flag {name} is not known: it is not in {where}")


def _graph_flag(name: str) -> bool:
    """A flag about the prefill graphs' runner (the only flags the release table reads from each parser)."""
    return any(word in name for word in ("piecewise", "breakable", "cuda-graph-backend"))


def _release_flags(facts: ReleaseFacts) -> set[str]:
    f = facts.flags
    return {x.split(" ")[0].split("=")[0] for x in (*f.all_flags, f.breakable or "", f.disable or "", f.enable or "",
                                                     f.force or "") if x}


def _switch(facts: ReleaseFacts, state: str) -> tuple[str | None, str | None, Statement]:
    """(first try, turn off, the statement) from the release's own parser; nothing to try first where the release is
    measured not affected. Pure."""
    flags = facts.flags
    source = m.release_source(facts)
    on = flags.default_state == sglang_facts.ON_BY_DEFAULT
    first = flags.breakable if on and flags.breakable and state != NOT_AFFECTED else None
    off = flags.disable if on else None
    default, turn_off = sglang_facts.switch_wording(flags)
    if flags.default_state == sglang_facts.NOT_SHIPPED:
        text = f"SGLang {facts.sglang} has no torch.compile piecewise backend (read from its parser): nothing to pass."
    elif not on:
        text = f"On SGLang {facts.sglang} piecewise CUDA graphs are {default}: {turn_off}."
    elif state == NOT_AFFECTED:
        text = (f"On SGLang {facts.sglang} piecewise CUDA graphs are on by default and the release is measured not "
                f"affected: nothing to pass. To run without them anyway, pass `{off}`.")
    elif first:
        text = (f"On SGLang {facts.sglang} piecewise CUDA graphs are on by default. First try `{first}`: prefill CUDA "
                f"graphs are then captured by SGLang's breakable runner, without torch.compile, so this trace never "
                f"runs. The kit has not run it on SM120 or with NVFP4. To run without prefill graphs instead, pass "
                f"`{off}`.")
    else:
        text = (f"On SGLang {facts.sglang} piecewise CUDA graphs are on by default and its parser has no breakable "
                f"runner: pass `{off}` to run without them.")
    return first, off, Statement(text, (source,), False, "switch")


def _runner(facts: ReleaseFacts, first: str | None) -> Statement | None:
    """What the first try's runner serves on this release, read from its wheel (pcgkit.sglang.runners): 0.5.11's
    breakable runner refuses prefills of more than one request (`can_run`), which then run eagerly. Pure."""
    runners = facts.runners
    if first is None or runners is None or not runners.one_request_only:
        return None
    text = f"SGLang {facts.sglang}'s breakable runner: one-request prefills only (larger run eagerly)."
    return Statement(text, (Source(PARSER, f"{facts.wheel}: {runners.one_request_at}", facts.read_on),), False, "runner")


def cost_statement(evidence: Evidence) -> Statement | None:
    """The cost of turning piecewise off in one sentence (the worst case named, the table linked), or None. Pure."""
    table = evidence.cost_table
    if table is None:
        return None
    text = (f"Turning piecewise off: up to {table.worst} ({table.worst_case}; {table.where}); the whole table: "
            f"{COST_PAGE}.")
    return Statement(text, (Source(MEASUREMENT, table.source, table.date),), False, "cost")


def _first_try_run(evidence: Evidence, release: str, first: str | None) -> Statement | None:
    """What the first try did when the kit launched it on this very release (on SM90 a hybrid: at best past the point
    of the crash, never `fixed`), else that it was not run on this release. Pure."""
    if first is None:
        return None
    runs = [r for r in evidence.first_try_runs if r.tried == "breakable"]
    own = next((r for r in runs if r.sglang == release), None)
    if own is not None:
        did = ("got past the point of the crash; stopped next at an sm_120 kernel SM90 cannot run"
               if own.past_crash_point and "sm_120" in own.outcome else own.outcome)
        return Statement(f"First try on {release}, {own.label}: {did}.",
                         (Source(MEASUREMENT, own.source, own.date),), False, "first-try-run")
    if not runs:
        return None
    measured = ", ".join(dict.fromkeys(r.sglang for r in runs))
    return Statement(f"First try on {release}: not run by the kit (launched on {measured} only).",
                     tuple(Source(MEASUREMENT, r.source, r.date) for r in runs[:1]), False, "first-try-run")


def _worst(table: CostTable) -> str:
    """'up to 2 % slower (4 prompts of 2048 tokens at once)': the model named only where the table has several. Pure."""
    case = table.worst_case if len(table.models) > 1 else table.worst_case.rsplit(", ", 1)[0]
    return f"up to {table.worst.replace(' with the breakable runner', '')} ({case})"


def _first_try_cost(evidence: Evidence, release: str, first: str | None, runner: Statement | None) -> Statement | None:
    """The breakable runner's cost measured on this very release (the cost file's own release or its `by_release`
    entries), each other release measured on the same machine that day beside it, named as that release's; else on
    which release it was measured: never another release's figures as this one's. Pure."""
    if first is None:
        return None
    tables = [t for t in (evidence.breakable_table, *evidence.breakable_by_release) if t is not None]
    if not tables:
        return Statement("The breakable runner's cost was not measured by the kit.", (m.table_source(evidence),),
                         False, "first-try-cost")
    own = [t for t in tables if t.sglang == release]
    if own:
        beside = [t for t in tables if t.sglang != release and any((t.device, t.date) == (o.device, o.date) for o in own)]
        gpu = {t: t.device.split(" ")[0] for t in tables}  # "H100" (the sources name the whole device)
        text = ("The breakable runner against piecewise off: "
                + "; ".join(f"{release} ({gpu[t]}) {_worst(t)}" for t in own)
                + "".join(f"; {t.sglang} (same {gpu[t]}) {_worst(t)}" for t in beside) + ".")
        return Statement(text, tuple(Source(MEASUREMENT, t.source, t.date) for t in (*own, *beside)), False,
                         "first-try-cost")
    measured = ", ".join(dict.fromkeys(t.sglang for t in tables))
    text = (f"The breakable runner's cost: not measured on {release} (measured on {measured}"
            + (", whose runner serves multi-request prefills too)." if runner else ")."))
    return Statement(text, tuple(Source(MEASUREMENT, t.source, t.date) for t in tables), False, "first-try-cost")


def _fixed_in(evidence: Evidence, case: str | None, arch: str | None, axis: str) -> str | None:
    if not case or not arch:
        return None
    works = m.fixed_after_last_broken(m.measured_cells(evidence, case, arch, axis))
    return works[0] if works else None


def _safe_call(evidence: Evidence, release: str | None, arch: str) -> Statement | None:
    """Which FlashInfer call is compile-safe (its call path ran) and whether this SGLang release calls it. Pure."""
    op = m.measured_cells(evidence, m.FLASHINFER_OP_CASE, arch, "flashinfer")
    public = m.measured_cells(evidence, m.FLASHINFER_CASE, arch, "flashinfer")
    works = m.fixed_after_last_broken(op)
    failing = [r for r, ms in op.items() if any(x.verdict == "traces-but-fails" for x in ms)]
    if not op and not public:
        return None
    facts = m.find_release(evidence, release)
    calls = bool(facts and facts.calls_flashinfer_fp4_op)
    text = (f"`torch.ops.flashinfer.fp4_quantize` from FlashInfer {works[0]}"
            + (f" (fails when run on {failing[0]}-{failing[-1]})" if failing else "")
            if works else "no FlashInfer release measured has a compile-safe `fp4_quantize`")
    untraceable = (f" (untraceable on {list(public)[0]}-{list(public)[-1]})"
                   if public and not m.fixed_after_last_broken(public) else "")
    if release and facts is not None:
        text += (f"; SGLang {release} calls it." if calls else
                 f"; SGLang {release} quantizes through its own registered op (`flashinfer_fp4_quantize`), not "
                 f"FlashInfer's." if facts.registers_own_fp4_op else
                 f"; SGLang {release} calls the public `flashinfer.fp4_quantize`{untraceable}: upgrading FlashInfer "
                 f"alone does not help.")
    else:
        text += f"; not the public `flashinfer.fp4_quantize`{untraceable}."
    used = [x for ms in (*op.values(), *public.values()) for x in ms]
    sources = [m.cell_source(used)] + ([m.table_source(evidence)] if facts is not None else [])
    return Statement(text, tuple(sources), any(x.simulated for x in used), "safe-call")


def _launch(facts: ReleaseFacts, flags: tuple[str, ...], state: str, runner: Statement | None) -> tuple[str, Statement]:
    """What these launch flags do on this release, from its parser's flags. Pure."""
    f = facts.flags
    spelled = {x.replace(" ", "=") for x in (*flags, *(" ".join(p) for p in zip(flags, flags[1:])))}
    source = (m.release_source(facts),)
    off = f.disable and (f.disable in spelled or f.disable in flags)
    breakable = f.breakable and (f.breakable in spelled or f.breakable in flags)
    forced_on = any(x in flags for x in f.enable_argv if x.startswith("--")) and f.default_state != sglang_facts.ON_BY_DEFAULT
    if off:
        return NOT_AFFECTED, Statement(f"`{f.disable}`: SGLang {facts.sglang} captures no torch.compile piecewise "
                                       f"graphs, so this launch will not hit this bug.", source, False, "launch")
    if breakable:
        text = (f"`{f.breakable}`: SGLang {facts.sglang}'s breakable runner captures prefill graphs without "
                f"torch.compile, so this launch will not hit this bug.")
        return NOT_AFFECTED, Statement(text, source + (runner.sources if runner else ()), False, "launch")
    if f.default_state == sglang_facts.OPT_IN and not forced_on:
        return NOT_AFFECTED, Statement(f"SGLang {facts.sglang}'s piecewise graphs are opt-in and its flags do not turn "
                                       f"them on, so this launch will not hit this bug.", source, False, "launch")
    if f.default_state == sglang_facts.NOT_SHIPPED:
        return NOT_AFFECTED, Statement(f"SGLang {facts.sglang} has no torch.compile piecewise backend: this launch will "
                                       f"not hit this bug.", source, False, "launch")
    return state, Statement(f"its flags keep SGLang {facts.sglang}'s torch.compile piecewise graphs on, so the "
                            f"release's answer holds ({state}).", source, False, "launch")


def advise(versions: Versions, arch: str | None, evidence: Evidence, flags: tuple[str, ...] | None = None) -> Answer:
    """The answer for these versions on this architecture (and, given `flags`, this launch), each part with its
    sources. Pure; check_input() first where the input comes from a user."""
    family = m.arch_family(arch)
    who, axis, case = m.user_case(versions, family)
    release = getattr(versions, axis) if axis else None
    measured = m.measured_cells(evidence, case, family, axis) if (case and family and axis) else {}
    state, affected = m.affected(who, axis, case, release, family, measured, versions, evidence)
    certificate = m.certificate_statement(versions.flashinfer, family, evidence) if versions.flashinfer else None
    answer = Answer(versions, family, case, state, affected, certificate=certificate, table=evidence.cost_table,
                    fixed_in=_fixed_in(evidence, case, family, axis) if axis else None,
                    safe_call=_safe_call(evidence, versions.sglang, family or "sm120"))
    if axis == "flashinfer" and release and family:
        return dataclasses.replace(answer, upgrade=m.upgrade_flashinfer(release, family, evidence))
    facts = m.find_release(evidence, release) if axis == "sglang" else None
    if facts is None:
        return answer
    first, off, switch = _switch(facts, state)
    runner = _runner(facts, first)
    upgrade = (m.upgrade_sglang(facts.sglang, case, family, measured, evidence)
               if case and family and state != NOT_AFFECTED else None)
    launch = _launch(facts, tuple(flags), state, runner) if flags is not None else None
    return dataclasses.replace(
        answer, switch=switch, first_try=first, turn_off=off, runner=runner, upgrade=upgrade,
        turn_on=facts.flags.enable if facts.flags.default_state == sglang_facts.OPT_IN else None,
        cost=cost_statement(evidence) if off and state != NOT_AFFECTED else None,
        first_try_cost=_first_try_cost(evidence, facts.sglang, first, runner),
        first_try_run=_first_try_run(evidence, facts.sglang, first),
        launch=launch[1] if launch else None, launch_state=launch[0] if launch else None)


def every_release(evidence: Evidence, arch: str = "sm120") -> tuple[Answer, ...]:
    """The answer for every SGLang release in range on one architecture, oldest first. Pure."""
    return tuple(advise(Versions(sglang=r.sglang), arch, evidence) for r in evidence.releases)

