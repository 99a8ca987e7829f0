"""Attempted fix -- torch.compiler.allow_in_graph(get_fp4_quantization_module).

The seed's investigation tried marking FlashInfer's loader as allowed in the graph. That asks
dynamo to put a *call* to the loader into the FX graph instead of tracing it, but the loader
returns a SimpleNamespace of Python functions (not tensors), and fp4_quantize reaches the JIT
path before it too. The case records what this torch/flashinfer pair actually does; the
expectation is that it is not a fix (verdict `reproduced` = fails the known way).
"""

from pcgkit.fp4.layer import dense_nvfp4_layer, example_activation
from pcgkit.harness.casekit import CaseContext
from pcgkit.harness.tracing import trace
from pcgkit.values.trace import TraceOutcome
from pcgkit.verdicts.fixmodes import FIX_ALLOW_IN_GRAPH as MODE


def reproduce(ctx: CaseContext) -> TraceOutcome:
    import torch
    from flashinfer import fp4_quantization

    loader = fp4_quantization.get_fp4_quantization_module
    layer = dense_nvfp4_layer(ctx.torch_device)
    x = example_activation(ctx.torch_device)
    marked = torch.compiler.allow_in_graph(loader)
    ctx.evidence["allow_in_graph_returned_same_object"] = marked is loader
    try:
        return trace(layer, (x,), fullgraph=True, execute=ctx.execute)
    finally:
        # allow_in_graph is process-global: undo it so later cases trace the loader as shipped.
        from torch._dynamo import trace_rules

        trace_rules._allowed_callable_ids.remove(id(loader))


def test_allow_in_graph_on_loader(pcgkit_case, target):
    """allow_in_graph on get_fp4_quantization_module does not make fullgraph=True trace."""
    pcgkit_case.run(MODE, reproduce)
