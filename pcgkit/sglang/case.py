"""The SGLang-level case: SGLang's own FP4 activation quantize, compiled through SGLang's own wrapper.

Per installed sglang version: the callable `ModelOptFp4LinearMethod.apply` quantizes with on a GPU
family (pcgkit.sglang.dispatch, imported here for real), inside a one-op nn.Module, handed to
`sglang.srt.compilation.compile.install_torch_compiled` with the `fullgraph` value the piecewise
runner passes in that version (read from its source). SGLang's default backend (SGLangBackend)
needs CUDA-only kernels, so `backend_factory` is dynamo's eager backend (or, without a GPU, one
that stops after the graph is built). The trampoline's runtime gate (`set_compiled` /
`is_in_tc_piecewise_cuda_graph`, whose name changes by version) is not reproduced: the case calls
the trampoline's own `_ensure_compiled`, which is SGLang's torch.compile call.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import importlib
from pathlib import Path
from typing import Iterator

from pcgkit.harness.casekit import CaseContext, MissingDependency, NotApplicable
from pcgkit.harness.hardware import SIMULATED_SM90
from pcgkit.harness.tracing import observe
from pcgkit.harness.versions import installed_version
from pcgkit.sglang.cudastub import STUBBED_PACKAGES
from pcgkit.sglang.dispatch import SM120, Fp4Binding
from pcgkit.values.signature import Signature
from pcgkit.values.trace import TraceOutcome
from pcgkit.verdicts.modes import Mode, is_dynamo_exception

# Files holding the piecewise runner's install_torch_compiled call, oldest layout first.
RUNNER_FILES = (
    "srt/model_executor/piecewise_cuda_graph_runner.py",
    "srt/model_executor/runner_backend/tc_piecewise_cuda_graph_backend.py",
)


def _fails_inside_the_quantize_path(sig: Signature) -> str | None:
    # What SGLang's wrapper surfaces is dynamo's Unsupported from inside the quantize callable
    # (FlashInfer's JIT loader on SM120 in the affected releases); any other failure is a drift.
    if (why := is_dynamo_exception(sig)) is not None:
        return why
    if sig.innermost_library_frame is None:
        return "no FlashInfer frame in the failure: it did not fail inside fp4_quantize's loader"
    return None


def _mode(family: str, title: str) -> Mode:
    return Mode(
        id=f"sglang-compile-{family}",
        title=title,
        known_signature="Unsupported inside FlashInfer under SGLang's install_torch_compiled (fullgraph=True)",
        seed="issue 5: SGLang's own compile wrapper and FP4 dispatch per version",
        matches=_fails_inside_the_quantize_path,
    )


SGLANG_COMPILE_SM120 = _mode(SM120, "SGLang install_torch_compiled over its FP4 activation quantize (SM120)")
SGLANG_COMPILE_OTHER = _mode("sm90", "SGLang install_torch_compiled over its FP4 activation quantize (non-SM120: SM90)")


def runner_fullgraph_from_source(source: str) -> bool | None:
    """The `fullgraph` the runner passes to install_torch_compiled (a literal, or its parameter's default). Pure."""
    tree = ast.parse(source)
    for fn in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        defaults = dict(zip([a.arg for a in fn.args.args][-len(fn.args.defaults) or len(fn.args.args):],
                            fn.args.defaults))
        defaults.update({a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None})
        for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
            if ast.unparse(call.func).split(".")[-1] != "install_torch_compiled":
                continue
            value = next((k.value for k in call.keywords if k.arg == "fullgraph"), None)
            if isinstance(value, ast.Name) and value.id in defaults:
                value = defaults[value.id]
            if isinstance(value, ast.Constant) and isinstance(value.value, bool):
                return value.value
    return None


def runner_fullgraph(root: Path) -> tuple[bool, str]:
    """(fullgraph, where it was read) for the installed sglang; NotApplicable where no runner passes one."""
    for rel in RUNNER_FILES:
        path = root / rel
        if path.is_file() and (value := runner_fullgraph_from_source(path.read_text())) is not None:
            return value, f"sglang/{rel}"
    raise NotApplicable("no piecewise runner calls install_torch_compiled with a fullgraph value in this sglang")


@contextlib.contextmanager
def family_device(ctx: CaseContext, family: str) -> Iterator[None]:
    """Run the block as `family`: SM120 as the target gives it; SM90 simulated on the simulated target."""
    if not ctx.simulated:
        if family == SM120 and ctx.device.family != 12:
            raise NotApplicable(f"the SM120 dispatch needs an SM120 device; this is {ctx.device.label}")
        if family != SM120 and ctx.device.family == 12:
            raise NotApplicable(f"the non-SM120 dispatch needs a non-SM120 device; this is {ctx.device.label}")
    if not ctx.simulated or family == SM120:
        yield
        return
    from pcgkit.harness.simulate import simulated_sm120

    ctx.device = SIMULATED_SM90
    with simulated_sm120(capability=SIMULATED_SM90.capability) as simulation:
        ctx.evidence["simulated_queries_sm90"] = list(simulation.replaced)
        yield


def import_binding(binding: Fp4Binding):
    """The callable itself, imported from where the version binds it."""
    try:
        module = importlib.import_module(binding.module)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in STUBBED_PACKAGES:
            raise MissingDependency(
                f"{binding.family} path calls {binding.qualname}; {exc.name} (CUDA-only) is not installed here"
            ) from exc
        raise
    fn = getattr(module, binding.attr, None)
    if fn is None:
        raise NotApplicable(f"{binding.qualname} is None in this environment (its import guard failed)")
    return fn


def torch_op_name(fn) -> str | None:
    """The torch op behind `fn` when it is one (OpOverload(Packet), torch.library CustomOpDef)."""
    import torch

    if isinstance(fn, (torch._ops.OpOverloadPacket, torch._ops.OpOverload)):
        return str(fn)
    inner = getattr(fn, "_opoverload", None)  # torch.library.custom_op's CustomOpDef
    return str(inner) if inner is not None else None


def build_module(quantize, torch_device: str):
    """One-op module whose forward is apply()'s quantize call: `quantize(x, layer.input_scale_inv)`."""
    import torch

    class SGLangFp4ActivationQuant(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("input_scale_inv", torch.ones(1, dtype=torch.float32, device=torch_device))

        def forward(self, x: torch.Tensor):  # annotation: SGLang infers the dynamic dim from it
            return quantize(x, self.input_scale_inv)

    # The annotation as the class object, not the string this module's `from __future__ import annotations`
    # makes it: install_torch_compiled in sglang 0.5.4.post3-0.5.5 accepts only `ann is torch.Tensor`
    # ("No dynamic dims inferred"; 0.5.5.post1 also accepts the string). Measured 2026-12-01, matrix cells.
    SGLangFp4ActivationQuant.forward.__annotations__["x"] = torch.Tensor
    return SGLangFp4ActivationQuant()


def ensure_compiled_of(module):
    """install_torch_compiled's own `_ensure_compiled` (from the trampoline's closure)."""
    trampoline = module.forward.__func__
    cells = dict(zip(trampoline.__code__.co_freevars, (c.cell_contents for c in trampoline.__closure__ or ())))
    if "_ensure_compiled" not in cells:
        raise NotApplicable("install_torch_compiled in this sglang has no _ensure_compiled step")
    return cells["_ensure_compiled"]


def reproduce_family(ctx: CaseContext, family: str) -> TraceOutcome:
    """The whole SGLang-level case for one GPU family."""
    version = installed_version("sglang")
    if version is None:
        raise NotApplicable("sglang is not installed in this environment (the matrix's sglang cells run this case)")
    from pcgkit.fp4.layer import example_activation
    from pcgkit.sglang import facts as sglang_facts
    from pcgkit.sglang.dispatch import installed_dispatch

    root = sglang_facts.sglang_root()
    assert root is not None  # installed_dispatch below raises first when sglang is missing
    binding = installed_dispatch()[family]
    fullgraph, where = runner_fullgraph(root)
    ctx.evidence["sglang_dispatch"] = binding.to_dict()
    ctx.evidence["fullgraph"] = {"value": fullgraph, "read_from": where}
    with family_device(ctx, family):
        from sglang.srt.compilation.compile import install_torch_compiled

        quantize = import_binding(binding)
        ctx.evidence["callable"] = f"{getattr(quantize, '__module__', '?')}.{getattr(quantize, '__qualname__', quantize)}"
        ctx.evidence["torch_op"] = torch_op_name(quantize)
        module = build_module(quantize, ctx.torch_device)
        x = example_activation(ctx.torch_device)

        def invoke(backend):
            install_torch_compiled(module, backend_factory=backend, fullgraph=fullgraph)
            return ensure_compiled_of(module)(module, x)

        outcome = observe(invoke, execute=ctx.execute)
    if outcome.traced and family == SM120:
        return dataclasses.replace(outcome, output=_sm120_call_path(ctx, quantize, outcome))
    return outcome


def _sm120_call_path(ctx: CaseContext, quantize, outcome: TraceOutcome):
    """SGLang's SM120 quantize callable traced clean (0.5.12+: SGLang's own op over FlashInfer): run its call path
    with the caller's arguments (argument audit + fake execution over FlashInfer's Python, pcgkit.fp4.argaudit)."""
    from pcgkit.fp4.fixcheck import check_call_path, numbers_not_run
    from pcgkit.values.runcheck import RunCheck

    name = ctx.evidence.get("torch_op") or ctx.evidence.get("callable") or "SGLang's quantize"
    run_failure, ran = check_call_path(ctx, quantize, name)
    if outcome.executed:
        ran = f"the real call path on {ctx.device.label}; {ran}"
        ctx.evidence["numbers"] = {"checked": False, "status": "not checked by this case (the fix cases check FlashInfer's)"}
        numbers = "numbers not checked by this case"
    else:
        numbers = numbers_not_run(ctx, "no GPU (simulated SM120)")
    return RunCheck(compared=False, problem=None, run_failure=run_failure, ran=ran, numbers=numbers)


def facts_evidence() -> dict:
    """Per-version facts for a result's evidence (and the report): flags + dispatch, or why not read."""
    from pcgkit.sglang import facts as sglang_facts
    from pcgkit.sglang.dispatch import installed_dispatch

    facts: dict = {"sglang": installed_version("sglang")}
    readers = {"piecewise": lambda: sglang_facts.piecewise_flags().to_dict(),
               "fp4_dispatch": lambda: {fam: b.to_dict() for fam, b in installed_dispatch().items()}}
    for key, read in readers.items():
        try:
            facts[key] = read()
        except Exception as exc:  # facts are evidence: a failure to read them is recorded, not fatal
            facts[key] = {"error": f"{type(exc).__name__}: {exc}"}
    return facts

