"""Fix -- flashinfer.fp4_quantize behind torch.library.custom_op with a faithful register_fake.

Dynamo records one `pcgkit::fp4_quantize` node and asks the fake (pcgkit/fp4/custom_op.py) for
output shapes, so FlashInfer's JIT loader never runs under trace: fullgraph=True traces.

FlashInfer 0.6.1 (and 0.7.4, the newest release read) cannot give this itself: its
`register_custom_op` / `register_fake_op` are `lambda x: x` in both branches, so
`fp4_quantize_sm100` is never a torch op, and its dead `_fake_fp4_quantize_sm100` says int64 /
int32 of M*K/16 scales whatever the layout (the op returns uint8 and pads the swizzled layout).

Everywhere, the op's call path is run with the caller's arguments (argument audit + fake execution,
pcgkit.fp4.argaudit). Simulated, the case checks the fake's shapes/dtypes against the installed FlashInfer's own
Python wrapper with an inert kernel (pcgkit.fp4.fake_shapes: the release decides the scale layout;
0.6.8 started padding swizzled columns). On a real GPU it (a) compares the fake with the real op over
SHAPE_GRID x both scale layouts, (b) runs torch.library.opcheck on CUDA tensors, and (c) checks
the compiled result is bit-identical to eager. (c) and opcheck's value comparison are only
meaningful where FlashInfer's quantize kernel has a body: in 0.6.1 `quantize_with_block_size` is
compiled empty unless __CUDA_ARCH__ >= 1000, so on SM90 (H200) its outputs are uninitialized.
"""

import dataclasses

from pcgkit.fp4.fixcheck import check_on_gpu, check_simulated
from pcgkit.fp4.layer import dense_nvfp4_layer, example_activation
from pcgkit.harness.casekit import CaseContext
from pcgkit.harness.tracing import trace
from pcgkit.util.patching import patched_everywhere
from pcgkit.values.trace import TraceOutcome
from pcgkit.verdicts.fixmodes import FIX_CUSTOM_OP as MODE


def flashinfer_registers_torch_ops() -> bool:
    """Whether the installed FlashInfer's register_custom_op really registers (an upstream fix would).

    In flashinfer 0.6.1 and 0.7.4 both branches of flashinfer.utils.register_custom_op return
    `lambda x: x`: fp4_quantize_sm100 and its fake are never registered with torch.library.
    """
    from flashinfer import utils

    def probe(x: object) -> object:  # never called: only its identity matters
        raise AssertionError("probe only")

    try:
        return utils.register_custom_op("pcgkit_probe::never_called", mutates_args=())(probe) is not probe
    except Exception:  # a real registration that rejected the probe still means "it registers"
        return True


def reproduce(ctx: CaseContext) -> TraceOutcome:
    import flashinfer

    from pcgkit.fp4.custom_op import OP_NAME, fp4_quantize_fake, fp4_quantize_op

    original = flashinfer.fp4_quantize
    op = fp4_quantize_op()  # binds the real fp4_quantize before the name is repointed below
    ctx.evidence["flashinfer_registers_torch_ops"] = flashinfer_registers_torch_ops()
    layer = dense_nvfp4_layer(ctx.torch_device)
    x = example_activation(ctx.torch_device)
    with patched_everywhere(original, op, "flashinfer") as replaced:
        ctx.evidence["wrapped_as"] = {"op": OP_NAME, "bindings": replaced}
        outcome = trace(layer, (x,), fullgraph=True, execute=ctx.execute)
    if not outcome.traced:
        return outcome
    if not outcome.executed:  # simulated: nothing to run the kernel on; check the fake's shapes instead
        return dataclasses.replace(outcome, output=check_simulated(ctx, fp4_quantize_fake, op, OP_NAME))
    return dataclasses.replace(outcome, output=check_on_gpu(ctx, original, op, fp4_quantize_fake, x, outcome.output,
                                                            op, OP_NAME))


def test_custom_op_fix(pcgkit_case, target):
    """fp4_quantize as a custom op with a faithful fake traces under fullgraph=True (and runs on a GPU)."""
    pcgkit_case.run(MODE, reproduce)
