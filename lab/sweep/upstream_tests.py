"""What FlashInfer's own test suite at a release's tag says about inputs. Pure.

`read_test_sources({path: source})` walks each test module's syntax tree (never runs it) for
  - dims: every `@pytest.mark.parametrize("name", [...])` (and "a,b" with tuples) over positive
    integers -> the values per name; the derivation (lab.sweep.derive) takes the smallest, the
    size FlashInfer itself tests a CPU trace can afford;
  - calls: every `flashinfer.<...>.<name>(...)` call -> the test files that call `name`.
The edge that reads the files at a tag from a git mirror is in pcgkit.sweep.inputs_build.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

# Parameter names tests use for sizes that are not shape symbols of the API (loop counts, seeds).
_NOT_DIMS = frozenset({"seed", "seeds", "num_iters", "iters", "repeat", "warmup", "device_id", "world_size", "rank"})


def _parametrize_names(decorator: ast.expr) -> tuple[list[str], ast.expr] | None:
    if not isinstance(decorator, ast.Call) or len(decorator.args) < 2:
        return None
    func = decorator.func
    if not (isinstance(func, ast.Attribute) and func.attr == "parametrize"):
        return None
    first = decorator.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        names = [n.strip() for n in first.value.split(",") if n.strip()]
    elif isinstance(first, (ast.List, ast.Tuple)):
        names = [e.value for e in first.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    else:
        return None
    return names, decorator.args[1]


def _ints(node: ast.expr) -> list[int]:
    try:
        value = ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return []
    return [value] if isinstance(value, int) and not isinstance(value, bool) and value > 0 else []


def _dims_of(names: list[str], values: ast.expr, dims: dict[str, set[int]]) -> None:
    if not isinstance(values, (ast.List, ast.Tuple)):
        return
    for element in values.elts:
        if len(names) == 1:
            items = [element]
        elif isinstance(element, (ast.Tuple, ast.List)) and len(element.elts) == len(names):
            items = list(element.elts)
        else:
            continue
        for name, item in zip(names, items):
            if name not in _NOT_DIMS:
                dims.setdefault(name, set()).update(_ints(item))


def _flashinfer_call(node: ast.Call) -> str | None:
    parts = []
    func: ast.expr = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name) and func.id == "flashinfer" and parts:
        return parts[0]  # the called name: flashinfer.norm.rmsnorm -> rmsnorm
    return None


def read_test_sources(files: Mapping[str, str]) -> dict:
    """{"dims": {name: {"values": [...], "files": [...]}}, "calls": {name: [files]}, "unparsed": [...]}. Pure."""
    dims_by_file: dict[str, dict[str, set[int]]] = {}
    calls: dict[str, set[str]] = {}
    unparsed = []
    for path, source in sorted(files.items()):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            unparsed.append(path)
            continue
        file_dims: dict[str, set[int]] = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for decorator in node.decorator_list:
                    if (found := _parametrize_names(decorator)) is not None:
                        _dims_of(*found, file_dims)
            elif isinstance(node, ast.Call) and (name := _flashinfer_call(node)):
                calls.setdefault(name, set()).add(path)
        dims_by_file[path] = file_dims
    merged: dict[str, dict] = {}
    for path, file_dims in dims_by_file.items():
        for name, values in file_dims.items():
            if values:
                entry = merged.setdefault(name, {"values": set(), "files": set()})
                entry["values"] |= values
                entry["files"].add(path)
    return {
        "dims": {n: {"values": sorted(e["values"]), "files": sorted(e["files"])[:5]} for n, e in sorted(merged.items())},
        "calls": {n: sorted(f)[:5] for n, f in sorted(calls.items())},
        "evaluated_calls": calls_in(files),
        "unparsed": unparsed,
    }


def smallest_dims(upstream: Mapping) -> dict[str, tuple[int, str]]:
    """name -> (the value a derivation uses, the first file that tests it): the smallest tested value
    that is a multiple of 16 (kernels' alignment; tests also probe odd sizes on purpose), else the
    smallest. Pure."""
    out = {}
    for name, entry in upstream.get("dims", {}).items():
        values = entry.get("values") or []
        if values:
            aligned = [v for v in values if v % 16 == 0]
            out[name] = ((aligned or values)[0], entry["files"][0])
    return out


# ---- the calls themselves: a test's `flashinfer.x(...)` with arguments evaluated from its own code
_TORCH_DTYPES = {"float16": "f16", "half": "f16", "bfloat16": "bf16", "float32": "f32", "float": "f32", "int32": "i32",
                 "int64": "i64", "long": "i64", "int8": "i8", "uint8": "u8", "bool": "bool", "float8_e4m3fn": "fp8e4m3",
                 "float8_e5m2": "fp8e5m2", "int": "i32"}
_CONSTRUCTORS = ("randn", "rand", "zeros", "ones", "empty", "full", "randint", "arange")
_MAX_CALL_ELEMENTS = 1 << 20
_UNKNOWN = object()


def _param_value(values: ast.expr) -> object:
    """The value a derivation takes from a parametrize list: the smallest aligned int, else the first literal."""
    if not isinstance(values, (ast.List, ast.Tuple)) or not values.elts:
        return _UNKNOWN
    ints = [v for e in values.elts for v in _ints(e)]
    if ints:
        aligned = sorted(v for v in ints if v % 16 == 0)
        return (aligned or sorted(ints))[0]
    first = values.elts[0]
    dtype = _dtype_of(first)
    if dtype:
        return ("dtype", dtype)
    try:
        return ast.literal_eval(first)
    except (ValueError, SyntaxError, TypeError):
        return _UNKNOWN


def _dtype_of(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
        return _TORCH_DTYPES.get(node.attr)
    return None


class _Evaluator:
    """Values of a test function's names, in the spec language: ints/floats/str/bool, ("dtype", d), ("tensor", d, shape)."""

    def __init__(self, env: dict[str, object]):
        self.env = env

    def value(self, node: ast.expr) -> object:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return self.env.get(node.id, _UNKNOWN)
        if (dtype := _dtype_of(node)) is not None:
            return ("dtype", dtype)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.value(node.operand)
            return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else _UNKNOWN
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left), self.value(node.right)
            if all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right)):
                ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
                       ast.FloorDiv: lambda a, b: a // b if b else _UNKNOWN}
                if type(node.op) in ops:
                    return ops[type(node.op)](left, right)
            return _UNKNOWN
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [self.value(e) for e in node.elts]
            return _UNKNOWN if any(i is _UNKNOWN for i in items) else tuple(items)
        if isinstance(node, ast.Call):
            return self._call(node)
        return _UNKNOWN

    def _shape(self, nodes: list[ast.expr]) -> tuple[int, ...] | None:
        if len(nodes) == 1 and isinstance(nodes[0], (ast.Tuple, ast.List)):
            nodes = list(nodes[0].elts)
        dims = [self.value(n) for n in nodes]
        if not dims or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
            return None
        count = 1
        for d in dims:
            count *= d  # type: ignore[operator]
        return tuple(dims) if count <= _MAX_CALL_ELEMENTS else None  # type: ignore[arg-type]

    def _call(self, node: ast.Call) -> object:
        func = node.func
        kwargs = {k.arg: k.value for k in node.keywords if k.arg}
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "torch" \
                and func.attr in _CONSTRUCTORS:
            args = list(node.args)
            if func.attr == "randint":
                args = [kwargs["size"]] if "size" in kwargs else args[2:3] if len(args) >= 3 else args[1:2]
                default = "i64"
            elif func.attr == "full":
                args = args[:1]
                default = "f32"
            elif func.attr == "arange":
                end = self.value(args[-1]) if args else _UNKNOWN
                return ("tensor", "i64", (end,)) if isinstance(end, int) and end > 0 else _UNKNOWN
            else:
                default = "f32"
            shape = self._shape(args)
            dtype = self.value(kwargs["dtype"]) if "dtype" in kwargs else ("dtype", default)
            if shape is None or not (isinstance(dtype, tuple) and dtype[0] == "dtype"):
                return _UNKNOWN
            return ("tensor", dtype[1], shape)
        if isinstance(func, ast.Attribute):  # x.to(dtype) / x.cuda() / x.half() / x.contiguous() ...
            base = self.value(func.value)
            if not (isinstance(base, tuple) and base and base[0] == "tensor"):
                return _UNKNOWN
            if func.attr in ("cuda", "contiguous", "clone", "detach", "to") and not node.args and "dtype" not in kwargs:
                return base
            if func.attr == "to":
                target = self.value(kwargs["dtype"]) if "dtype" in kwargs else self.value(node.args[0])
                if isinstance(target, tuple) and target and target[0] == "dtype":
                    return ("tensor", target[1], base[2])
                return base if isinstance(target, str) else _UNKNOWN  # .to("cuda:0")
            if func.attr in _TORCH_DTYPES:
                return ("tensor", _TORCH_DTYPES[func.attr], base[2])
        return _UNKNOWN


def _spec(value: object) -> object:
    """An evaluated value in the spec table's argument language (pcgkit.sweep.specs)."""
    if isinstance(value, tuple) and value and value[0] == "tensor":
        init = "=ones" if value[1] in ("bf16", "f16", "f32") else ""
        return f"{value[1]}[{','.join(map(str, value[2]))}]{init}"
    if isinstance(value, tuple) and value and value[0] == "dtype":
        return f"dtype:{value[1]}"
    if isinstance(value, tuple):
        return [_spec(v) for v in value]
    if value is None:
        return "none"
    return value


def _calls_under_raises(function: ast.AST) -> set[int]:
    """ids of the calls inside `with pytest.raises(...)`: a test that expects the release to refuse them. Pure."""
    under: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(
                isinstance(item.context_expr, ast.Call) and isinstance(item.context_expr.func, ast.Attribute)
                and item.context_expr.func.attr == "raises" for item in node.items):
            under.update(id(inner) for statement in node.body for inner in ast.walk(statement) if isinstance(inner, ast.Call))
    return under


def calls_in(files: Mapping[str, str]) -> dict[str, dict]:
    """name -> the first `flashinfer.<...>.name(...)` call in a test whose every argument the evaluator
    could give a value from that test's own parametrizations and assignments; not a call the test expects to
    raise (`with pytest.raises`), nor one in a test that monkeypatches the release. Pure."""
    found: dict[str, dict] = {}
    for path, source in sorted(files.items()):
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        imported = {alias.asname or alias.name: alias.name for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "flashinfer"
                    for alias in node.names}
        for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            if any(a.arg == "monkeypatch" for a in function.args.args):
                continue  # the test replaces the release's internals: its call is not the release's as shipped
            expected_to_raise = _calls_under_raises(function)
            env: dict[str, object] = {}
            for decorator in function.decorator_list:
                if (parsed := _parametrize_names(decorator)) is not None:
                    names, values = parsed
                    if len(names) == 1:
                        env[names[0]] = _param_value(values)
                    elif isinstance(values, (ast.List, ast.Tuple)) and values.elts and isinstance(values.elts[0], (ast.Tuple, ast.List)):
                        for name, item in zip(names, values.elts[0].elts):
                            env[name] = _param_value(ast.List(elts=[item]))
            evaluator = _Evaluator(env)
            for node in ast.walk(function):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    env[node.targets[0].id] = evaluator.value(node.value)
            for node in ast.walk(function):
                if not isinstance(node, ast.Call):
                    continue
                called = _flashinfer_call(node) or (imported.get(node.func.id) if isinstance(node.func, ast.Name) else None)
                if called is None or called in found or id(node) in expected_to_raise:
                    continue
                if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                    continue
                args = [evaluator.value(a) for a in node.args]
                kwargs = {k.arg: evaluator.value(k.value) for k in node.keywords if k.arg}
                if any(v is _UNKNOWN for v in [*args, *kwargs.values()]):
                    continue
                found[called] = {"args": [_spec(a) for a in args], "kwargs": {k: _spec(v) for k, v in kwargs.items()},
                               "file": path, "test": function.name, "line": node.lineno}
    return found
