"""A registered op's `str` arguments: the values the release's own code names for them, read as syntax (workshop).

An op's schema types a `str` argument but never says which strings it takes; the release's code does, where
it compares the argument or looks something up by it. `str_value(sources, name)` reads Python source text
with `ast` (nothing imported, nothing run) and returns the first value the code names for a variable, attribute
or keyword called `name`, with the file:line it came from and the rule that read it. Rules, strongest first:

  allow-list   `name in ("a", "b")` / `name not in (...)` (or a module-level `NAMES = frozenset({...})`): the first member
  compared     `name == "a"` / `name != "a"` (either side; a module-level `CONST = "a"` is read through)
  table key    `TABLE[name]` / `TABLE.get(name)` with `TABLE` a dict of str keys the module builds (its first key)
  enum member  `Enum[name]` / `Enum(name)` with a module-level Enum of str values (first member's name / value)
               (these three rank together)
  passed       `f(..., name="a")` or a parameter `name: str = "a"` in a def: a value the release passes itself

Where no source names a value, a function the code hands the argument on to by name (`f(name)`, `f(p=name)`),
defined at the top of one of the sources, is read for its parameter, up to MAX_HOPS functions deep (`via`
says through which calls).
`sources` is an ordered list of (path, text): the op's own module first, then the modules of its package it
imports (`package_imports`, in the order it imports them), then its package's other modules. The first
source with any finding answers (so the op's module wins over its neighbours), then the strongest rule in
it, then the earliest line. Pure.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterable, Mapping

RULES = ("allow-list", "compared", "table key", "enum member", "passed")  # ranked: allow-list > the middle three > passed
MAX_HOPS = 3  # how many functions deep an argument handed on is followed


@dataclasses.dataclass(frozen=True)
class StrValue:
    """One value for a `str` argument, where the release's code names it."""

    value: str
    where: str  # "flashinfer/path.py:LINE"
    rule: str  # one of RULES
    via: str = ""  # the call that handed the argument on to the function where the value is named

    def to_dict(self) -> dict:
        return {"value": self.value, "from": self.where, "rule": self.rule, **({"via": self.via} if self.via else {})}


def _named(node: ast.AST, name: str) -> bool:
    return (isinstance(node, ast.Name) and node.id == name) or (isinstance(node, ast.Attribute) and node.attr == name)


@dataclasses.dataclass(frozen=True)
class _Tables:
    """What a module defines at its top level that names str values."""

    constants: dict[str, str]  # NAME = "a"
    collections: dict[str, list[str]]  # NAME = ("a", "b") / {"a", B} / frozenset({...})
    dicts: dict[str, list[str]]  # NAME = {"a": ..., "b": ...}: its keys
    enums: dict[str, tuple[list[str], list[str]]]  # class E(Enum) with str values: (member names, values)


def _assignments(tree: ast.Module) -> Iterable[tuple[str, ast.expr]]:
    for node in tree.body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets if isinstance(node, ast.Assign) else []
        value = getattr(node, "value", None)
        for target in targets:
            if isinstance(target, ast.Name) and value is not None:
                yield target.id, value


def _module_tables(tree: ast.Module) -> _Tables:
    """Module-level str constants, str collections, dicts keyed by str, and Enums with str values."""
    constants = {name: value.value for name, value in _assignments(tree)
                 if isinstance(value, ast.Constant) and isinstance(value.value, str)}
    collections: dict[str, list[str]] = {}
    dicts: dict[str, list[str]] = {}
    enums: dict[str, tuple[list[str], list[str]]] = {}
    for node in ast.walk(tree):  # a dict a function builds to look its argument up in counts as well
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Dict)):
            keys = [k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            if keys and len(keys) == len(node.value.keys):
                dicts.setdefault(node.targets[0].id, keys)
    for name, value in _assignments(tree):
        inner = value.args[0] if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and len(value.args) == 1
                                  and value.func.id in ("frozenset", "set", "tuple", "list")) else value
        if isinstance(inner, (ast.Tuple, ast.List, ast.Set)) and (found := _strings(inner, constants)):
            collections[name] = found
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any("Enum" in ast.unparse(base) for base in node.bases):
            names, values = [], []
            for item in node.body:
                if (isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name)
                        and isinstance(item.value, ast.Constant) and isinstance(item.value.value, str)):
                    names.append(item.targets[0].id)
                    values.append(item.value.value)
            if names:
                enums[node.name] = (names, values)
    return _Tables(constants, collections, dicts, enums)


def _strings(node: ast.AST, constants: dict[str, str]) -> list[str]:
    """The str values one expression states: a literal, a module constant, or a tuple/list/set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Name) and node.id in constants:
        return [constants[node.id]]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        found = [s for element in node.elts for s in _strings(element, constants)]
        return found if len(found) == len(node.elts) else []
    return []


def _findings(tree: ast.Module, name: str, scope: ast.AST | None = None) -> Iterable[tuple[int, int, str, str]]:
    """(rule rank, line, value, rule) for every place this module (or `scope`, a part of it) names a value for `name`."""
    tables = _module_tables(tree)
    constants, dicts, enums = tables.constants, tables.dicts, tables.enums
    for node in ast.walk(scope or tree):
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, op, right = node.left, node.ops[0], node.comparators[0]
            if isinstance(op, (ast.In, ast.NotIn)) and _named(left, name):
                members = _strings(right, constants) or (tables.collections.get(right.id, []) if isinstance(right, ast.Name) else [])
                for value in members[:1]:
                    yield 0, node.lineno, value, "allow-list"
            elif isinstance(op, (ast.Eq, ast.NotEq)):
                for side, other in ((left, right), (right, left)):
                    if _named(side, name):
                        for value in _strings(other, constants)[:1]:
                            yield 1, node.lineno, value, "compared"
        elif isinstance(node, ast.Subscript) and _named(node.slice, name) and isinstance(node.value, ast.Name):
            table = node.value.id
            if table in dicts:
                yield 1, node.lineno, dicts[table][0], "table key"
            elif table in enums:
                yield 1, node.lineno, enums[table][0][0], "enum member"
        elif isinstance(node, ast.Call):
            func, args = node.func, node.args
            if (isinstance(func, ast.Attribute) and func.attr == "get" and isinstance(func.value, ast.Name)
                    and func.value.id in dicts and args and _named(args[0], name)):
                yield 1, node.lineno, dicts[func.value.id][0], "table key"
            elif isinstance(func, ast.Name) and func.id in enums and len(args) == 1 and _named(args[0], name):
                yield 1, node.lineno, enums[func.id][1][0], "enum member"
            for keyword in node.keywords:
                if keyword.arg == name:
                    for value in _strings(keyword.value, constants)[:1]:
                        yield 2, keyword.value.lineno, value, "passed"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            positional = [*arguments.posonlyargs, *arguments.args]
            pairs = [*zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults),
                     *((a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None)]
            for argument, default in pairs:
                if argument.arg == name:
                    for value in _strings(default, constants)[:1]:
                        if value:  # "" is "not given", not a value the code names
                            yield 2, default.lineno, value, "passed"


def _passed_on(scope: ast.AST, name: str) -> list[tuple[int, str, int | str]]:
    """(line, function, position or keyword) for each call that hands `name` on to a function by its name."""
    calls = []
    for node in ast.walk(scope):
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            function = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            slots: list[int | str] = [i for i, arg in enumerate(node.args) if _named(arg, name)]
            slots += [k.arg for k in node.keywords if k.arg and _named(k.value, name)]
            calls += [(node.lineno, function, slot) for slot in slots]
    return sorted(calls, key=lambda call: call[0])


def _parameter(function: ast.FunctionDef | ast.AsyncFunctionDef, slot: int | str) -> str | None:
    positional = [a.arg for a in (*function.args.posonlyargs, *function.args.args)]
    if isinstance(slot, str):
        return slot if slot in positional or slot in [a.arg for a in function.args.kwonlyargs] else None
    return positional[slot] if slot < len(positional) else None


def str_value(sources: Iterable[tuple[str, str]], name: str) -> StrValue | None:
    """The value the release's code names for `name` (see the module docstring), or None. Pure."""
    trees = []
    for path, text in sources:
        try:
            trees.append((path, ast.parse(text)))
        except SyntaxError:
            continue
    for path, tree in trees:
        found = sorted(f for f in _findings(tree, name) if f[2])
        if found:
            _, line, value, rule = found[0]
            return StrValue(value, f"{path}:{line}", rule)
    # Nothing names one: a function the code hands the argument on to may (`get_cutlass_dtype(alpha_dtype)`
    # looking its parameter up in a table); the function found by name among the same sources, MAX_HOPS deep.
    defs: dict[str, tuple[str, ast.Module, ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for path, tree in trees:
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defs.setdefault(node.name, (path, tree, node))
    for path, tree in trees:
        if (found_via := _handed_on(defs, path, tree, name, MAX_HOPS, set())) is not None:
            return found_via
    return None


def _handed_on(defs: Mapping[str, tuple[str, ast.Module, ast.FunctionDef | ast.AsyncFunctionDef]], path: str,
               scope: ast.AST, name: str, hops: int, seen: set[str]) -> StrValue | None:
    """The value a function `scope` hands `name` on to names for its parameter (breadth first, `hops` deep)."""
    steps = []
    for line, function, slot in _passed_on(scope, name):
        if function not in defs or function in seen or (parameter := _parameter(defs[function][2], slot)) is None:
            continue
        seen.add(function)
        def_path, def_tree, node = defs[function]
        found = sorted(f for f in _findings(def_tree, parameter, node) if f[2])
        if found:
            _, found_line, value, rule = found[0]
            return StrValue(value, f"{def_path}:{found_line}", rule, via=f"{function}() at {path}:{line}")
        steps.append((def_path, node, parameter, f"{function}() at {path}:{line}"))
    for def_path, node, parameter, call in steps if hops > 1 else ():
        if (found_via := _handed_on(defs, def_path, node, parameter, hops - 1, seen)) is not None:
            return dataclasses.replace(found_via, via=f"{call} -> {found_via.via}")
    return None


def package_imports(text: str) -> list[str]:
    """The sibling modules a module imports relatively (`from .x import ...`, `from . import x`), in order:
    their stems. Pure."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    stems: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module.split(".")[0]] if node.module else [alias.name for alias in node.names]
            stems += [name for name in names if name not in stems]
    return stems
