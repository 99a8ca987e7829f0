"""Wrapper calls from a release's own trace templates (source "upstream trace template"). Pure.

FlashInfer 0.7.x ships trace templates (`flashinfer.trace.templates.<module>.<name>_trace`) whose
`init(**shape)` builds a wrapper's inputs, e.g. {"plan": {...}, "run": {...}} under the template's
own names. FlashInfer's tests/trace/test_<name>_reference_correctness.py hand them to the wrapper:
`inputs = <template>.init(...)`, `wrapper = <Class>(ws, "NHD")`, `wrapper.plan(plan["kv_indptr"], ...)`,
`wrapper.run(run["q"], ...)`. `template_test_calls(source, path)` reads those lines as syntax (never runs
them): the template it imports, the class it builds and each call's arguments as expressions over the
init() output (`expr`); `evaluate(expr, inputs, workspace)` resolves one against what the installed
release's init() returned (the workshop edge, lab.sweep.inputs_build, calls it); `spec_value(value)`
writes the result in the spec language (pcgkit.sweep.specs). Float tensors are zeros (a trace reads
shapes and dtypes, not values); integer tensors keep the template's values.

Expressions (JSON data): ["key", [k1, k2, ...]] a value of init()'s output by its keys;
["list", [expr, ...]] a Python list; ["numel", expr] its element count; ["const", v] a literal;
["workspace"] the test's workspace buffer (the kit's, as the hand specs: nothing traced reads its size).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Any

from lab.sweep.derive import TEMPLATE

__all__ = ["TEMPLATE", "TemplateError", "evaluate", "spec_call", "spec_value", "template_test_calls"]
_CALLS = ("plan", "run")
_SPEC_DTYPES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "int32": "i32", "int64": "i64",
                "uint8": "u8", "int8": "i8", "bool": "bool"}
MAX_LITERAL = 64  # integer tensors up to this many elements keep their values


class TemplateError(ValueError):
    """The test's call or the template's value has no form the kit can write."""


def _expr(node: ast.expr, paths: Mapping[str, tuple], workspace: str | None) -> list:
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        base = node.value
        if isinstance(base, ast.Name) and base.id in paths:
            return ["key", [*paths[base.id], node.slice.value]]
    if isinstance(node, ast.List):
        return ["list", [_expr(e, paths, workspace) for e in node.elts]]
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "numel"
            and not node.args):
        return ["numel", _expr(node.func.value, paths, workspace)]
    if isinstance(node, ast.Name) and node.id == workspace:
        return ["workspace"]
    try:
        return ["const", ast.literal_eval(node)]
    except (ValueError, SyntaxError, TypeError):
        raise TemplateError(f"line {node.lineno}: {ast.unparse(node)[:60]!r} is not a template value") from None


def _call_of(node: ast.Call, paths, workspace) -> dict:
    return {"args": [_expr(a, paths, workspace) for a in node.args],
            "kwargs": {k.arg: _expr(k.value, paths, workspace) for k in node.keywords if k.arg},
            "line": node.lineno}


def _class_name(func: ast.expr) -> str:
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name if name[:1].isupper() else ""


def template_test_calls(source: str, path: str) -> list[dict]:
    """Per test function that calls a template's init(): {"template": "module:name", "class", "construct",
    "plan" (absent when the test calls none), "run", "file"}; a function whose calls are not all readable
    is left out. Pure."""
    tree = ast.parse(source)
    imported = {alias.asname or alias.name: f"{node.module}:{alias.name}" for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("flashinfer.trace.templates")
                for alias in node.names}
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef):
            continue
        paths: dict[str, tuple] = {}
        template = workspace = instance = cls = None
        calls: dict[str, dict] = {}
        try:
            for node in ast.walk(function):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    name, value = node.targets[0].id, node.value
                    if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "init"
                            and isinstance(value.func.value, ast.Name) and value.func.value.id in imported):
                        template, paths[name] = imported[value.func.value.id], ()
                    elif (isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and value.value.id in paths
                          and isinstance(value.slice, ast.Constant)):
                        paths[name] = (*paths[value.value.id], value.slice.value)
                    elif (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "empty"
                          and workspace is None):
                        workspace = name
                    elif isinstance(value, ast.Call) and _class_name(value.func) and instance is None and paths:
                        instance, cls = name, _class_name(value.func)
                        calls["construct"] = _call_of(value, paths, workspace)
            for node in ast.walk(function):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CALLS
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == instance):
                    calls.setdefault(node.func.attr, _call_of(node, paths, workspace))
        except TemplateError:
            continue
        if template and cls and "run" in calls:
            found.append({"template": template, "class": cls, **calls, "file": path})
    return found


def evaluate(expr: list, inputs: Any, workspace: Any) -> Any:
    """The value `expr` names in init()'s output `inputs`. Pure (`numel()` of a tensor)."""
    kind = expr[0]
    if kind == "key":
        value = inputs
        for key in expr[1]:
            value = value[key]
        return value
    if kind == "list":
        return [evaluate(e, inputs, workspace) for e in expr[1]]
    if kind == "numel":
        return int(evaluate(expr[1], inputs, workspace).numel())
    if kind == "workspace":
        return workspace
    if kind == "const":
        return expr[1]
    raise TemplateError(f"unknown expression {kind!r}")


def spec_value(value: Any) -> Any:
    """`value` in the spec language: a tensor as dtype[shape] (integer values kept), a tuple as a list, a list
    as {"list": [...]}, a torch.dtype as "dtype:<name>", None as "none". Pure."""
    if isinstance(value, (bool, int, float, str)):
        return value
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return [spec_value(v) for v in value]
    if isinstance(value, list):
        return {"list": [spec_value(v) for v in value]}
    dtype_name = str(getattr(value, "dtype", value)).removeprefix("torch.")
    short = _SPEC_DTYPES.get(dtype_name)
    if short is None:
        raise TemplateError(f"no spec dtype for {dtype_name!r}")
    if not hasattr(value, "shape"):
        return f"dtype:{short}"
    shape = ",".join(str(int(d)) for d in value.shape)
    if short in ("f32", "f16", "bf16"):
        return f"{short}[{shape}]"
    flat = [int(v) for v in value.reshape(-1).tolist()]
    if short == "bool":
        if all(flat):
            return f"bool[{shape}]=ones"
        if not any(flat):
            return f"bool[{shape}]"
        raise TemplateError("a mixed bool tensor has no spec form")
    if not flat or not any(flat):
        return f"{short}[{shape}]"
    if len(flat) > MAX_LITERAL:
        raise TemplateError(f"an integer tensor of {len(flat)} elements (the kit writes up to {MAX_LITERAL})")
    return f"{short}[{shape}]=" + ",".join(map(str, flat))


def spec_call(call: Mapping, inputs: Any, workspace: Any) -> dict:
    """{"args", "kwargs"} of one test call, resolved against init()'s output and written as spec values. Pure."""
    return {"args": [spec_value(evaluate(e, inputs, workspace)) for e in call["args"]],
            "kwargs": {k: spec_value(evaluate(e, inputs, workspace)) for k, e in call["kwargs"].items()}}
