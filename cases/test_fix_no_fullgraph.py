"""Fix -- torch.compiler.disable(fp4_quantize) with fullgraph=False.

Mode 4 shows disable is rejected under fullgraph=True. With fullgraph=False the disabled call is a
graph break: dynamo compiles the code around it and runs fp4_quantize eagerly. The price is the
graph break itself (a piecewise CUDA graph runner wants one graph). Evidence: dynamo's own
graph-break count and reasons (torch._dynamo.utils.counters["graph_break"], via pcgkit.harness.tracing).

Simulated target: the graph is compiled but never run (no kernel on a CPU), so the accounting is
that of the trace up to the first compiled graph's call; on a real GPU the function also runs
and torch._dynamo.explain's break count is recorded beside the counters. Either way the disabled
function's call path is run with the caller's arguments (argument audit, pcgkit.fp4.argaudit).
"""

import dataclasses

from pcgkit.fp4.fixcheck import check_on_gpu, check_simulated
from pcgkit.fp4.layer import dense_nvfp4_layer, example_activation, fp4_quantize_disabled
from pcgkit.harness.casekit import CaseContext
from pcgkit.harness.tracing import trace
from pcgkit.values.trace import TraceOutcome
from pcgkit.verdicts.fixmodes import FIX_NO_FULLGRAPH as MODE

ENTRY = "torch.compiler.disable(flashinfer.fp4_quantize)"


def reproduce(ctx: CaseContext) -> TraceOutcome:
    import flashinfer
    import torch

    original = flashinfer.fp4_quantize
    layer = dense_nvfp4_layer(ctx.torch_device)
    x = example_activation(ctx.torch_device)
    with fp4_quantize_disabled() as replaced:
        ctx.evidence["disabled"] = replaced
        outcome = trace(layer, (x,), fullgraph=False, execute=ctx.execute)
        ctx.evidence["graph_break_accounting"] = {
            "source": "torch._dynamo.utils.counters['graph_break']" + (" (simulated trace)" if ctx.simulated else ""),
            "graph_breaks": outcome.graph_breaks,
            "reasons": list(outcome.graph_break_reasons),
        }
        if outcome.executed:
            torch._dynamo.reset()
            explained = torch._dynamo.explain(layer)(x)
            ctx.evidence["explain"] = {
                "graph_count": explained.graph_count,
                "graph_break_count": explained.graph_break_count,
                "break_reasons": [str(b.reason)[:200] for b in explained.break_reasons],
            }
            torch._dynamo.reset()
    if not outcome.traced:
        return outcome
    entry = torch.compiler.disable(original)  # the caller's call path: the disabled function, run eagerly
    if not outcome.executed:
        return dataclasses.replace(outcome, output=check_simulated(ctx, None, entry, ENTRY))
    return dataclasses.replace(outcome, output=check_on_gpu(ctx, original, None, None, x, outcome.output, entry, ENTRY))


def test_disable_with_fullgraph_false(pcgkit_case, target):
    """disable(fp4_quantize) under fullgraph=False traces with a graph break (and runs on a GPU)."""
    pcgkit_case.run(MODE, reproduce)
