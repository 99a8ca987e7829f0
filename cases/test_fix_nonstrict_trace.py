"""Attempted fix -- torch.compiler.nonstrict_trace(fp4_quantize) under fullgraph=True.

PyTorch's dynamo hint for code it cannot trace now recommends `torch.compiler.nonstrict_trace` for
extension code: dynamo does not trace the marked function's body, it records one opaque call and
runs the body non-strictly (on fake tensors) to learn the output. Whether that keeps FlashInfer's
JIT loader (nvcc subprocess, lru_cache, datetime) out of a fullgraph trace is measured here, per
torch; a torch without the public name uses the private `torch._dynamo.nonstrict_trace` (evidence
`api` says which), one with neither is not-applicable. Issue 25, item 7.
"""

import dataclasses
import importlib

from pcgkit.fp4.fixcheck import check_on_gpu, check_simulated
from pcgkit.fp4.layer import dense_nvfp4_layer, example_activation, fp4_quantize_wrapped
from pcgkit.harness.casekit import CaseContext, NotApplicable
from pcgkit.harness.tracing import TraceOutcome, trace
from pcgkit.verdicts.fixmodes import FIX_NONSTRICT_TRACE as MODE

# Where each torch spells the non-strict tracing marker, the public name first. PyTorch's dynamo
# hint for code it cannot trace recommends `torch.compiler.nonstrict_trace`; older releases have
# only the private `torch._dynamo.nonstrict_trace`, and older ones neither.
NONSTRICT_TRACE_APIS = ("torch.compiler.nonstrict_trace", "torch._dynamo.nonstrict_trace")


def nonstrict_trace_api() -> tuple[str, object] | None:
    """(dotted name, the decorator) of the first NONSTRICT_TRACE_APIS entry this torch has; None if none."""
    for dotted in NONSTRICT_TRACE_APIS:
        module_name, _, attr = dotted.rpartition(".")
        decorator = getattr(importlib.import_module(module_name), attr, None)
        if decorator is not None:
            return dotted, decorator
    return None


def reproduce(ctx: CaseContext) -> TraceOutcome:
    import torch

    found = nonstrict_trace_api()
    if found is None:
        raise NotApplicable(f"torch {torch.__version__} has neither torch.compiler.nonstrict_trace "
                            "nor torch._dynamo.nonstrict_trace")
    import flashinfer

    api, nonstrict_trace = found
    original = flashinfer.fp4_quantize
    ctx.evidence["api"] = api
    layer = dense_nvfp4_layer(ctx.torch_device)
    x = example_activation(ctx.torch_device)
    with fp4_quantize_wrapped(nonstrict_trace) as replaced:
        ctx.evidence["wrapped"] = replaced
        outcome = trace(layer, (x,), fullgraph=True, execute=ctx.execute)
    if not outcome.traced:
        return outcome
    entry, name = nonstrict_trace(original), f"{api}(flashinfer.fp4_quantize)"  # a clean trace must also run
    if not outcome.executed:
        return dataclasses.replace(outcome, output=check_simulated(ctx, None, entry, name))
    return dataclasses.replace(outcome, output=check_on_gpu(ctx, original, None, None, x, outcome.output, entry, name))


def test_nonstrict_trace_on_fp4_quantize(pcgkit_case, target):
    """nonstrict_trace(fp4_quantize) under fullgraph=True: the verdict this torch gives, measured."""
    pcgkit_case.run(MODE, reproduce)
