"""Inputs for a FlashInfer callable, derived from what the release itself says. Pure.

No hand-written spec is needed where the release documents its arguments: FlashInfer's numpydoc
parameters say "shape (batch_size, hidden_size)" and name dtypes; the signature gives defaults,
`Optional`, `Literal` choices and scalar types. `derive_call(params, dims)` turns those into a call
in the spec table's own argument language (pcgkit.sweep.specs: "bf16[4,64]", "none", ...), with the
source of every argument, or says which argument no source could give (then the callable stays
`not judged`, with that reason).

Sources (SOURCES), per argument:
  signature      a default, `Optional` (None), a `Literal` choice, or the annotation's scalar type
  docstring      the parameter's documented shape / dtype
  upstream test  a shape symbol's value from FlashInfer's own tests at that release
                 (lab.sweep.upstream_tests: the smallest value a test parametrizes it with)
  kit default    a shape symbol or dtype none of the above gives: the kit's table (dims.toml), said so
Per wrapper method (constructor, plan() and run() together):
  upstream trace template  the release's own trace template's init() output, passed as FlashInfer's
                 tests/trace/ pass it (lab.sweep.template_calls); used over the method's hand spec
A callable's source (`primary_source`) is the strongest that shaped a tensor: upstream test >
docstring > signature; a hand spec (entry_points.toml) is counted apart by the caller.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import re
from collections.abc import Mapping, Sequence

from lab.sweep.doctext import (
    EACH_OF_TUPLE_RE,
    REPLACING_RE,
    SAME_DTYPE_RE,
    definitions,
    dtype_in,
    replaced_shape,
    same_shape_as,
    shape_text,
)

SOURCES = ("signature", "docstring", "upstream test", "kit default", "hand spec", "upstream trace template")
SIGNATURE, DOCSTRING, UPSTREAM, KIT = SOURCES[:4]
TEMPLATE = SOURCES[5]
MAX_ELEMENTS = 1 << 20  # a CPU trace: no derived tensor above a million elements

_SCALAR_TENSOR_RE = re.compile(r"single-element tensor|device scalar|scalar tensor|float scalar|\(1,\)|a scalar\b", re.IGNORECASE)
_IMPLICIT_PRODUCT_RE = re.compile(r"\b(\d+)([A-Za-z_])")  # "4H" -> "4*H"
_SCALAR_TYPES = {"int": int, "float": float, "bool": bool}


@dataclasses.dataclass(frozen=True)
class Param:
    """One parameter as the release states it: signature text plus its docstring entry (if any)."""

    name: str
    kind: str  # inspect.Parameter kind name: POSITIONAL_OR_KEYWORD, KEYWORD_ONLY, VAR_POSITIONAL, ...
    annotation: str = ""  # the annotation as text ("torch.Tensor", "Optional[int]", ...)
    default: str | None = None  # repr of the default; None when required
    doc_type: str = ""
    doc: str = ""


@dataclasses.dataclass(frozen=True)
class Dim:
    value: int | float  # a float only for the kit's named scalars (top_p, eps)
    source: str  # UPSTREAM or KIT
    note: str = ""  # the test file, or why the kit picked it


@dataclasses.dataclass(frozen=True)
class Derived:
    """A derived call (spec-language values), each argument with its source; or why there is none."""

    args: tuple = ()
    kwargs: tuple[tuple[str, object], ...] = ()
    sources: tuple[tuple[str, str], ...] = ()  # (parameter, source)
    dims: tuple[tuple[str, str], ...] = ()  # the shape symbols it used, each with its value's source
    # the symbols this call's own text gave or raised (call_dims): (name, "value: where from")
    own_dims: tuple[tuple[str, str], ...] = ()
    reason: str = ""  # non-empty: not derived

    @property
    def ok(self) -> bool:
        return not self.reason

    def to_dict(self) -> dict:
        if not self.ok:
            return {"reason": self.reason}
        return {"args": list(self.args), "kwargs": dict(self.kwargs), "sources": dict(self.sources),
                "source": primary_source(dict(self.sources).values()), "dims": dict(self.dims),
                "sized_by": " + ".join(sorted(set(dict(self.dims).values()))) or "-",
                **({"own_dims": dict(self.own_dims)} if self.own_dims else {})}


class _NoValue(Exception):
    """This parameter cannot be derived (the message says why)."""


def primary_source(sources) -> str:
    """The strongest source that shaped the call (upstream test > docstring > signature). Pure."""
    found = set(sources)
    for source in (UPSTREAM, DOCSTRING, SIGNATURE):
        if source in found:
            return source
    return KIT if KIT in found else SIGNATURE


def with_documentation_of(params: Sequence[Param], documented: Sequence[Param]) -> list[Param]:
    """Each parameter takes the entry of the same name from the callable its docstring refers to (documented_by)
    where that entry gives a shape, or where its own gives none: the release says the arguments are the same, and
    its own entry is then a summary ("Packed ``(expert_id, weight)`` tensor", "First-layer expert weights."). Pure."""
    by_name = {p.name: p for p in documented if p.doc or p.doc_type}
    out = []
    for param in params:
        other = by_name.get(param.name)
        own_shape = shape_text(param.doc) is not None or same_shape_as(param.doc) is not None
        if other is not None and (shape_text(other.doc) is not None or not own_shape):
            param = dataclasses.replace(param, doc_type=param.doc_type or other.doc_type, doc=other.doc)
        out.append(param)
    return out


def _eval_dim(expr: str, dims: Mapping[str, Dim], used: dict[str, str]) -> int:
    """One shape element: an int, a symbol, or + - * // / of them. Pure."""
    try:
        tree = ast.parse(_IMPLICIT_PRODUCT_RE.sub(r"\1*\2", expr.strip().strip("`")), mode="eval").body
    except SyntaxError:
        raise _NoValue(f"shape element {expr.strip()!r} is not an expression") from None

    def value(node) -> int:
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            dim = dims.get(node.id)
            if dim is None:
                raise _NoValue(f"shape symbol {node.id!r} has no value (no upstream test, not in the kit's dims)")
            used[node.id] = dim.source
            return int(dim.value)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id.endswith("indptr"):
            return value(ast.Name("nnz"))  # ``append_indptr[-1]``: the total length the indptr spans
        if isinstance(node, ast.IfExp):
            return value(node.orelse)  # ``hidden_size // (32 if mxfp4 else 16)``: the default (else) case
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ROUNDING
                and len(node.args) == 2 and not node.keywords):
            return _ROUNDING[node.func.id](value(node.args[0]), max(value(node.args[1]), 1))
        if (alternatives := _alternatives(node)) is not None:
            return value(alternatives[0])  # ``num_k_heads / num_v_heads``: either one; the first named
        if isinstance(node, ast.BinOp):
            left, right = value(node.left), value(node.right)
            ops = {ast.Add: lambda: left + right, ast.Sub: lambda: left - right, ast.Mult: lambda: left * right,
                   ast.FloorDiv: lambda: left // max(right, 1), ast.Div: lambda: left // max(right, 1)}
            if type(node.op) in ops:
                return ops[type(node.op)]()
        raise _NoValue(f"shape element {expr.strip()!r} is not arithmetic on symbols")

    result = value(tree)
    if result <= 0:
        raise _NoValue(f"shape element {expr.strip()!r} evaluates to {result}")
    return result


_ROUNDING = {"round_up": lambda x, m: -(-x // m) * m, "ceil_div": lambda x, m: -(-x // m)}


def _alternatives(node: ast.AST) -> list[ast.Name] | None:
    """``num_q_heads / num_k_heads / num_v_heads``: symbols of one kind (their names differ in one `_` part)
    joined by "/" name alternatives, not a quotient (``head_dim/sf_vec_size`` stays a division). Pure."""
    names: list[ast.AST] = []
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        names.insert(0, node.right)
        node = node.left
    names.insert(0, node)
    if len(names) < 2 or not all(isinstance(n, ast.Name) for n in names):
        return None
    parts = [n.id.split("_") for n in names if isinstance(n, ast.Name)]
    first = parts[0]
    if len(first) < 2 or any(len(p) != len(first) or sum(a != b for a, b in zip(p, first)) > 1 for p in parts[1:]):
        return None
    return [n for n in names if isinstance(n, ast.Name)]


def _elements(text: str) -> list[str]:
    """"(round_up(b, 4), h // 128)" -> ["round_up(b, 4)", " h // 128"]: split at the top level's commas. Pure."""
    parts, depth, part = [], 0, ""
    for char in text.strip()[1:-1] + ",":
        if char == "," and depth == 0:
            parts.append(part)
            part = ""
            continue
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(char, 0)
        part += char
    return parts


def parse_shape(text: str, dims: Mapping[str, Dim]) -> tuple[tuple[int, ...], dict[str, str]]:
    """"(batch_size, 2 * hidden_size)" -> ((4, 128), {symbol: source}). `...` is one batch dim. Pure."""
    used: dict[str, str] = {}
    shape: list[int] = []
    for part in (p for p in _elements(text) if p.strip()):
        if part.strip() in ("...", "…"):
            shape.append(_eval_dim("batch_size", dims, used))
            continue
        shape.append(_eval_dim(part, dims, used))
    if not shape:
        raise _NoValue(f"shape {text!r} has no dimensions")
    count = 1
    for d in shape:
        count *= d
    if count > MAX_ELEMENTS:
        raise _NoValue(f"shape {text} -> {shape} is {count} elements, above the CPU trace's {MAX_ELEMENTS}")
    return tuple(shape), used


def _is_tensor(type_text: str) -> bool:
    return "Tensor" in type_text


def _literal_choice(annotation: str) -> str | None:
    match = re.search(r"Literal\[\s*(['\"])(.*?)\1", annotation)
    return match.group(2) if match else None


def _scalar_type(type_text: str) -> type | None:
    for name in re.findall(r"\b(bool|int|float)\b", type_text):
        return _SCALAR_TYPES[name]
    return None


def _tensor(param: Param, dims: Mapping[str, Dim], used_dims: dict[str, str], earlier: Mapping[str, object],
            shapes: dict[str, str]) -> tuple[object, str]:
    twin = same_shape_as(param.doc)
    if twin is not None and isinstance(earlier.get(twin), str):
        return str(earlier[twin]), DOCSTRING
    value, source = _one_tensor(param, dims, used_dims, shapes)
    # "shape ``[append_indptr[-1], 64]``, same dtype as ``append_ckv``": that parameter's dtype
    if (same := SAME_DTYPE_RE.search(" ".join(param.doc.split()))) and isinstance(earlier.get(same.group(1)), str):
        twin_dtype = str(earlier[same.group(1)]).split("[", 1)[0]
        value = twin_dtype + "[" + value.split("[", 1)[1]
        value = value if twin_dtype in ("bf16", "f16", "f32") or not value.endswith("=ones") else value.removesuffix("=ones")
    # "For tuple input, each tensor has shape ...": the documented shape is each member's of a (K, V) pair; a
    # tensor documented in "the same tuple ... format as ``x``" is a pair when x is.
    replacing = REPLACING_RE.search(" ".join(param.doc.split()))
    if ("Tuple" in param.annotation and (EACH_OF_TUPLE_RE.search(param.doc)
                                         or (replacing and isinstance(earlier.get(replacing.group(1)), list)))):
        return [value, value], source
    return value, source


def _one_tensor(param: Param, dims: Mapping[str, Dim], used_dims: dict[str, str], shapes: dict[str, str]) -> tuple[str, str]:
    text = shape_text(param.doc) or replaced_shape(param.doc, shapes)
    if text is not None:
        shapes[param.name] = text
    if text is None and _SCALAR_TENSOR_RE.search(param.doc.replace("\n", " ")):
        return "f32[1]=ones", DOCSTRING  # "a single-element tensor", "float32 device scalar"
    if text is None and "workspace" in param.name and re.search(r"\bworkspace\b", param.doc, re.IGNORECASE):
        # "Workspace buffer for cuDNN. Scales with batch size": bytes whose size only a kernel reads, the kit's
        workspace = dims.get("workspace_bytes")
        if workspace is not None:
            used_dims["workspace_bytes"] = workspace.source
            return f"u8[{int(workspace.value)}]", KIT
    if text is None:
        raise _NoValue(f"the docstring gives no shape for tensor {param.name!r}")
    shape, used = parse_shape(text, dims)
    used_dims.update(used)
    dtype = dtype_in(param.doc) or dtype_in(param.doc_type)
    dtype = dtype or "bf16"
    init = "=ones" if dtype in ("bf16", "f16", "f32") else ""  # scales and weights of zero divide by zero
    return f"{dtype}[{','.join(map(str, shape))}]{init}", DOCSTRING


def derive_param(param: Param, dims: Mapping[str, Dim], used_dims: dict[str, str],
                 earlier: Mapping[str, object] | None = None, shapes: dict[str, str] | None = None) -> tuple[object, str] | None:
    """(value in the spec language, source) for one parameter; None: leave it to its default.
    `used_dims` collects the shape symbols it used; `shapes` the earlier tensors' shape texts (and this one's). Pure."""
    if param.default is not None:
        return None
    type_text = f"{param.annotation} {param.doc_type}"
    if "Optional" in param.annotation or "None" in param.annotation.split("[", 1)[-1]:
        return "none", SIGNATURE
    if (choice := _literal_choice(param.annotation)) is not None:
        return choice, SIGNATURE
    scalar = _scalar_type(param.annotation)
    if _is_tensor(param.annotation or param.doc_type) and not (scalar and "Union" in param.annotation):
        return _tensor(param, dims, used_dims, earlier or {}, {} if shapes is None else shapes)
    if "dtype" in type_text and "torch.dtype" in type_text:
        return f"dtype:{dtype_in(param.doc) or 'bf16'}", DOCSTRING if dtype_in(param.doc) else KIT
    if "torch.device" in type_text:
        return "cpu", KIT  # the device the trace's inputs live on
    if scalar is bool:
        return False, KIT
    if scalar in (int, float):
        dim = dims.get(param.name)
        if dim is None:
            raise _NoValue(f"no value for {scalar.__name__} {param.name!r} (no default; no upstream test or kit value)")
        used_dims[param.name] = dim.source
        return (int(dim.value) if scalar is int else float(dim.value)), dim.source
    raise _NoValue(f"parameter {param.name!r} ({param.annotation or 'unannotated'}) has no derivable value")


def _divisors(text: str, dims: Mapping[str, Dim]) -> list[tuple[str, int]]:
    """(symbol, divisor) for each ``symbol // k`` (or ``/ k``) in a shape text, k evaluated. Pure."""
    found = []
    for part in _elements(text):
        try:
            tree = ast.parse(_IMPLICIT_PRODUCT_RE.sub(r"\1*\2", part.strip().strip("`")), mode="eval")
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Div))
                    and isinstance(node.left, ast.Name) and _alternatives(node) is None):
                try:
                    found.append((node.left.id, _eval_dim(ast.unparse(node.right), dims, {})))
                except _NoValue:
                    continue
    return found


def _parses(expr: str) -> bool:
    try:
        ast.parse(expr, mode="eval")
    except SyntaxError:
        return False
    return True


def call_dims(params: Sequence[Param], dims: Mapping[str, Dim]) -> dict[str, Dim]:
    """The symbol values one call uses: the table (upstream tests, the kit), then what the callable's own text
    says. A symbol the table lacks takes the signature's int default of the parameter of that name, else a
    definition a description states ("kv_row_bytes = head_dim/2 + head_dim/sf_vec_size"; a definition also
    replaces a kit default). A symbol a documented shape divides (``hidden_size // 128``) is raised to the
    smallest multiple of its divisors at or above its value, so that no such dimension is 0. Pure."""
    local = dict(dims)
    for param in params:
        if param.name not in local and param.default is not None and re.fullmatch(r"\d+", param.default):
            local[param.name] = Dim(int(param.default), SIGNATURE, "the signature's default")
    text = " ".join(f"{p.doc}" for p in params)
    for _ in range(2):  # a definition may use another
        for name, expr in definitions(text):
            symbols = {n.id for n in ast.walk(ast.parse(expr, mode="eval"))
                       if isinstance(n, ast.Name)} if _parses(expr) else set()
            # a formula over other symbols, not an example value ("context_len=257 with block_size=64")
            if not symbols - set(_ROUNDING) or (name in local and local[name].source != KIT):
                continue
            try:
                local[name] = Dim(_eval_dim(expr, local, {}), DOCSTRING, f"the docstring: {name} = {expr}")
            except _NoValue:
                continue
    multiple: dict[str, int] = {}
    for param in params:
        shape = shape_text(param.doc)
        for name, divisor in _divisors(shape, local) if shape else ():
            multiple[name] = math.lcm(multiple.get(name, 1), divisor)
    for name, step in multiple.items():
        dim = local.get(name)
        if dim is not None and int(dim.value) % step:
            raised = -(-int(dim.value) // step) * step
            local[name] = Dim(raised, DOCSTRING, f"the smallest multiple of {step} at or above {dim.value} ({dim.source}"
                              f"{': ' + dim.note if dim.note else ''}): a documented shape divides {name} by {step}")
    return local


def derive_call(params: Sequence[Param], dims: Mapping[str, Dim]) -> Derived:
    """The call for a function with these parameters (self/cls already dropped). Pure."""
    args: list = []
    kwargs: list[tuple[str, object]] = []
    sources: list[tuple[str, str]] = []
    used: dict[str, str] = {}
    values: dict[str, object] = {}  # earlier parameters' values ("same shape as ``input``")
    shapes: dict[str, str] = {}  # earlier tensors' shape texts ("the same format as ``x``, replacing ...")
    table, dims = dims, call_dims(params, dims)
    try:
        for param in params:
            if param.kind in ("VAR_POSITIONAL", "VAR_KEYWORD"):
                continue
            derived = derive_param(param, dims, used, values, shapes)
            if derived is None:
                continue
            value, source = derived
            values[param.name] = value
            sources.append((param.name, source))
            # Required positional parameters precede defaulted ones, so skipping defaults keeps positions.
            if param.kind == "KEYWORD_ONLY":
                kwargs.append((param.name, value))
            else:
                args.append(value)
    except _NoValue as exc:
        return Derived(reason=str(exc))
    own = tuple((n, f"{dims[n].value}: {dims[n].note}") for n in sorted(used) if dims[n] is not table.get(n))
    return Derived(tuple(args), tuple(kwargs), tuple(sources), tuple(sorted(used.items())), own_dims=own)


# "Tensor(a0!)[] mutable": the alias annotation sits between the base type and its list/optional suffix.
_SCHEMA_ARG_RE = re.compile(r"^(?P<base>\w+)(?:\([^)]*\))?(?P<suffix>(?:\[\w*\]|\?)*)\s+(?P<name>\w+)(?:=(?P<default>.+))?$")
RELEASE_CODE = "release code"  # an op's str argument: a value the release's own code names for it (lab.sweep.op_strings)


def schema_args(schema: str) -> list[tuple[str, str, str | None, bool]]:
    """"ns::op(Tensor x, *, int k=1) -> Tensor" -> [(type, name, default, keyword_only)]. Pure."""
    inner = schema[schema.index("(") + 1: schema.rindex(") ->")] if ") ->" in schema else schema[schema.index("(") + 1: -1]
    out, keyword_only, depth, part = [], False, 0, ""
    for char in inner + ",":
        if char == "," and depth == 0:
            token = part.strip()
            part = ""
            if token == "*":
                keyword_only = True
            elif token:
                match = _SCHEMA_ARG_RE.match(token)
                if match is None:
                    raise ValueError(f"unparsed schema argument {token!r}")
                out.append((match["base"] + match["suffix"], match["name"], match["default"], keyword_only))
            continue
        depth += char in "([" and 1 or (char in ")]" and -1 or 0)
        part += char
    return out


def derive_op_call(schema: str, dims: Mapping[str, Dim], annotations: Mapping[str, str] | None = None,
                   str_values: Mapping[str, str] | None = None) -> Derived:
    """An op's call from its schema: types from the schema, tensor shapes from the kit's
    (batch_size, hidden_size) -- a schema never gives shapes, so every tensor is a kit default; a
    `str` argument takes the first `Literal` choice of the op's Python function (`annotations`:
    parameter -> annotation text), else the value the release's code names for it (`str_values`:
    parameter -> value, read by lab.sweep.op_strings, source RELEASE_CODE). Pure."""
    generic = f"{dims['batch_size'].value},{dims['hidden_size'].value}" if "batch_size" in dims and "hidden_size" in dims else "4,128"
    args: list = []
    kwargs: list[tuple[str, object]] = []
    sources: list[tuple[str, str]] = []
    try:
        parsed = schema_args(schema)
    except ValueError as exc:
        return Derived(reason=str(exc))
    for type_, name, default, keyword_only in parsed:
        if default is not None:
            continue
        base = type_.rstrip("?")
        value: object
        source = "op schema"
        if type_.endswith("?"):
            value = "none"
        elif base == "Tensor":
            value, source = f"bf16[{generic}]=ones", KIT
        elif base == "Tensor[]":
            value, source = [f"bf16[{generic}]=ones"], KIT
        elif base in ("int", "SymInt"):
            dim = dims.get(name)
            value, source = (dim.value, dim.source) if dim else (1, KIT)
        elif base in ("int[]", "SymInt[]"):
            value, source = [1], KIT
        elif base == "float":
            value, source = 1.0, KIT
        elif base == "bool":
            value, source = False, KIT
        elif base == "ScalarType":
            value, source = "dtype:bf16", KIT
        elif base == "str" and (choice := _literal_choice((annotations or {}).get(name, ""))) is not None:
            value, source = choice, SIGNATURE
        elif base == "str" and name in (str_values or {}):
            value, source = (str_values or {})[name], RELEASE_CODE
        else:
            return Derived(reason=f"schema argument {name!r} of type {type_} has no derivable value")
        sources.append((name, source))
        (kwargs.append((name, value)) if keyword_only else args.append(value))
    return Derived(tuple(args), tuple(kwargs), tuple(sources))


DIMS_FILE = "dims.toml"


def load_kit_dims(text: str | None = None) -> dict[str, int | float]:
    """The kit's shape symbols and named scalars (pcgkit/sweep/dims.toml), name -> value."""
    from pcgkit import resources
    from pcgkit.util.tomlfile import tomllib

    data = tomllib.loads(text if text is not None else resources.sweep_data(DIMS_FILE).read_text())
    return {**data["dims"], **data.get("scalars", {})}
