"""The sweep's spec table (pcgkit/sweep/entry_points.toml) as typed values: entry points, argument kinds, release
ranges. Pure. An argument is data, never code: "bf16[4,64]=ones" is a TensorArg, "dtype:bf16" a DtypeArg, and so
on; pcgkit.sweep.inputs materializes them."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Mapping

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from pcgkit import resources

SCHEMA = "pcgkit.sweep-specs/1"
SPEC_FILE = "entry_points.toml"
FAMILIES = ("norm", "activation", "rope", "sampling", "attention", "cascade", "page", "quant", "gemm", "moe", "torch-op")
DTYPES = ("bf16", "f16", "f32", "i8", "u8", "i32", "u32", "i64", "bool", "fp8e4m3", "fp8e5m2", "e8m0")
INITS = ("zeros", "ones", "randn", "arange", "probs")

# "bf16[1,4,3072]@73728,18432,1=randn": an optional stride per dim after "@" (a view into a larger storage, as
# WAN's temb.chunk(6, dim=2) gives the fused DiT norms); the storage holds exactly what the strides reach.
_TENSOR_RE = re.compile(r"^(?P<dtype>[a-z0-9]+)\[(?P<shape>[0-9, ]*)\](?:@(?P<stride>[0-9, ]+))?(?:=(?P<init>.+))?$")


class SpecError(ValueError):
    """The spec table is malformed (a kit defect, reported with the entry id)."""


@dataclasses.dataclass(frozen=True)
class TensorArg:
    dtype: str
    shape: tuple[int, ...]
    init: str = "zeros"  # one of INITS
    values: tuple[float, ...] = ()  # literal values ("i32[2]=0,4"), row-major
    stride: tuple[int, ...] = ()  # () contiguous; else one stride per dim ("bf16[1,4,64]@1536,384,1")


@dataclasses.dataclass(frozen=True)
class DtypeArg:
    dtype: str


@dataclasses.dataclass(frozen=True)
class NoneArg:
    pass


@dataclasses.dataclass(frozen=True)
class SequenceArg:
    items: tuple[Arg, ...]
    as_list: bool = False  # False: a tuple


Arg = Any  # TensorArg | DtypeArg | NoneArg | SequenceArg | bool | int | float | str


@dataclasses.dataclass(frozen=True)
class Call:
    args: tuple[Arg, ...] = ()
    kwargs: tuple[tuple[str, Arg], ...] = ()


@dataclasses.dataclass(frozen=True)
class Expectation:
    releases: SpecifierSet
    behaviour: str
    link: str
    note: str = ""


@dataclasses.dataclass(frozen=True)
class EntrySpec:
    id: str
    target: str  # dotted path: "flashinfer.rmsnorm", "flashinfer.Class.method", "torch.ops.flashinfer.op"
    family: str
    releases: SpecifierSet
    call: Call
    construct: Call | None = None  # methods: how to build the instance
    plan: Call | None = None  # wrappers: wrapper.plan(...) before run()
    plan_method: str = "plan"  # the set-up method `plan` calls (the shared-prefix wrappers have only begin_forward)
    expectations: tuple[Expectation, ...] = ()

    def applies_to(self, flashinfer_version: str) -> bool:
        return self.releases.contains(Version(flashinfer_version), prereleases=True)

    def expectation_for(self, flashinfer_version: str) -> Expectation | None:
        version = Version(flashinfer_version)
        return next((e for e in self.expectations if e.releases.contains(version, prereleases=True)), None)


def parse_tensor(text: str) -> TensorArg:
    match = _TENSOR_RE.match(text.strip())
    if not match:
        raise SpecError(f"not a tensor kind: {text!r} (want dtype[d0,d1,...] with optional =init)")
    dtype = match["dtype"]
    if dtype not in DTYPES:
        raise SpecError(f"unknown dtype {dtype!r} in {text!r} (known: {', '.join(DTYPES)})")
    shape = tuple(int(d) for d in match["shape"].replace(" ", "").split(",") if d)
    init = match["init"] or "zeros"
    stride = tuple(int(d) for d in (match["stride"] or "").replace(" ", "").split(",") if d)
    if stride and (len(stride) != len(shape) or init not in ("zeros", "ones", "randn")):
        raise SpecError(f"{text!r}: a stride per dim ({len(shape)}), with zeros, ones or randn")
    if init in INITS:
        return TensorArg(dtype, shape, init, stride=stride)
    try:
        values = tuple(float(v) for v in init.split(","))
    except ValueError:
        raise SpecError(f"unknown init {init!r} in {text!r} (known: {', '.join(INITS)}, or literal values)") from None
    count = math.prod(shape)
    if len(values) != count:
        raise SpecError(f"{text!r}: {len(values)} literal values for {count} elements")
    return TensorArg(dtype, shape, "values", values)


def parse_arg(raw: Any) -> Arg:
    if isinstance(raw, list):
        return SequenceArg(tuple(parse_arg(item) for item in raw))
    if isinstance(raw, dict):
        if set(raw) != {"list"}:
            raise SpecError(f"an inline table argument must be {{list = [...]}}, got keys {sorted(raw)}")
        return SequenceArg(tuple(parse_arg(item) for item in raw["list"]), as_list=True)
    if isinstance(raw, str):
        if raw == "none":
            return NoneArg()
        if raw.startswith("dtype:"):
            dtype = raw.removeprefix("dtype:")
            if dtype not in DTYPES:
                raise SpecError(f"unknown dtype in {raw!r}")
            return DtypeArg(dtype)
        if "[" in raw and raw.split("[", 1)[0] in DTYPES:
            return parse_tensor(raw)
    return raw  # plain str / bool / int / float


def parse_call(raw: Mapping[str, Any] | None, *, where: str) -> Call:
    raw = raw or {}
    unknown = set(raw) - {"args", "kwargs"}
    if unknown:
        raise SpecError(f"{where}: unknown keys {sorted(unknown)}")
    return Call(
        tuple(parse_arg(a) for a in raw.get("args", ())),
        tuple((k, parse_arg(v)) for k, v in raw.get("kwargs", {}).items()),
    )


_ENTRY_KEYS = {"id", "target", "family", "releases", "args", "kwargs", "construct", "plan", "plan_method", "expect"}


def parse_entry(raw: Mapping[str, Any]) -> EntrySpec:
    entry_id = raw.get("id", "?")
    unknown = set(raw) - _ENTRY_KEYS
    if unknown:
        raise SpecError(f"entry {entry_id}: unknown keys {sorted(unknown)}")
    for key in ("id", "target", "family", "releases"):
        if key not in raw:
            raise SpecError(f"entry {entry_id}: missing {key!r}")
    if raw["family"] not in FAMILIES:
        raise SpecError(f"entry {entry_id}: unknown family {raw['family']!r}")
    if raw.get("plan") is not None and raw.get("construct") is None:
        raise SpecError(f"entry {entry_id}: `plan` needs `construct` (plan is a method of the instance)")
    if "plan_method" in raw and ("plan" not in raw or not str(raw["plan_method"]).isidentifier()):
        raise SpecError(f"entry {entry_id}: `plan_method` names the method `plan` calls (an identifier, with `plan`)")
    expectations = tuple(
        Expectation(SpecifierSet(e["releases"]), e["behaviour"], e["link"], e.get("note", "")) for e in raw.get("expect", ())
    )
    return EntrySpec(
        id=raw["id"],
        target=raw["target"],
        family=raw["family"],
        releases=SpecifierSet(raw["releases"]),
        call=parse_call({k: raw[k] for k in ("args", "kwargs") if k in raw}, where=entry_id),
        construct=parse_call(raw["construct"], where=f"{entry_id}.construct") if "construct" in raw else None,
        plan=parse_call(raw["plan"], where=f"{entry_id}.plan") if "plan" in raw else None,
        plan_method=raw.get("plan_method", "plan"),
        expectations=expectations,
    )


def load_specs(text: str | None = None) -> tuple[EntrySpec, ...]:
    """The shipped table (or `text`, for tests)."""
    from pcgkit.util.tomlfile import tomllib

    data = tomllib.loads(resources.sweep_data(SPEC_FILE).read_text() if text is None else text)
    if data.get("schema") != SCHEMA:
        raise SpecError(f"spec table schema is {data.get('schema')!r}, expected {SCHEMA!r}")
    entries = tuple(parse_entry(raw) for raw in data.get("entry", ()))
    seen: set[str] = set()
    for entry in entries:
        if entry.id in seen:
            raise SpecError(f"duplicate entry id {entry.id!r}")
        seen.add(entry.id)
    return entries
