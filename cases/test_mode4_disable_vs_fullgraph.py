"""Mode 4 -- torch.compiler.disable on fp4_quantize is rejected under fullgraph=True.

The seed's second workaround wrapped fp4_quantize in @torch.compiler.disable. A disabled function
is a graph break, and the piecewise runner compiles with fullgraph=True, which forbids graph
breaks: "Skip calling `torch.compiler.disable()`d function". On a real GPU the case also runs the
contrast: with fullgraph=False the same code graph-breaks and runs. Seed: shared/seeds 001.
"""

from pcgkit.fp4.layer import dense_nvfp4_layer, example_activation, fp4_quantize_disabled
from pcgkit.harness.casekit import CaseContext
from pcgkit.harness.tracing import trace
from pcgkit.values.trace import TraceOutcome
from pcgkit.verdicts.modes import MODE4 as MODE


def reproduce(ctx: CaseContext) -> TraceOutcome:
    layer = dense_nvfp4_layer(ctx.torch_device)
    x = example_activation(ctx.torch_device)
    with fp4_quantize_disabled() as replaced:
        ctx.evidence["disabled"] = replaced
        outcome = trace(layer, (x,), fullgraph=True, execute=ctx.execute)
        if ctx.execute:
            contrast = trace(layer, (x,), fullgraph=False, execute=True)
            ctx.evidence["contrast_fullgraph_false"] = {
                "ran": contrast.executed,
                "graph_breaks": contrast.graph_breaks,
                "graph_break_reasons": list(contrast.graph_break_reasons),
                "error": contrast.signature.message_head if contrast.signature else None,
            }
    return outcome


def test_disable_rejected_under_fullgraph(pcgkit_case, target):
    """torch.compiler.disable(fp4_quantize) cannot be called inside a fullgraph=True trace."""
    pcgkit_case.run(MODE, reproduce)
