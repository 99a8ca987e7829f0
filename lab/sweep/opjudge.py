"""Registered ops judged as ops (the edge): does each trace as one opaque node under fullgraph, does
its fake exist and agree with the real op's output shapes and dtypes where the real op can run here,
and does torch.library.opcheck pass.

Inputs: an op has no spec of its own in general; the arguments it was called with inside a traced
public callable's graph are its inputs (`op_calls_in`: the FakeTensor metadata dynamo recorded on the
node, rebuilt as zero tensors), else a spec-table entry whose target is the op. Without either it
is `not judged: no inputs` for the trace/opcheck parts; its fake's presence is judged regardless.

Classes (OP_CLASSES), first that applies: fake-missing (no register_fake / abstract impl / Meta
kernel: dynamo cannot trace it as an opaque node), breaks (its fullgraph trace failed), fake-drift
(the fake's outputs differ from the real op's), opcheck-fails, opaque-op (one opaque node; its fake
EXECUTED here and agrees with the real op, or with the op on meta tensors, or nothing could run to compare:
`fake_ran`), not-judged (no inputs, or it traced but its fake did not execute here).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pcgkit.sweep.certificate import FAKE_DID_NOT_RUN, FAKE_RAN, fake_ran  # noqa: F401  (the reader owns the rule)

OP_CLASSES = ("opaque-op", "fake-missing", "fake-drift", "opcheck-fails", "breaks", "not-judged")


@dataclasses.dataclass(frozen=True)
class OpJudgement:
    qualname: str
    cls: str  # one of OP_CLASSES
    has_fake: bool
    inputs_from: str  # "graph of <callable>" | "spec <id>" | "" (none)
    traced_as_one_node: bool | None
    fake_vs_real: str  # "agrees" | "drift: ..." | "not run here: ..." | ""
    opcheck: dict  # test name -> status, or {} when not run
    note: str = ""
    device: str = "cpu"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _describe(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return {"tensor": list(value.shape), "dtype": str(value.dtype).removeprefix("torch."), "device": value.device.type}
    if isinstance(value, (list, tuple)):
        return [_describe(v) for v in value]
    if isinstance(value, torch.dtype):
        return {"dtype_value": str(value).removeprefix("torch.")}
    return value if isinstance(value, (bool, int, float, str, type(None))) else repr(value)


def op_calls_in(graphs, caller: str) -> dict[str, dict]:
    """qualname -> {"caller", "args"} for every custom-op node in the graphs (its example inputs)."""
    import torch

    from pcgkit.sweep.classify import TORCH_NAMESPACES

    calls: dict[str, dict] = {}
    for graph_module in graphs:
        for node in graph_module.graph.nodes:
            target = node.target
            if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
                continue
            name = target.name().split(".", 1)[0]
            if name.split("::", 1)[0] in TORCH_NAMESPACES or name in calls:
                continue
            example = lambda a: a.meta.get("example_value") if isinstance(a, torch.fx.Node) else a  # noqa: E731
            args = [_describe(example(a)) for a in node.args]
            kwargs = {k: _describe(example(v)) for k, v in node.kwargs.items()}
            calls[name] = {"caller": caller, "args": args, "kwargs": kwargs}
    return calls


def _materialize(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, dict) and "tensor" in value:
        dtype = getattr(torch, value["dtype"])
        return torch.zeros(value["tensor"], dtype=torch.float32, device=device).to(dtype)
    if isinstance(value, dict) and "dtype_value" in value:
        return getattr(torch, value["dtype_value"])
    if isinstance(value, list):
        return [_materialize(v, device) for v in value]
    return value


def _metadata(outputs: Any) -> Any:
    import torch

    if isinstance(outputs, torch.Tensor):
        return (tuple(outputs.shape), str(outputs.dtype))
    if isinstance(outputs, (list, tuple)):
        return tuple(_metadata(o) for o in outputs)
    return type(outputs).__name__


def _fake_vs_meta(packet, args: tuple, kwargs: dict, op, device: str) -> tuple[str, dict]:
    """Where no real kernel runs here: the op's fake (FakeTensorMode) against the op on meta tensors,
    and torch.library.opcheck's schema and fake-tensor tests on meta inputs."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    to_meta = lambda v: v.to("meta") if isinstance(v, torch.Tensor) else v  # noqa: E731
    try:
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            fake = _metadata(packet(*(mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args), **kwargs))
    except Exception as exc:  # noqa: BLE001 - the fake is the op author's code
        return f"fake raised {type(exc).__name__}: {str(exc)[:140]}", {}
    meta_args, meta_kwargs = tuple(to_meta(a) for a in args), {k: to_meta(v) for k, v in kwargs.items()}
    try:
        meta = _metadata(packet(*meta_args, **meta_kwargs))
    except Exception as exc:  # noqa: BLE001
        return (f"not run here: nothing ran on {device} (kernels: {', '.join(op.kernels) or 'none'}); on meta tensors"
                f" the op raised {type(exc).__name__}: {str(exc)[:100]}"), {}
    verdict = "agrees with meta" if meta == fake else f"drift: meta {meta}, fake {fake}"
    try:
        opcheck = {f"{k} (meta)": str(v) for k, v in torch.library.opcheck(
            packet.default, meta_args, meta_kwargs, test_utils=("test_schema", "test_faketensor")).items()}
    except Exception as exc:  # noqa: BLE001
        opcheck = {"opcheck (meta)": f"{type(exc).__name__}: {str(exc)[:160]}"}
    return verdict, opcheck


def judge_op(op, call: dict | None, device: str, can_run: bool) -> OpJudgement:
    """One op (a lab.sweep.discovery.RegisteredOp). `call`: its recorded inputs ({"caller", "args", "kwargs"}) or None; `can_run`: a real
    kernel for `device` exists (CPU host: a CPU or composite kernel; GPU host: CUDA)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from pcgkit.harness.tracing import trace
    from pcgkit.sweep.engine import graph_op_names

    namespace, _, name = op.qualname.partition("::")
    packet = getattr(getattr(torch.ops, namespace), name)
    if call is None:
        cls = "fake-missing" if not op.has_fake else "not-judged"
        return OpJudgement(op.qualname, cls, op.has_fake, "", None, "", {}, "no inputs: no traced callable reached it and no spec names it", device)
    args = tuple(_materialize(a, device) for a in call["args"])
    kwargs = {k: _materialize(v, device) for k, v in call["kwargs"].items()}
    graphs: list = []
    outcome = trace(lambda *a: packet(*a, **kwargs), args, fullgraph=True, execute=False, graphs=graphs)
    names = [n.split(".", 1)[0] for n in graph_op_names(graphs)] if outcome.traced else []
    one_node = outcome.traced and names.count(op.qualname) == 1
    fake_vs_real, note = "", ""
    opcheck: dict[str, str] = {}
    if op.has_fake and can_run:
        try:
            real = _metadata(packet(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - a composite kernel may still insist on a GPU
            real = None
            # the real op cannot run here: its fake is judged against the op on meta tensors instead
            fake_vs_real, opcheck = _fake_vs_meta(packet, args, kwargs, op, device)
            note = f"the real op raised on {device}: {type(exc).__name__}: {str(exc)[:100]}"
        if real is not None:
            with FakeTensorMode(allow_non_fake_inputs=True) as mode:
                fake = _metadata(packet(*(mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args), **kwargs))
            fake_vs_real = "agrees" if real == fake else f"drift: real {real}, fake {fake}"
            try:
                opcheck = {k: str(v) for k, v in torch.library.opcheck(packet.default, args, kwargs,
                           test_utils=("test_schema", "test_faketensor")).items()}
            except Exception as exc:  # noqa: BLE001
                opcheck = {"opcheck": f"{type(exc).__name__}: {str(exc)[:160]}"}
    elif op.has_fake:
        fake_vs_real, opcheck = _fake_vs_meta(packet, args, kwargs, op, device)
    if not op.has_fake:
        cls = "fake-missing"
    elif not outcome.traced and call["caller"].startswith("op schema") and fake_vs_real.startswith("fake raised"):
        # the kit's schema-derived inputs, refused by the op's own fake: nothing learnt about the op
        cls, note = "not-judged", f"the op's fake rejected the schema-derived inputs ({fake_vs_real[:160]})"
    elif not outcome.traced:
        cls, note = "breaks", outcome.signature.short() if outcome.signature else ""
    elif fake_vs_real.startswith("drift"):
        cls = "fake-drift"
    elif opcheck and any(v != "SUCCESS" for v in opcheck.values()):
        cls = "opcheck-fails"
    elif not fake_ran(fake_vs_real):
        cls, note = "not-judged", f"{FAKE_DID_NOT_RUN} ({fake_vs_real[:160] or 'not run'}): not counted opaque-op"
    else:
        cls = "opaque-op"
    return OpJudgement(op.qualname, cls, op.has_fake, f"graph of {call['caller']}", one_node, fake_vs_real, opcheck, note, device)
