"""Fix -- flashinfer.fp4_quantize behind torch.library.custom_op with a faithful register_fake.

Dynamo records one `pcgkit::fp4_quantize` node and asks the fake (pcgkit/fp4_custom_op.py) for
output shapes, so FlashInfer's JIT loader never runs under trace: fullgraph=True traces.

FlashInfer 0.6.1 (and 0.7.4, the newest release read) cannot give this itself: its
`register_custom_op` / `register_fake_op` are `lambda x: x` in both branches, so
`fp4_quantize_sm100` is never a torch op, and its dead `_fake_fp4_quantize_sm100` says int64 /
int32 of M*K/16 scales whatever the layout (the op returns uint8 and pads the swizzled layout).

On a real GPU the case also (a) compares the fake's shapes/dtypes with the real op over
SHAPE_GRID x both scale layouts, (b) runs torch.library.opcheck on CUDA tensors, and (c) checks
the compiled result is bit-identical to eager. (c) and opcheck's value comparison are only
meaningful where FlashInfer's quantize kernel has a body: in 0.6.1 `quantize_with_block_size` is
compiled empty unless __CUDA_ARCH__ >= 1000, so on SM90 (H200) its outputs are uninitialized.
"""

import dataclasses

from pcgkit.casekit import CaseContext
from pcgkit.fixmodes import FIX_CUSTOM_OP as MODE
from pcgkit.fixmodes import RunCheck, flashinfer_registers_torch_ops
from pcgkit.nvfp4 import dense_nvfp4_layer, example_activation
from pcgkit.patching import patched_everywhere
from pcgkit.tracing import TraceOutcome, trace

# FlashInfer 0.6.1 quantization.cuh: the quantize kernels' bodies are `#if __CUDA_ARCH__ >= 1000`.
KERNEL_MIN_MAJOR = 10


def _fake_vs_real_shapes(original, torch_device: str) -> list[str]:
    import torch

    from pcgkit.fp4_custom_op import SHAPE_GRID, fake_metadata, output_metadata

    mismatches = []
    for rows, cols in SHAPE_GRID:
        x = torch.randn(rows, cols, dtype=torch.bfloat16, device=torch_device)
        scale = torch.ones(1, dtype=torch.float32, device=torch_device)
        for swizzled in (True, False):
            real = output_metadata(original, x, scale, 16, False, swizzled)
            fake = fake_metadata(x, scale, swizzled)
            if real != fake:
                mismatches.append(f"({rows},{cols}) swizzled={swizzled}: real {real}, fake {fake}")
    return mismatches


def _check_on_gpu(ctx: CaseContext, original, op, x, compiled_output) -> RunCheck:
    import torch

    problems = []
    shape_mismatches = _fake_vs_real_shapes(original, ctx.torch_device)
    ctx.evidence["fake_vs_real_shape_mismatches"] = shape_mismatches
    if shape_mismatches:
        problems.append(f"fake disagrees with the real op on {len(shape_mismatches)} shape(s)")
    kernel_writes = ctx.device.capability[0] >= KERNEL_MIN_MAJOR
    checks = ("test_schema", "test_autograd_registration", "test_faketensor")
    if kernel_writes:  # aot_dispatch compares output values: uninitialized memory on older archs
        checks += ("test_aot_dispatch_dynamic",)
    scale = torch.ones(1, dtype=torch.float32, device=ctx.torch_device)
    opcheck = {name: str(status) for name, status in torch.library.opcheck(op, (x, scale), test_utils=checks).items()}
    ctx.evidence["opcheck"] = opcheck
    if any(status != "SUCCESS" for status in opcheck.values()):
        problems.append(f"opcheck: {opcheck}")
    if not kernel_writes:
        note = (
            f"bit-identity and opcheck values not checked: FlashInfer's quantize kernel is empty below "
            f"sm_100 (found {ctx.device.capability[0]}.{ctx.device.capability[1]})"
        )
        ctx.evidence["bit_identical"] = None
        return RunCheck(compared=False, problem="; ".join(problems) or None, note=note)
    eager = original(x.view(-1, x.shape[-1]), torch.ones(1, dtype=torch.float32, device=ctx.torch_device))
    identical = all(torch.equal(a, b) for a, b in zip(compiled_output, eager))
    ctx.evidence["bit_identical"] = identical
    if not identical:
        problems.append("compiled output is not bit-identical to eager")
    return RunCheck(compared=True, problem="; ".join(problems) or None)


def reproduce(ctx: CaseContext) -> TraceOutcome:
    import flashinfer

    from pcgkit.fp4_custom_op import OP_NAME, fp4_quantize_op

    original = flashinfer.fp4_quantize
    op = fp4_quantize_op()  # binds the real fp4_quantize before the name is repointed below
    ctx.evidence["flashinfer_registers_torch_ops"] = flashinfer_registers_torch_ops()
    layer = dense_nvfp4_layer(ctx.torch_device)
    x = example_activation(ctx.torch_device)
    with patched_everywhere(original, op, "flashinfer") as replaced:
        ctx.evidence["wrapped_as"] = {"op": OP_NAME, "bindings": replaced}
        outcome = trace(layer, (x,), fullgraph=True, execute=ctx.execute)
    if not outcome.executed:  # simulated: traced only, nothing to run the kernel on
        return outcome
    return dataclasses.replace(outcome, output=_check_on_gpu(ctx, original, op, x, outcome.output))


def test_custom_op_fix(pcgkit_case, target):
    """fp4_quantize as a custom op with a faithful fake traces under fullgraph=True (and runs on a GPU)."""
    pcgkit_case.run(MODE, reproduce)
