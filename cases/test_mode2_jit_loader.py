"""Mode 2 -- the seed's first workaround only moves the failure deeper into JIT loading.

The seed patched flashinfer.jit.cpp_ext.get_cuda_version to answer from torch.version.cuda
instead of running nvcc. The trace then fails further on in FlashInfer's JIT loader, and WHERE
depends on the process, not only on the release: if FlashInfer has not yet registered the fp4
module's JIT spec in this process, the trace stops in `JitSpecRegistry.register` at
`datetime.now()`; once the spec is registered (any eager call before the compile, e.g. a warm-up
forward), it stops at `JitSpec.is_aot` (`Path.exists` -> `posix.stat`, the seed's pathlib stat).
The case measures both, in this order, and records each in the result's evidence
(`jit_spec_condition`); the verdict is the first (a process where the spec is not registered).
Seed: shared/seeds 001, 004.
"""

import contextlib
import importlib
import inspect
import re

from pcgkit.fp4.layer import dense_nvfp4_layer, example_activation
from pcgkit.harness.casekit import CaseContext, NotApplicable
from pcgkit.harness.tracing import trace
from pcgkit.util.patching import patched_everywhere
from pcgkit.values.trace import TraceOutcome
from pcgkit.verdicts.modes import MODE2 as MODE

_GEN_MODULE = re.compile(r"^gen_\w*fp4\w*_module$")


def _where(outcome: TraceOutcome) -> dict:
    sig = outcome.signature
    if outcome.traced or sig is None:
        return {"traced": outcome.traced, "innermost_frame": None, "skipped_callable": None, "graph_break_id": None}
    return {"traced": False, "innermost_frame": str(sig.innermost_library_frame) if sig.innermost_library_frame else None,
            "skipped_callable": sig.skipped_callable, "graph_break_id": sig.graph_break_id}


@contextlib.contextmanager
def _fp4_specs_unregistered():
    """The process state before FlashInfer's first fp4 call: no fp4 JIT spec in the registry (restored after)."""
    from flashinfer.jit import core

    registry = getattr(core, "jit_spec_registry", None)
    if registry is None or not hasattr(registry, "_specs"):
        yield False
        return
    specs, times = dict(registry._specs), dict(getattr(registry, "_creation_times", {}))
    for name in [n for n in specs if "fp4" in n]:
        registry._specs.pop(name, None)
        getattr(registry, "_creation_times", {}).pop(name, None)
    try:
        yield True
    finally:
        registry._specs.clear()
        registry._specs.update(specs)
        if hasattr(registry, "_creation_times"):
            registry._creation_times.clear()
            registry._creation_times.update(times)


def _register_eagerly(outcome: TraceOutcome) -> str | None:
    """Call, outside any trace, the fp4 module generator the failed trace passed through (it registers the
    spec, as a warm-up forward would); its qualified name, or None when the chain names none."""
    frames = outcome.signature.frame_chain if outcome.signature else ()
    for frame in reversed(frames):  # innermost first: the per-arch generator that takes no arguments
        if not (_GEN_MODULE.match(frame.function) and frame.file.startswith("flashinfer/")):
            continue
        module = importlib.import_module(frame.file.removesuffix(".py").replace("/", "."))
        generator = getattr(module, frame.function)
        if any(p.default is inspect.Parameter.empty for p in inspect.signature(generator).parameters.values()):
            continue  # the shared builder (nvcc flags, arch) is reached through its per-arch caller
        generator()
        return f"{module.__name__}.{frame.function}"
    return None


def reproduce(ctx: CaseContext) -> TraceOutcome:
    import torch
    from flashinfer.jit import cpp_ext
    from packaging.version import Version

    original = getattr(cpp_ext, "get_cuda_version", None)
    if original is None:
        raise NotApplicable("flashinfer.jit.cpp_ext has no get_cuda_version to patch")
    # Computed outside the trace: the workaround must not itself put work under dynamo.
    answer = Version(torch.version.cuda) if torch.version.cuda else Version("12.8")
    ctx.evidence["get_cuda_version_answer"] = (
        f"{answer} (torch.version.cuda)" if torch.version.cuda else f"{answer} (fixed: torch has no CUDA)"
    )

    def get_cuda_version_from_torch():
        return answer

    layer = dense_nvfp4_layer(ctx.torch_device)
    x = example_activation(ctx.torch_device)
    with patched_everywhere(original, get_cuda_version_from_torch, "flashinfer") as replaced:
        ctx.evidence["patched"] = replaced
        with _fp4_specs_unregistered() as cleared:
            first = trace(layer, (x,), fullgraph=True, execute=ctx.execute)
            condition = {"not_registered": {**_where(first), "registry_cleared": cleared}}
            try:
                registered_by = _register_eagerly(first)
            except Exception as exc:  # noqa: BLE001 - the second measurement is evidence, never the verdict
                registered_by, condition["registered_error"] = None, f"{type(exc).__name__}: {exc}"
            if registered_by:
                condition["registered"] = {**_where(trace(layer, (x,), fullgraph=True, execute=ctx.execute)),
                                           "registered_by": registered_by}
        ctx.evidence["jit_spec_condition"] = condition
        return first


def test_failure_moves_into_jit_loader(pcgkit_case, target):
    """With get_cuda_version answered from torch, the trace still fails inside flashinfer/jit/: at register when
    the fp4 JIT spec is not yet registered in the process, at is_aot once it is (both recorded)."""
    pcgkit_case.run(MODE, reproduce)
