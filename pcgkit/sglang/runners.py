"""Which runner an SGLang release's piecewise (prefill) capture builds, read from the release's own code. Pure.

Two generations select SGLang's breakable CUDA graph runner (segmented capture, no torch.compile) instead of the
torch.compile piecewise runner:
- a switch inside piecewise capture (0.5.11-0.5.13.post1): `ModelRunner.init_piecewise_cuda_graphs` has
  `if self.server_args.enable_breakable_cuda_graph: ... = BreakableCudaGraphRunner(self)`;
- a prefill backend (0.5.14+): `resolve_prefill_backend` builds `BreakableCudaGraphBackend` when the resolved
  `cuda_graph_config.prefill.backend` is `Backend.BREAKABLE` (`--cuda-graph-backend-prefill=breakable`, its
  deprecated alias `--enable-breakable-cuda-graph` in 0.5.14, the CUDA default from 0.5.15).
And whether the breakable runner serves a prefill of more than one request: 0.5.11's `can_run` returns False for
`forward_batch.batch_size > 1` ("the caller falls back to the eager extend path").

`runner_facts_from_texts` reads those places with `ast` from a release's files (a wheel's, or the installed
package's) and records each finding with its file:line, so no per-release runner statement is typed by hand.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import Iterable, Mapping

from pcgkit.sglang.facts import prefill_default_from_source

SWITCH = "switch"  # a boolean ServerArgs field swaps the runner inside piecewise capture
PREFILL_BACKEND = "prefill-backend"  # the resolved prefill backend picks it
BREAKABLE_CLASS = re.compile(r"^Breakable\w*(Runner|Backend)$")
# Classes whose `can_run*` a breakable replay passes through: the breakable runner/backend itself, and (0.5.14+)
# the prefill runner that hosts the backend.
GATE_CLASS = re.compile(r"^(Breakable\w*(Runner|Backend)|Prefill\w*CudaGraphRunner)$")
PHASE_FUNCTION = re.compile(r"prefill|piecewise")
EXECUTOR = "sglang/srt/model_executor/"
GRAPH_CONFIG = "sglang/srt/model_executor/cuda_graph_config.py"
_PREFILL_ALLOWED = re.compile(r"Phase\.PREFILL\s*:\s*\(([^)]*)\)")


@dataclasses.dataclass(frozen=True)
class RunnerFacts:
    """One release's answer to "which runner does piecewise/prefill capture build, and what does it refuse"."""

    selector: str | None  # SWITCH | PREFILL_BACKEND | None (no breakable runner in this release)
    breakable_when: str | None  # the release's own condition, as written (ast.unparse)
    switch_field: str | None  # SWITCH only: the ServerArgs field the condition reads
    selected_at: str | None  # file:line of that condition
    prefill_default: str | None  # PREFILL_BACKEND: the CUDA default prefill backend (cuda_graph_config.py)
    prefill_backends: tuple[str, ...]  # PREFILL_BACKEND: what Phase.PREFILL allows (ALLOWED_BACKENDS_PER_PHASE)
    one_request_only: bool | None  # the breakable path refuses prefills of batch_size > 1 (None: no runner)
    one_request_at: str  # file:line of the refusal, or the can_run* functions read that have none

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["prefill_backends"] = list(self.prefill_backends)
        return data

    @classmethod
    def from_dict(cls, data: Mapping) -> RunnerFacts:
        fields = {f.name for f in dataclasses.fields(cls)}
        if set(data) - fields:
            raise ValueError(f"not RunnerFacts fields: {sorted(set(data) - fields)}")
        return cls(**{**data, "prefill_backends": tuple(data.get("prefill_backends", ()))})


def _constructs_breakable(nodes: Iterable[ast.stmt]) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and BREAKABLE_CLASS.match(n.func.id)
               for stmt in nodes for n in ast.walk(stmt))


def _server_args_field(test: ast.expr) -> str | None:
    """`self.server_args.X` (or `server_args.X`) -> X; anything else None."""
    if isinstance(test, ast.Attribute) and re.fullmatch(r"(.+\.)?server_args", ast.unparse(test.value)):
        return test.attr
    return None


def _selection(path: str, tree: ast.AST) -> tuple[str, str, str | None, str] | None:
    """(selector, condition, switch field, file:line) of the first `if` whose body builds a breakable runner, in a
    function about prefill or piecewise capture (the decode graphs have their own resolver, not this bug's)."""
    capture = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and PHASE_FUNCTION.search(f.name)]
    for node in (n for f in capture for n in ast.walk(f)):
        if isinstance(node, ast.If) and _constructs_breakable(node.body):
            condition = ast.unparse(node.test)
            field = _server_args_field(node.test)
            if field is not None:
                return SWITCH, condition, field, f"{path}:{node.lineno}"
            if "BREAKABLE" in condition:
                return PREFILL_BACKEND, condition, None, f"{path}:{node.lineno}"
    return None


def _refuses_many_requests(function: ast.FunctionDef) -> int | None:
    """The line of `if <x>.batch_size > 1: return False` in this function, else None."""
    for node in ast.walk(function):
        if (isinstance(node, ast.If) and re.fullmatch(r".+\.batch_size > 1", ast.unparse(node.test))
                and any(ast.unparse(s) == "return False" for s in node.body)):
            return node.lineno
    return None


def _gates(path: str, tree: ast.AST) -> Iterable[tuple[str, ast.FunctionDef]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and GATE_CLASS.match(node.name):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name.startswith("can_run"):
                    yield f"{path}:{item.lineno} {node.name}.{item.name}", item


def runner_facts_from_texts(texts: Mapping[str, str]) -> RunnerFacts:
    """The runner facts from a release's files (path inside the package root, e.g. 'sglang/srt/...' -> text). Pure."""
    selection = None
    gates: list[tuple[str, ast.FunctionDef]] = []
    for path in sorted(p for p in texts if p.startswith(EXECUTOR) and p.endswith(".py")):
        if "Breakable" not in texts[path] and "PrefillCudaGraphRunner" not in texts[path]:
            continue
        try:
            tree = ast.parse(texts[path])
        except SyntaxError:
            continue
        selection = selection or _selection(path, tree)
        gates += list(_gates(path, tree))
    config = texts.get(GRAPH_CONFIG, "")
    allowed = _PREFILL_ALLOWED.search(config)
    backends = tuple(name.lower() for name in re.findall(r"Backend\.([A-Z_]+)", allowed.group(1))) if allowed else ()
    default = prefill_default_from_source(config) if config else None
    if selection is None:
        return RunnerFacts(None, None, None, None, default, backends, None, "no breakable runner in this release")
    selector, condition, field, where = selection
    refusal = next((f"{label.split(' ')[0].rsplit(':', 1)[0]}:{line} ({label.split(' ')[1]})"
                    for label, fn in gates if (line := _refuses_many_requests(fn)) is not None), None)
    read = "; ".join(label for label, _fn in gates) or "no can_run* found"
    return RunnerFacts(selector, condition, field, where, default, backends, refusal is not None,
                       refusal or f"no batch_size > 1 refusal in {read}")
