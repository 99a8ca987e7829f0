"""Read FlashInfer's own source (release wheels) into fixtures/flashinfer_source.json: where each function of its
FP4 quantize path and lazy JIT loader is defined, and which function makes each call there.

    python benchmarks/flashinfer_source_table.py WHEEL.whl [WHEEL.whl ...]

`pcgkit triage` uses the table to place the steps of a pasted chain that carry no file path
(`is_cuda_version_at_least("12.8") -> subprocess.check_output(...)`): a step names a function, the table says
in which file FlashInfer defines it, and which FlashInfer function makes a call the chain names. Only files
of that path are read (the FP4 module and flashinfer/jit/core.py, cpp_ext.py, env.py); a function defined in
different files across the releases read keeps every file. Workshop code: run by hand when a release moves
the path; the output is committed with the wheels it was read from.
"""

from __future__ import annotations

import ast
import json
import sys
import zipfile
from pathlib import Path

FILES = ("flashinfer/fp4_quantization.py", "flashinfer/quantization/fp4_quantization.py", "flashinfer/jit/core.py",
         "flashinfer/jit/cpp_ext.py", "flashinfer/jit/env.py", "flashinfer/jit/fp4_quantization.py")
OUT = Path(__file__).resolve().parent.parent / "fixtures" / "flashinfer_source.json"


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return None


def read_file(path: str, source: str, defined: dict, calls: dict) -> None:
    tree = ast.parse(source)
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        defined.setdefault(func.name, set()).add(path)
        for node in ast.walk(func):
            if isinstance(node, ast.Call) and (name := _dotted(node.func)):
                calls.setdefault(path, {}).setdefault(name, set()).add(func.name)
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and (name := _dotted(node)):
                # a property read (`self.is_aot`) is a call too: dynamo steps into it
                calls.setdefault(path, {}).setdefault(name, set()).add(func.name)


def main(wheels: list[str]) -> int:
    defined: dict[str, set[str]] = {}
    calls: dict[str, dict[str, set[str]]] = {}
    read = []
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            names = set(archive.namelist())
            for path in FILES:
                if path in names:
                    read_file(path, archive.read(path).decode(), defined, calls)
        read.append(Path(wheel).name)
    table = {
        "schema": "pcgkit.flashinfer-source/1",
        "read_from": read,
        "files": list(FILES),
        "defined_in": {name: sorted(paths) for name, paths in sorted(defined.items())},
        "callers": {path: {name: sorted(fns) for name, fns in sorted(by.items())} for path, by in sorted(calls.items())},
    }
    OUT.write_text(json.dumps(table, indent=1, sort_keys=False) + "\n")
    print(f"{OUT}: {len(defined)} functions from {', '.join(read)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
