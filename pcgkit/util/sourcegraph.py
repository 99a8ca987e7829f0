"""Cut the definitions a standalone script needs out of the kit's own source files.

A repro export must not diverge from the case it exports, so it is no hand-written copy: from a few roots (the
case's `reproduce`, the mode, the simulation shim), every kit-level name they use is followed through
`from pcgkit.x import y` to its definition, taken verbatim; library imports become import lines. Annotations are
not followed (the script starts with `from __future__ import annotations`). Reads the kit's .py files only.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

KIT_PACKAGE = "pcgkit"


class ExtractionError(ValueError):
    """The roots reach something that cannot be written into a standalone script."""


@dataclasses.dataclass(frozen=True)
class Definition:
    module: str  # "pcgkit.harness.simulate", or a case file's stem
    line: int
    source: str


@dataclasses.dataclass(frozen=True)
class Extract:
    imports: tuple[str, ...]  # library import lines, sorted
    sections: tuple[tuple[str, tuple[Definition, ...]], ...]  # (origin, definitions in source order)
    aliases: tuple[tuple[str, str], ...]  # (alias, original) for `import x as alias` of kit names

    def render(self) -> str:
        parts = []
        for origin, definitions in self.sections:
            parts.append(f"# ---- from {origin} (verbatim) " + "-" * max(4, 72 - len(origin)))
            parts += [d.source + "\n" for d in definitions]
        parts += [f"{alias} = {original}" for alias, original in self.aliases]
        return "\n\n".join(parts) + "\n"


class _NamesUsed(ast.NodeVisitor):
    """Every Name a node reads, not looking inside annotations."""

    def __init__(self):
        self.names: set[str] = set()

    def visit_Name(self, node: ast.Name) -> None:
        self.names.add(node.id)

    def visit_arg(self, node: ast.arg) -> None:
        pass  # an argument's annotation only

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for child in (*node.decorator_list, node.args, *node.body):
            self.visit(child)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]  # same fields, same walk

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)


@dataclasses.dataclass
class _Module:
    name: str
    origin: str
    lines: list[str]
    definitions: dict[str, ast.stmt]
    imports: dict[str, tuple[str, str | None]]  # local name -> (module, original name | None)


def _parse(name: str, path: Path, kit_root: Path) -> _Module:
    text = path.read_text()
    tree = ast.parse(text, filename=str(path))
    definitions: dict[str, ast.stmt] = {}
    imports: dict[str, tuple[str, str | None]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            definitions[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name_node in ast.walk(target):  # `A = ...` and `A, B = ...`
                    if isinstance(name_node, ast.Name):
                        definitions[name_node.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            definitions[node.target.id] = node
        elif isinstance(node, ast.Import):
            for alias in node.names:
                imports[alias.asname or alias.name.split(".")[0]] = (alias.name, None)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                imports[alias.asname or alias.name] = (node.module, alias.name)
    return _Module(name, str(path.relative_to(kit_root)), text.splitlines(), definitions, imports)


def _source_of(module: _Module, node: ast.stmt) -> tuple[int, str]:
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno] + [d.lineno for d in decorators])
    return start, "\n".join(module.lines[start - 1 : node.end_lineno])


def _import_line(local: str, module_name: str, original: str | None) -> str:
    if original is None:
        return f"import {module_name}" + (f" as {local}" if local != module_name.split(".")[0] else "")
    return f"from {module_name} import {original}" + (f" as {local}" if local != original else "")


class Extractor:
    """Follows kit names from roots to definitions. One instance per export."""

    def __init__(self, kit_root: Path):
        self.kit_root = kit_root
        self._modules: dict[str, _Module] = {}
        self._taken: dict[tuple[str, str], Definition] = {}
        self._owner_of_name: dict[str, tuple[str, str]] = {}
        self._in_progress: set[tuple[str, str]] = set()
        self._imports: set[str] = set()
        self._aliases: dict[str, str] = {}
        self._module_deps: dict[str, set[str]] = {}  # module -> kit modules its taken code uses

    def module(self, name: str, path: Path | None = None) -> _Module:
        if name not in self._modules:
            if path is None:
                path = self.kit_root / (name.replace(".", "/") + ".py")
            self._modules[name] = _parse(name, path, self.kit_root)
        return self._modules[name]

    def require(self, module_name: str, name: str) -> None:
        """Take `name` as defined in `module_name`, and everything it uses."""
        key = (module_name, name)
        if key in self._taken or key in self._in_progress:
            return
        module = self.module(module_name)
        node = module.definitions.get(name)
        if node is None:
            if name in module.imports:
                return self._resolve(module, name)
            raise ExtractionError(f"{module.origin} defines no {name!r}")
        owner = self._owner_of_name.get(name)
        if owner is not None and owner != key:
            raise ExtractionError(f"{name!r} is defined in both {owner[0]} and {module_name}: rename one")
        self._owner_of_name[name] = key
        self._in_progress.add(key)
        visitor = _NamesUsed()
        visitor.visit(node)
        for used in sorted(visitor.names - {name}):
            self._resolve(module, used)
        line, source = _source_of(module, node)
        self._taken[key] = Definition(module_name, line, source)
        self._in_progress.discard(key)

    def _resolve(self, module: _Module, used: str) -> None:
        if used in module.definitions:
            self.require(module.name, used)
            return
        if used not in module.imports:
            return  # a builtin or a local name
        source_module, original = module.imports[used]
        if source_module == "__future__":
            return
        if source_module == KIT_PACKAGE or source_module.startswith(KIT_PACKAGE + "."):
            if original is None:
                raise ExtractionError(f"{module.origin} uses module {source_module} as a whole: import names from it")
            self.require(source_module, original)
            self._module_deps.setdefault(module.name, set()).add(source_module)
            if used != original:
                self._aliases[used] = original
            return
        self._imports.add(_import_line(used, source_module, original))

    def extract(self) -> Extract:
        """Each module's definitions in source order, the modules after the modules they use (as the kit imports
        them), so module-level code -- decorators, default arguments, constants -- finds its names defined."""
        pending = list(dict.fromkeys(d.module for d in self._taken.values()))
        sections = []
        while pending:
            ready = [m for m in pending if not (self._module_deps.get(m, set()) & set(pending)) - {m}]
            if not ready:
                raise ExtractionError(f"kit modules use each other in a cycle: {pending}")
            module_name = ready[0]
            pending.remove(module_name)
            definitions = sorted((d for d in self._taken.values() if d.module == module_name), key=lambda d: d.line)
            sections.append((self._modules[module_name].origin, tuple(definitions)))
        return Extract(tuple(sorted(self._imports)), tuple(sections), tuple(sorted(self._aliases.items())))
