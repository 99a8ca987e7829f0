"""What a custom-op fix must show beyond tracing, shared by the custom-op fix cases.

A custom op is only a fix if its fake tells dynamo the truth: the same output shapes and dtypes as
the real op for the installed FlashInfer, and (on a GPU whose kernel computes something) a compiled
result bit-identical to eager. Simulated runs check the fake against FlashInfer's own Python wrapper
with an inert kernel (pcgkit.fp4.fake_shapes); real GPUs check it against the real op and run opcheck.
"""

from __future__ import annotations

from typing import Callable

from pcgkit.harness.casekit import CaseContext
from pcgkit.verdicts.fixmodes import RunCheck

# FlashInfer's quantize kernels (quantization.cuh) have bodies only for __CUDA_ARCH__ >= 1000:
# the official NVFP4 targets are SM100/SM103/SM110/SM120/SM121. Below that the op returns
# buffers it never wrote (measured on an H200 with 0.6.1).
KERNEL_MIN_MAJOR = 10


def check_simulated(ctx: CaseContext, fake: Callable) -> RunCheck:
    """Fake vs the installed wrapper's shapes (simulated kernel); a mismatch makes the fix `drifted`."""
    from pcgkit.fp4.fake_shapes import check_fake_against_wrapper

    shapes = check_fake_against_wrapper(fake)
    ctx.evidence["fake_vs_wrapper_shapes"] = shapes.to_dict()
    if not shapes.kernels_called:
        return RunCheck(compared=False, problem="the wrapper never reached a kernel call: shape check meaningless")
    if shapes.mismatches:
        return RunCheck(compared=False, problem=f"fake disagrees with FlashInfer's wrapper on {len(shapes.mismatches)} shape(s)")
    return RunCheck(
        compared=False, problem=None,
        note=f"fake matches FlashInfer's wrapper on {shapes.checked} shape/layout pairs ({shapes.label})",
    )


def fake_vs_real_shapes(original: Callable, fake: Callable, torch_device: str) -> list[str]:
    import torch

    from pcgkit.fp4.custom_op import SHAPE_GRID, fake_metadata, output_metadata

    mismatches = []
    for rows, cols in SHAPE_GRID:
        x = torch.randn(rows, cols, dtype=torch.bfloat16, device=torch_device)
        scale = torch.ones(1, dtype=torch.float32, device=torch_device)
        for swizzled in (True, False):
            real = output_metadata(original, x, scale, 16, False, swizzled)
            described = fake_metadata(x, scale, swizzled, fake)
            if real != described:
                mismatches.append(f"({rows},{cols}) swizzled={swizzled}: real {real}, fake {described}")
    return mismatches


def check_on_gpu(ctx: CaseContext, original: Callable, op, fake: Callable, x, compiled_output) -> RunCheck:
    """Real op vs fake shapes, torch.library.opcheck, and compiled == eager where the kernel writes."""
    import torch

    problems = []
    shape_mismatches = fake_vs_real_shapes(original, fake, ctx.torch_device)
    ctx.evidence["fake_vs_real_shape_mismatches"] = shape_mismatches
    if shape_mismatches:
        problems.append(f"fake disagrees with the real op on {len(shape_mismatches)} shape(s)")
    kernel_writes = ctx.device.capability[0] >= KERNEL_MIN_MAJOR
    checks: tuple[str, ...] = ("test_schema", "test_autograd_registration", "test_faketensor")
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
    eager = original(x.view(-1, x.shape[-1]), scale)
    identical = all(torch.equal(a, b) for a, b in zip(compiled_output, eager))
    ctx.evidence["bit_identical"] = identical
    if not identical:
        problems.append("compiled output is not bit-identical to eager")
    return RunCheck(compared=True, problem="; ".join(problems) or None)
