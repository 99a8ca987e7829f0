"""Upstream fix -- FlashInfer's own `torch.ops.flashinfer.fp4_quantize` (a torch.library.custom_op with a fake).

FlashInfer 0.6.12 added `@torch.library.custom_op("flashinfer::fp4_quantize")` around its Python
`fp4_quantize` (quantization/fp4_quantization.py); up to 0.7.0 the op forwards positionally into a
signature whose 7th parameter is is_global_scale_inversed (broken when run: see the expectations),
0.7.1 forwards by keyword: the argument audit (pcgkit.fp4.argaudit) runs the op's body over a recording
kernel and finds it on any machine, so 0.6.12-0.7.0.post1 are `traces-but-fails`. The public name
`flashinfer.fp4_quantize` is still the plain Python function (mode 1 still reproduces through it),
so the fix only helps a caller that calls the op. This case calls SGLang's dense path with the
public name `flashinfer.fp4_quantize` pointed at the op, as a caller would (only that name: the op's
own body calls the module-level Python function, so repointing that too would make the op call itself,
which a real H200 run showed as a RecursionError), and checks the op's own fake against the wrapper
(simulated kernel) or the real op (GPU). Before 0.6.12 the op does not exist: not-applicable.
"""

import dataclasses
from unittest import mock

from pcgkit.fp4.fixcheck import check_on_gpu, check_simulated
from pcgkit.fp4.layer import dense_nvfp4_layer, example_activation
from pcgkit.harness.casekit import CaseContext, NotApplicable
from pcgkit.harness.tracing import trace
from pcgkit.values.trace import TraceOutcome
from pcgkit.verdicts.fixmodes import FIX_UPSTREAM_OP as MODE

ENTRY = "torch.ops.flashinfer.fp4_quantize"


def upstream_op():
    """torch.ops.flashinfer.fp4_quantize if the installed FlashInfer registers it, else NotApplicable."""
    import flashinfer
    import torch

    try:
        return torch.ops.flashinfer.fp4_quantize
    except (AttributeError, RuntimeError):
        raise NotApplicable(
            f"flashinfer {flashinfer.__version__} registers no torch.ops.flashinfer.fp4_quantize"
        ) from None


def reproduce(ctx: CaseContext) -> TraceOutcome:
    import flashinfer

    original = flashinfer.fp4_quantize
    op = upstream_op()
    layer = dense_nvfp4_layer(ctx.torch_device)
    x = example_activation(ctx.torch_device)
    with mock.patch.object(flashinfer, "fp4_quantize", op):
        ctx.evidence["called_as"] = {"op": "torch.ops.flashinfer.fp4_quantize", "bindings": ["flashinfer.fp4_quantize"]}
        outcome = trace(layer, (x,), fullgraph=True, execute=ctx.execute)
    if not outcome.traced:
        return outcome
    if not outcome.executed:
        return dataclasses.replace(outcome, output=check_simulated(ctx, op, op, ENTRY))
    return dataclasses.replace(outcome, output=check_on_gpu(ctx, original, op, op, x, outcome.output, op, ENTRY))


def test_upstream_op_fix(pcgkit_case, target):
    """Where FlashInfer ships torch.ops.flashinfer.fp4_quantize, calling it traces under fullgraph=True."""
    pcgkit_case.run(MODE, reproduce)
