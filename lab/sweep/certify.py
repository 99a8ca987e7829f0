"""Build one trace-safety certificate (pcgkit.sweep.certificate) for the installed FlashInfer: the edge.

discover (every public callable and registered op) -> for each callable with a spec: unroll its
whole stack under fullgraph=True (lab.sweep.unroll; its first trace is the sweep's own) -> for
each registered op: judge it as an op (lab.sweep.opjudge) with the inputs a traced callable
handed it, or a spec's -> rows. A callable without a spec is a `not-judged` row saying so.
"""

from __future__ import annotations

import datetime as _dt
import functools
import time
from collections.abc import Callable, Sequence

from lab.sweep.certificate_build import jit_loader_breaks, judged_status, scrub
from lab.sweep.coverage import coverage
from lab.sweep.discovery import NOT_JUDGED_NO_INPUTS, counts, judgeable, plan_judgement, spec_targets_for
from lab.sweep.imports import import_reasons
from lab.sweep.unroll_rules import MAX_ROUNDS
from pcgkit.harness.casekit import CaseTimeout, deadline
from pcgkit.sweep.certificate import SCHEMA

# A judged op's class -> its certificate status.
_OP_CLASS_STATUS = {"opaque-op": "opaque-op", "fake-missing": "fake-missing", "fake-drift": "fake-drift",
                    "opcheck-fails": "fake-drift", "breaks": "breaks", "not-judged": "not-judged"}


def op_status(op_class: str) -> str:
    return _OP_CLASS_STATUS[op_class]


CALLABLE_DEADLINE_S = 600.0
OP_DEADLINE_S = 300.0  # the real op's first call may JIT-build its module  # every round of one callable's unroll together (a GPU pre-build JIT-builds)
COMPOSITE_KEYS = ("CompositeExplicitAutograd", "CompositeImplicitAutograd")
UNROLL_BUDGET_S = 120.0  # the full certificate must stay under 10 minutes on 2 cores (issue 39)


def _not_judged(target: str, kind: str, reason: str) -> dict:
    return {"target": target, "kind": kind, "status": "not-judged", "spec": None, "where": reason, "sites": []}


def judged_or_missing(judge: Callable[[], dict], target: str, kind: str) -> dict:
    """`judge()`'s row, or -- when the spec's target does not resolve in the installed release (a spec scoped wider
    than the release exports) -- a `not-judged` row that says so: one bad spec never stops the certificate."""
    from pcgkit.sweep.engine import MissingTarget

    try:
        return judge()
    except (MissingTarget, ImportError) as exc:
        return _not_judged(target, kind, f"not judged: the spec's target does not resolve in this release ({exc})")


def judge_callable(spec, kind: str, arch: str, device, versions, real: bool, op_calls: dict,
                   max_rounds: int = MAX_ROUNDS, inputs_from: str = "hand spec") -> dict:
    """Unroll the callable's stack, then run it on fake tensors (lab.sweep.fakerun): one row. Simulated, a
    callable whose release refused CPU inputs ("x must be a CUDA tensor") is judged again with its inputs on the
    simulated cuda:0 (lab.sweep.fakecuda); the row says so (`inputs_device`), and keeps the first reason."""
    from lab.sweep.fakecuda import INPUTS_DEVICE, refused_cpu_inputs

    row = _judge_once(spec, kind, arch, device, versions, real, op_calls, max_rounds, inputs_from)
    if real or row["status"] != "not-judged" or not refused_cpu_inputs(row.get("where", "")):
        return row
    again = _judge_once(spec, kind, arch, device, versions, real, op_calls, max_rounds, inputs_from, fake_cuda=True)
    if again["status"] == "not-judged":
        return {**row, "on_fake_cuda": again.get("where", "")}
    return {**again, "inputs_device": INPUTS_DEVICE, "on_cpu_inputs": row.get("where", "")}


def _judge_once(spec, kind: str, arch: str, device, versions, real: bool, op_calls: dict,
                max_rounds: int, inputs_from: str, fake_cuda: bool = False) -> dict:
    from lab.sweep.fakerun import run_fake
    from lab.sweep.opjudge import op_calls_in
    from lab.sweep.unroll import unroll_spec
    from pcgkit.sweep.engine import SetupFailed
    from pcgkit.sweep.inputs import InputBuildError

    graphs: list = []
    start = time.perf_counter()
    try:
        with deadline(CALLABLE_DEADLINE_S):
            unrolled = unroll_spec(spec, arch, device, versions, real=real, graphs=graphs, max_rounds=max_rounds,
                                   fake_cuda=fake_cuda)
    except SetupFailed as exc:
        return {**_not_judged(spec.target, kind, f"set-up: {exc}"), "spec": spec.id, "inputs_from": inputs_from}
    except (InputBuildError, TypeError, ValueError, AttributeError, RuntimeError, CaseTimeout) as exc:
        return {**_not_judged(spec.target, kind, f"kit could not build the call: {type(exc).__name__}: {str(exc)[:160]}"),
                "spec": spec.id, "inputs_from": inputs_from}
    run = run_fake(spec, device, real=real, fake_cuda=fake_cuda)
    sites = [s.__dict__ for s in unrolled.sites]
    base = {"target": spec.target, "kind": kind, "spec": spec.id, "inputs_from": inputs_from, "sites": sites,
            "run": run.to_dict(), "first_class": unrolled.first_class, "loader": unrolled.first_loader,
            "unroll_capped": unrolled.rounds_capped, "seconds": round(time.perf_counter() - start, 1)}
    if unrolled.setup_simulated:
        base["setup_simulated"] = list(unrolled.setup_simulated)
    status, where = judged_status(unrolled.first_class, unrolled.final_where if sites else unrolled.final_class,
                                  run.runs, run.error_type, run.error, (sites[0].get("graph_break_id") or "") if sites else "")
    if status == "not-judged":
        return {**base, "status": status, "where": where, "sites": sites}
    if unrolled.traces_after:
        for qualname, call in op_calls_in(graphs, spec.target).items():
            op_calls.setdefault(qualname, call)
    return {**base, "status": status, "where": where,
            "after_patches": "traces" if unrolled.traces_after else unrolled.final_class}


def _spec_call(spec) -> dict:
    """A spec's arguments in op_calls' form (for an op whose inputs a spec gives)."""
    from lab.sweep.opjudge import _describe
    from pcgkit.sweep.inputs import build_call

    args, kwargs = build_call(spec.call, "cpu")
    return {"caller": f"spec {spec.id}", "args": [_describe(a) for a in args], "kwargs": {k: _describe(v) for k, v in kwargs.items()}}


def op_inputs_from(certificate: dict) -> dict[str, dict]:
    """qualname -> the inputs an earlier certificate (e.g. the CPU one) judged that op with."""
    return {row["qualname"]: row["call"] for row in certificate.get("ops", ()) if row.get("call")}


def _requires() -> list[str]:
    from importlib import metadata

    try:
        return list(metadata.requires("flashinfer-python") or ())
    except metadata.PackageNotFoundError:
        return []


def derived_specs(inputs: dict | None, flashinfer_version: str) -> tuple[dict, dict[str, str]]:
    """(target -> EntrySpec built from the derived inputs file, target -> why none was derived)."""
    from packaging.specifiers import SpecifierSet

    from pcgkit.sweep.specs import EntrySpec, parse_call

    specs, reasons = {}, {}
    for target, entry in ((inputs or {}).get("callables") or {}).items():
        if "reason" in entry:
            reasons[target] = f"not judged: no inputs ({entry['reason']})"
            continue
        call = parse_call({"args": entry["args"], "kwargs": entry["kwargs"]}, where=f"derived {target}")
        # A wrapper method from the release's trace template (lab.sweep.inputs_build.template_inputs) has its
        # instance's constructor and plan() calls too.
        construct, plan = (parse_call(entry[k], where=f"derived {target}.{k}") if k in entry else None
                           for k in ("construct", "plan"))
        specs[target] = EntrySpec(f"derived:{target.removeprefix('flashinfer.')}", target, "derived",
                                  SpecifierSet(f"=={flashinfer_version}"), call, construct=construct, plan=plan)
    return specs, reasons


def _python_annotations(qualname: str) -> dict[str, str]:
    """The annotations of the Python function a torch.library.custom_op was made from (its Literal choices)."""
    import inspect

    from torch._library.custom_ops import OPDEFS

    fn = getattr(OPDEFS.get(qualname), "_init_fn", None)
    try:
        parameters = inspect.signature(fn).parameters if fn is not None else {}
    except (TypeError, ValueError):
        return {}
    return {name: inspect.formatannotation(p.annotation) for name, p in parameters.items()
            if p.annotation is not inspect.Parameter.empty}


def op_call_from_schema(op, dims, read: dict | None = None) -> tuple[dict | None, str]:
    """An op's inputs derived from its schema (lab.sweep.derive.derive_op_call), in op_calls' form.
    `read`: the inputs file's entry for the op (lab.sweep.inputs_build.op_str_values): its `str` values,
    each named by the release's code at a file:line that the call keeps (`str_values`)."""
    from lab.sweep.derive import RELEASE_CODE, derive_op_call
    from lab.sweep.opjudge import _describe
    from pcgkit.sweep.inputs import build_call
    from pcgkit.sweep.specs import parse_call

    read = read or {}
    read_values = read.get("str_values") or {}
    str_values = {name: entry["value"] for name, entry in read_values.items()}
    derived = derive_op_call(op.schemas[0], dims, _python_annotations(op.qualname), str_values) if op.schemas else None
    if derived is None or not derived.ok:
        reason = derived.reason if derived else "no schema"
        return None, f"{reason} ({read['reason']})" if derived and read.get("reason") else reason
    args, kwargs = build_call(parse_call({"args": list(derived.args), "kwargs": dict(derived.kwargs)}, where=op.qualname))
    used = {name: read_values[name] for name, source in derived.sources if source == RELEASE_CODE}
    caller = "op schema (types; tensor shapes: kit default" + ("; str: release code)" if used else ")")
    return ({"caller": caller, "args": [_describe(a) for a in args],
             "kwargs": {k: _describe(v) for k, v in kwargs.items()}, "sources": dict(derived.sources),
             **({"str_values": used} if used else {})}, "")


def judge_ops(found_ops, by_target: dict, op_calls: dict[str, dict], op_inputs: dict[str, dict], inputs: dict | None,
              only: Sequence[str], real: bool) -> list[dict]:
    """Every registered op judged as an op (lab.sweep.opjudge), on the first inputs it has: those a traced callable's
    graph recorded, a hand spec's, an earlier certificate's (`op_inputs`), else derived from its schema."""
    from lab.sweep.derive import KIT, Dim, load_kit_dims
    from lab.sweep.opjudge import OpJudgement, judge_op

    ops = []
    dims = ({n: Dim(d["value"], d["source"], d["from"]) for n, d in inputs["dims"].items()} if inputs and inputs.get("dims")
            else {n: Dim(v, KIT, "pcgkit/sweep/dims.toml") for n, v in load_kit_dims().items()})
    for op in found_ops:
        spec = by_target.get(op.target)
        call = op_calls.get(op.qualname) or (_spec_call(spec) if spec else None) or op_inputs.get(op.qualname)
        schema_reason = ""
        if call is None and not (only and op.target not in only):
            call, schema_reason = op_call_from_schema(op, dims, ((inputs or {}).get("ops") or {}).get(op.qualname))
        # A custom_op without device types has a composite kernel: it may run on either (or raise: said so).
        can_run = any(k in op.kernels for k in ("CUDA" if real else "CPU", *COMPOSITE_KEYS))
        try:
            with deadline(OP_DEADLINE_S):
                judged = judge_op(op, call, "cuda:0" if real else "cpu", can_run)
        except CaseTimeout as exc:
            judged = OpJudgement(op.qualname, "not-judged", op.has_fake, "", None, "", {}, f"kit: {exc}")
        row = {"target": op.target, "kind": "op", "status": op_status(judged.cls), "schemas": list(op.schemas),
               "kernels": list(op.kernels), "call": call, **judged.to_dict()}
        if schema_reason and call is None:
            row["note"] = f"no inputs: {schema_reason}"
        ops.append(row)
    return ops


def certify(arch: str, device, real: bool = False, only: Sequence[str] = (), ops_only: bool = False,
            op_inputs: dict[str, dict] | None = None, inputs: dict | None = None,
            unroll_budget_s: float = UNROLL_BUDGET_S) -> dict:
    """The certificate of the installed release on `arch` (simulated on CPU, or the real GPU).
    `ops_only`: judge the registered ops alone (the GPU run: no callable's JIT module is built);
    `op_inputs`: inputs for ops from an earlier certificate (op_inputs_from), used where this run
    recorded none; `inputs`: the release's derived inputs (written by lab.sweep.inputs_build), used where
    no hand spec applies; `unroll_budget_s`: once the callables took this long, each later one is
    traced once (its first site) and its row says the unroll was capped."""
    from lab.sweep.discover import discover
    from lab.sweep.template_calls import TEMPLATE
    from pcgkit.sweep.specs import load_specs

    start = time.perf_counter()
    found = discover()
    versions = (found.flashinfer, found.torch)
    specs = [s for s in load_specs() if s.applies_to(found.flashinfer)]
    by_target = {s.target: s for s in specs}
    derived, underived = derived_specs(inputs, found.flashinfer)
    plan = plan_judgement(found, spec_targets_for(specs, found.flashinfer))
    op_targets = {op.target for op in found.ops}
    callable_targets = [c.target for c in found.callables if judgeable(c)]
    # Specs for things discovery does not export (a submodule's function): judged too, labelled so.
    extra = [s.target for s in specs if s.target not in set(callable_targets) | op_targets]
    rows: list[dict] = []
    op_calls: dict[str, dict] = {}
    callables_start = time.perf_counter()
    order = [] if ops_only else callable_targets + extra
    # Hand-specced callables first: they carry the public expectations, so their stacks are unrolled in
    # full before the time budget caps the rest at their first site; rows keep discovery's order.
    # A wrapper method the release's own trace template gives inputs for is judged on those, not on its hand
    # spec (kept for the releases without templates: 0.6.x).
    templated = {t for t, e in ((inputs or {}).get("callables") or {}).items() if e.get("source") == TEMPLATE and t in derived}
    by_target = {t: s for t, s in by_target.items() if t not in templated}
    judge_order = sorted(order, key=lambda t: by_target.get(t) is None)
    for target in judge_order:
        kind = "callable" if target in callable_targets else "spec only (not exported)"
        spec = by_target.get(target)
        if only and target not in only and not (spec and spec.id in only):
            continue
        rounds = MAX_ROUNDS if time.perf_counter() - callables_start < unroll_budget_s else 1
        if spec is not None:
            judge = functools.partial(judge_callable, spec, kind, arch, device, versions, real, op_calls, rounds, "hand spec")
            rows.append(judged_or_missing(judge, target, kind))
        elif target in derived:
            entry = (inputs or {})["callables"][target]
            row = judge_callable(derived[target], kind, arch, device, versions, real, op_calls, rounds, entry["source"])
            row["inputs"] = {k: entry[k] for k in ("args", "kwargs", "sources", "sized_by", "upstream_call", "construct", "plan",
                                                   "template") if k in entry}
            rows.append(row)
        else:
            rows.append(_not_judged(target, kind, underived.get(target, NOT_JUDGED_NO_INPUTS)))
    rank = {target: i for i, target in enumerate(order)}
    rows.sort(key=lambda row: rank[row["target"]])
    ops = judge_ops(found.ops, by_target, op_calls, op_inputs or {}, inputs, only, real)
    callables_rows = rows
    return scrub({
        "schema": SCHEMA, "flashinfer": found.flashinfer, "torch": found.torch, "arch": arch,
        "scope": "ops" if ops_only else "all",
        "simulated": not real, "device": f"real: {device.label}" if real else f"simulated {arch} on CPU",
        "created": _dt.date.today().isoformat(), "wall_s": round(time.perf_counter() - start, 1),
        # discovery's counts, less its hand-spec-only "judged" lines: coverage says what was judged
        "counts": {k: v for k, v in counts(found, plan).items() if "judged" not in k},
        "coverage": coverage(callables_rows, ops),
        "inputs": {k: (inputs or {}).get(k) for k in ("upstream_tests", "created")} if inputs else None,
        "unroll_budget_s": unroll_budget_s,
        "jit_loader_breaks": jit_loader_breaks(callables_rows),
        "exported_by": found.exported_by,
        "import_errors": [list(e) for e in found.import_errors],
        "import_reasons": import_reasons(found.import_errors, _requires()),
        "callables": callables_rows, "ops": ops,
    })
