"""Build one trace-safety certificate (pcgkit.sweep.certificate) for the installed FlashInfer: the edge.

discover (every public callable and registered op) -> for each callable with a spec: unroll its
whole stack under fullgraph=True (pcgkit.sweep.unroll; its first trace is the sweep's own) -> for
each registered op: judge it as an op (pcgkit.sweep.opjudge) with the inputs a traced callable
handed it, or a spec's -> rows. A callable without a spec is a `not-judged` row saying so.
"""

from __future__ import annotations

import datetime as _dt
import time
from collections.abc import Sequence

from pcgkit.harness.casekit import CaseTimeout, deadline
from pcgkit.sweep.certificate import SCHEMA, callable_status, op_status, scrub
from pcgkit.sweep.discovery import NOT_JUDGED_NO_INPUTS, counts, judgeable, plan_judgement, spec_targets_for

CALLABLE_DEADLINE_S = 600.0
OP_DEADLINE_S = 300.0  # the real op's first call may JIT-build its module  # every round of one callable's unroll together (a GPU pre-build JIT-builds)
COMPOSITE_KEYS = ("CompositeExplicitAutograd", "CompositeImplicitAutograd")


def _not_judged(target: str, kind: str, reason: str) -> dict:
    return {"target": target, "kind": kind, "status": "not-judged", "spec": None, "where": reason, "sites": []}


def judge_callable(spec, kind: str, arch: str, device, versions, real: bool, op_calls: dict) -> dict:
    from pcgkit.sweep.engine import _StageFailed
    from pcgkit.sweep.inputs import InputBuildError
    from pcgkit.sweep.opjudge import op_calls_in
    from pcgkit.sweep.unroll import unroll_spec

    graphs: list = []
    try:
        with deadline(CALLABLE_DEADLINE_S):
            unrolled = unroll_spec(spec, arch, device, versions, real=real, graphs=graphs)
    except _StageFailed as exc:
        return _not_judged(spec.target, kind, f"set-up: {exc}")
    except (InputBuildError, TypeError, ValueError, AttributeError, RuntimeError, CaseTimeout) as exc:
        return _not_judged(spec.target, kind, f"kit could not build the call: {type(exc).__name__}: {str(exc)[:160]}")
    sites = [s.__dict__ for s in unrolled.sites]
    if unrolled.final_class == "error":  # a simulation gap (no CUDA driver here): not a statement about tracing
        return {**_not_judged(spec.target, kind, unrolled.final_where), "spec": spec.id, "sites": sites}
    first = unrolled.final_class if not sites else "breaks-elsewhere"
    if unrolled.traces_after:
        for qualname, call in op_calls_in(graphs, spec.target).items():
            op_calls.setdefault(qualname, call)
    return {"target": spec.target, "kind": kind, "status": callable_status(first), "spec": spec.id,
            "where": unrolled.final_where if sites else unrolled.final_class, "sites": sites,
            "after_patches": "traces" if unrolled.traces_after else unrolled.final_class}


def _spec_call(spec) -> dict:
    """A spec's arguments in op_calls' form (for an op whose inputs a spec gives)."""
    from pcgkit.sweep.inputs import build_call
    from pcgkit.sweep.opjudge import _describe

    args, kwargs = build_call(spec.call, "cpu")
    return {"caller": f"spec {spec.id}", "args": [_describe(a) for a in args], "kwargs": {k: _describe(v) for k, v in kwargs.items()}}


def op_inputs_from(certificate: dict) -> dict[str, dict]:
    """qualname -> the inputs an earlier certificate (e.g. the CPU one) judged that op with."""
    return {row["qualname"]: row["call"] for row in certificate.get("ops", ()) if row.get("call")}


def certify(arch: str, device, real: bool = False, only: Sequence[str] = (), ops_only: bool = False,
            op_inputs: dict[str, dict] | None = None) -> dict:
    """The certificate of the installed release on `arch` (simulated on CPU, or the real GPU).
    `ops_only`: judge the registered ops alone (the GPU run: no callable's JIT module is built);
    `op_inputs`: inputs for ops from an earlier certificate (op_inputs_from), used where this run
    recorded none."""
    from pcgkit.sweep.discover import discover
    from pcgkit.sweep.opjudge import OpJudgement, judge_op
    from pcgkit.sweep.specs import load_specs

    start = time.perf_counter()
    found = discover()
    versions = (found.flashinfer, found.torch)
    specs = [s for s in load_specs() if s.applies_to(found.flashinfer)]
    by_target = {s.target: s for s in specs}
    plan = plan_judgement(found, spec_targets_for(specs, found.flashinfer))
    op_targets = {op.target for op in found.ops}
    callable_targets = [c.target for c in found.callables if judgeable(c)]
    # Specs for things discovery does not export (a submodule's function): judged too, labelled so.
    extra = [s.target for s in specs if s.target not in set(callable_targets) | op_targets]
    rows: list[dict] = []
    op_calls: dict[str, dict] = {}
    for target in () if ops_only else callable_targets + extra:
        kind = "callable" if target in callable_targets else "spec only (not exported)"
        if only and target not in only and by_target.get(target) and by_target[target].id not in only:
            continue
        spec = by_target.get(target)
        rows.append(judge_callable(spec, kind, arch, device, versions, real, op_calls) if spec
                    else _not_judged(target, kind, NOT_JUDGED_NO_INPUTS))
    ops = []
    for op in found.ops:
        spec = by_target.get(op.target)
        call = op_calls.get(op.qualname) or (_spec_call(spec) if spec else None) or (op_inputs or {}).get(op.qualname)
        # A custom_op without device types has a composite kernel: it may run on either (or raise: said so).
        can_run = any(k in op.kernels for k in ("CUDA" if real else "CPU", *COMPOSITE_KEYS))
        try:
            with deadline(OP_DEADLINE_S):
                judged = judge_op(op, call, "cuda:0" if real else "cpu", can_run)
        except CaseTimeout as exc:
            judged = OpJudgement(op.qualname, "not-judged", op.has_fake, "", None, "", {}, f"kit: {exc}")
        ops.append({"target": op.target, "kind": "op", "status": op_status(judged.cls), "schemas": list(op.schemas),
                    "kernels": list(op.kernels), "call": call, **judged.to_dict()})
    return scrub({
        "schema": SCHEMA, "flashinfer": found.flashinfer, "torch": found.torch, "arch": arch,
        "scope": "ops" if ops_only else "all",
        "simulated": not real, "device": f"real: {device.label}" if real else f"simulated {arch} on CPU",
        "created": _dt.date.today().isoformat(), "wall_s": round(time.perf_counter() - start, 1),
        "counts": counts(found, plan), "exported_by": found.exported_by,
        "import_errors": [list(e) for e in found.import_errors],
        "callables": rows, "ops": ops,
    })
