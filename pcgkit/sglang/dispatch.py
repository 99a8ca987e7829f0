"""Which callable SGLang's ModelOpt FP4 linear method quantizes activations with, per GPU family.

`ModelOptFp4LinearMethod.apply` calls a module-level name (`fp4_quantize`, or `scaled_fp4_quant`
in 0.5.3/0.5.4) that modelopt_quant.py binds *at import time* behind checks such as
`is_sm120_supported()` and `is_cuda()`. Those checks only answer on a CUDA machine and the module's
import chain is heavy (sgl_kernel, transformers), so the binding is read from the installed source
with `ast`, branch by branch, following `from sglang... import name` into the defining module.
The case then imports exactly that binding for real. Pure except `installed_dispatch`.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

SM120 = "sm120"
OTHER = "other"  # any non-SM120 CUDA family (the case simulates SM90)
LINEAR_METHOD = "ModelOptFp4LinearMethod"
MODELOPT_MODULE = "sglang.srt.layers.quantization.modelopt_quant"
# calls that register a Python function as a torch op (sglang.srt.utils.custom_op, torch.library)
OP_REGISTRARS = ("register_custom_op_from_extern", "register_custom_op", "custom_op")


@dataclasses.dataclass(frozen=True)
class Fp4Binding:
    """Where the name apply() calls comes from on one GPU family."""

    family: str  # SM120 | OTHER
    name: str  # the name apply() calls
    module: str  # module to import the callable from
    attr: str  # attribute of `module`
    defined_in: str  # module whose source binds it ("...modelopt_quant" or "...fp4_utils")
    torch_op: str | None  # how it is registered as a torch op, read from the source; None: not by sglang
    fallbacks: tuple[str, ...] = ()  # `except ImportError:` alternatives, "module.attr"

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.attr}"

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["fallbacks"] = list(self.fallbacks)
        return data


class DispatchNotFound(LookupError):
    """The source does not have the shape this reader understands (a new release: look at it)."""


def quantize_callee(source: str) -> str:
    """The name apply() calls to produce `x_fp4, x_scale_interleaved`. Pure."""
    tree = ast.parse(source)
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == LINEAR_METHOD):
        for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "apply"):
            for node in ast.walk(fn):
                if (isinstance(node, ast.Assign) and ast.unparse(node).startswith("x_fp4, x_scale_interleaved = ")
                        and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)):
                    return node.value.func.id
    raise DispatchNotFound(f"no `x_fp4, x_scale_interleaved = NAME(...)` in {LINEAR_METHOD}.apply")


def _bindings(stmts: list[ast.stmt], name: str, family: str) -> list[ast.stmt]:
    """Statements that bind `name`, in the order a CUDA machine of `family` executes them.

    An `if` on SM120 takes the branch for the family; any other `if` (is_cuda(), ...) is taken as on
    a CUDA machine; a `try` body comes first and its ImportError handlers after it (fallbacks).
    """
    found: list[ast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, ast.If):
            if "sm120" in ast.unparse(stmt.test):
                negated = isinstance(stmt.test, ast.UnaryOp) and isinstance(stmt.test.op, ast.Not)
                take_body = (family == SM120) != negated
                found += _bindings(stmt.body if take_body else stmt.orelse, name, family)
            elif ast.unparse(stmt.test) != "TYPE_CHECKING":
                found += _bindings(stmt.body, name, family)
        elif isinstance(stmt, ast.Try):
            found += _bindings(stmt.body, name, family)
            for handler in stmt.handlers:
                found += _bindings(handler.body, name, family)
        elif isinstance(stmt, ast.ImportFrom) and any((a.asname or a.name) == name for a in stmt.names):
            found.append(stmt)
        elif isinstance(stmt, (ast.Assign, ast.FunctionDef)):
            targets = [stmt.name] if isinstance(stmt, ast.FunctionDef) else [
                getattr(t, "id", None) for t in stmt.targets]
            is_placeholder = isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant)
            if name in targets and not is_placeholder:
                found.append(stmt)
    return found


def _registrar(stmt: ast.stmt) -> str | None:
    """'register_custom_op_from_extern(op_name=...)' when the binding registers a torch op."""
    calls = [stmt.value] if isinstance(stmt, ast.Assign) else list(getattr(stmt, "decorator_list", []))
    for call in calls:
        func = call.func if isinstance(call, ast.Call) else call
        callee = ast.unparse(func).split(".")[-1]
        if callee in OP_REGISTRARS:
            op_name = next((ast.unparse(k.value) for k in getattr(call, "keywords", []) if k.arg == "op_name"), "")
            return f"{ast.unparse(func)}({'op_name=' + op_name if op_name else ''})"
    return None


def resolve(name: str, module: str, sources: dict[str, str], family: str) -> Fp4Binding:
    """Follow `name` from `module` through sglang's own modules to where it is bound. Pure.

    `sources` maps sglang module names to their text (the reader `.get`s only what it follows).
    """
    text = sources.get(module)
    if text is None:
        raise DispatchNotFound(f"source of {module} not available")
    found = _bindings(ast.parse(text).body, name, family)
    if not found:
        raise DispatchNotFound(f"{module} does not bind {name} on {family}")
    primary, rest = found[0], found[1:]
    fallbacks = tuple(
        f"{s.module}.{next(a.name for a in s.names if (a.asname or a.name) == name)}"
        for s in rest if isinstance(s, ast.ImportFrom)
    )
    if isinstance(primary, ast.ImportFrom):
        attr = next(a.name for a in primary.names if (a.asname or a.name) == name)
        if primary.module and primary.module.startswith("sglang.") and sources.get(primary.module) is not None:
            inner = resolve(attr, primary.module, sources, family)
            return dataclasses.replace(inner, family=family, name=name, fallbacks=inner.fallbacks + fallbacks)
        torch_op = None
        if primary.module == "sgl_kernel" and f'"sgl_kernel::{attr}"' in text:
            torch_op = f"torch.ops.sgl_kernel.{attr} (sglang registers its fake: 'sgl_kernel::{attr}')"
        return Fp4Binding(family, name, primary.module or "", attr, module, torch_op, fallbacks)
    return Fp4Binding(family, name, module, name, module, _registrar(primary), fallbacks)


def dispatch_from_sources(sources: dict[str, str]) -> dict[str, Fp4Binding]:
    """{family: binding} for SM120 and a non-SM120 family. Pure."""
    text = sources.get(MODELOPT_MODULE)
    if text is None:
        raise DispatchNotFound(f"source of {MODELOPT_MODULE} not available")
    name = quantize_callee(text)
    return {family: resolve(name, MODELOPT_MODULE, sources, family) for family in (SM120, OTHER)}


class _SourceTree:
    """sglang module name -> source text, read from an installed package root when asked."""

    def __init__(self, root: Path):
        self.root = root

    def get(self, module: str, default=None):
        path = self.root.parent.joinpath(*module.split(".")).with_suffix(".py")
        return path.read_text(errors="replace") if path.is_file() else default


def installed_dispatch() -> dict[str, Fp4Binding]:
    """The installed sglang's FP4 activation-quantize binding per family (LookupError if none)."""
    from pcgkit.sglang.facts import sglang_root

    root = sglang_root()
    if root is None:
        raise LookupError("sglang is not installed in this environment")
    return dispatch_from_sources(_SourceTree(root))  # type: ignore[arg-type]  # read lazily: only .get is asked
