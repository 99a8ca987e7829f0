"""What an installed FlashInfer release offers a model's forward, as plain values. Pure.

The sweep used to judge a hand-written list of entry points; discovery enumerates instead, from
the installed package itself (lab.sweep.discover reads it; this module only holds the values):

- **public callables**: the package's exported names (`flashinfer.__all__` where the release
  declares one, else every public attribute of `flashinfer` that is a function or class defined
  inside flashinfer), and for exported classes the public methods a forward calls
  (FORWARD_METHODS: `run`, `forward`, `__call__`; `plan` and constructors are set-up, not forward);
- **registered ops**: every operator that importing flashinfer and its submodules added to torch's
  dispatcher (`torch.ops.flashinfer.*`, `torch.ops.trtllm.*`, ...), with its schema, whether it has
  a fake (register_fake / abstract impl) or Meta kernel, and which backends have a real kernel.

Judging needs inputs. Where the signature does not say enough (it never gives tensor shapes), the
inputs are data in the spec table (entry_points.toml); a callable with no spec is `not judged: no
inputs`, counted and listed, never left out (`plan_judgement`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

SCHEMA = "pcgkit.discovery/1"
FORWARD_METHODS = ("run", "forward", "__call__")
NOT_JUDGED_NO_INPUTS = "not judged: no inputs"
# Dispatcher namespaces that are torch's own: never counted as FlashInfer's registered ops.
# Importing flashinfer imports torch.distributed & co., which register these lazily: torch's, not FlashInfer's.
TORCH_OP_NAMESPACES = ("aten", "prims", "_quantized", "quantized", "profiler", "_c10d_functional", "c10d",
                       "c10d_functional", "_c10d_functional_autograd", "symm_mem", "_dtensor", "higher_order",
                       "inductor", "debugprims", "rngprims", "mkldnn", "onednn", "fbgemm", "_test", "streams", "onnx",
                       "onnx_symbolic", "fsdp", "_inductor_test", "flex_lib")


@dataclasses.dataclass(frozen=True)
class PublicCallable:
    target: str  # "flashinfer.rmsnorm", "flashinfer.BatchDecodeWithPagedKVCacheWrapper.run"
    kind: str  # "function" | "class" | "method"
    module: str  # where it is defined ("flashinfer.norm")
    signature: str | None  # inspect.signature text; None when it has none


@dataclasses.dataclass(frozen=True)
class RegisteredOp:
    qualname: str  # "flashinfer::fp4_quantize"
    schemas: tuple[str, ...]  # one per overload
    has_fake: bool  # register_fake / abstract impl, or a Meta kernel
    kernels: tuple[str, ...]  # dispatch keys with a real kernel ("CUDA", "CPU", "CompositeExplicitAutograd", ...)

    @property
    def target(self) -> str:
        namespace, _, name = self.qualname.partition("::")
        return f"torch.ops.{namespace}.{name}"

    @property
    def namespace(self) -> str:
        return self.qualname.partition("::")[0]


@dataclasses.dataclass(frozen=True)
class Discovery:
    flashinfer: str
    torch: str
    callables: tuple[PublicCallable, ...]
    ops: tuple[RegisteredOp, ...]
    exported_by: str  # "__all__" or "dir()": how the public names were read
    import_errors: tuple[tuple[str, str], ...] = ()  # (submodule, error) for submodules that did not import

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping) -> Discovery:
        if data.get("schema") != SCHEMA:
            raise ValueError(f"discovery schema is {data.get('schema')!r}, expected {SCHEMA!r}")
        return cls(
            flashinfer=data["flashinfer"], torch=data["torch"], exported_by=data["exported_by"],
            callables=tuple(PublicCallable(**c) for c in data["callables"]),
            ops=tuple(RegisteredOp(c["qualname"], tuple(c["schemas"]), c["has_fake"], tuple(c["kernels"])) for c in data["ops"]),
            import_errors=tuple((str(e[0]), str(e[1])) for e in data.get("import_errors", ())),
        )


@dataclasses.dataclass(frozen=True)
class Judgement:
    """For one discovered thing: which spec supplies its inputs, or why it is not judged."""

    target: str
    spec_id: str | None  # None: not judged
    reason: str = ""  # NOT_JUDGED_NO_INPUTS, or what else kept it out


def judgeable(callable_: PublicCallable) -> bool:
    """Classes themselves are not traced (their forward methods are); everything else is."""
    return callable_.kind != "class"


def plan_judgement(discovery: Discovery, spec_targets: Mapping[str, str]) -> tuple[Judgement, ...]:
    """Every judgeable callable and every registered op, each with its spec id or `not judged: no
    inputs`. `spec_targets` maps a spec's target to its id (specs that apply to this release). Pure."""
    plan = []
    targets = [c.target for c in discovery.callables if judgeable(c)] + [op.target for op in discovery.ops]
    for target in targets:
        spec_id = spec_targets.get(target)
        plan.append(Judgement(target, spec_id, "" if spec_id else NOT_JUDGED_NO_INPUTS))
    return tuple(plan)


def counts(discovery: Discovery, plan: Sequence[Judgement]) -> dict[str, int]:
    """The discovery counts the command prints and the docs state. Pure."""
    op_targets = {op.target for op in discovery.ops}
    judged_ops = sum(1 for j in plan if j.target in op_targets and j.spec_id)
    judged_callables = sum(1 for j in plan if j.target not in op_targets and j.spec_id)
    callables = sum(1 for c in discovery.callables if judgeable(c))
    return {
        "public callables": callables,
        "exported classes": sum(1 for c in discovery.callables if c.kind == "class"),
        "registered ops": len(discovery.ops),
        "ops with a fake": sum(1 for op in discovery.ops if op.has_fake),
        "callables judged": judged_callables,
        "callables not judged (no inputs)": callables - judged_callables,
        "ops judged with inputs": judged_ops,
        "ops not judged with inputs (no inputs)": len(discovery.ops) - judged_ops,
        # walk_packages may report a package twice (its own import, then ours): count submodules once
        "submodules that did not import": len({name for name, _ in discovery.import_errors if not name.startswith("op ")}),
    }


def render_counts(discovery: Discovery, plan: Sequence[Judgement]) -> str:
    lines = [f"flashinfer {discovery.flashinfer} (torch {discovery.torch}); public names read from {discovery.exported_by}"]
    lines += [f"  {name}: {n}" for name, n in counts(discovery, plan).items()]
    namespaces: dict[str, int] = {}
    for op in discovery.ops:
        namespaces[op.namespace] = namespaces.get(op.namespace, 0) + 1
    if namespaces:
        lines.append("  ops per namespace: " + ", ".join(f"{ns} {n}" for ns, n in sorted(namespaces.items())))
    return "\n".join(lines)


def spec_targets_for(specs: Iterable, flashinfer_version: str) -> dict[str, str]:
    """target -> spec id for the specs that apply to this release (first wins). Pure."""
    out: dict[str, str] = {}
    for spec in specs:
        if spec.applies_to(flashinfer_version):
            out.setdefault(spec.target, spec.id)
    return out
