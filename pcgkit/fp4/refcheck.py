"""Numbers: does an fp4_quantize output agree with the kit's reference quantizer (pcgkit.fp4.reference)? Pure.

Used where a kernel really computed something (SM100+: FlashInfer's quantize kernels have bodies only there). Two
checks: the bytes against the reference's, allowing a small mismatch fraction (the kernel's reciprocals are
rcp.approx: a rounding decision can flip on rare inputs), and the decoded values against the input, which an
inverted global scale breaks (its scales collapse or saturate).
"""

from __future__ import annotations

from pcgkit.fp4 import reference

MAX_BYTE_MISMATCH = 0.01  # fraction of value/scale bytes allowed to differ from the reference
MAX_DECODED_RELATIVE_ERROR = 0.25  # NVFP4 of Gaussian data decodes within ~0.1 (L2, relative)


def reference_problems(x, global_scale, values, scales, *, swizzled: bool = True) -> list[str]:
    """What disagrees with the reference for `fp4_quantize(x, global_scale)` -> (values, scales); [] if nothing.
    x: [M, K] row-major; scales as FlashInfer returns them (any 2-D reshape of the same bytes)."""
    import torch

    x = x.detach().cpu()
    values, scales = values.detach().cpu(), scales.detach().cpu()
    scale = torch.as_tensor(global_scale, dtype=torch.float32).detach().cpu()
    ref_values, ref_scales = reference.quantize(x, scale, is_sf_swizzled_layout=swizzled)
    problems = []
    if values.shape != ref_values.shape:
        return [f"values shape {tuple(values.shape)}, reference {tuple(ref_values.shape)}"]
    flat, ref_flat = scales.reshape(-1), ref_scales.reshape(-1)
    if flat.numel() != ref_flat.numel():
        return [f"{flat.numel()} scale bytes, reference {ref_flat.numel()}"]
    for what, got, want in (("value", values.reshape(-1), ref_values.reshape(-1)), ("scale", flat, ref_flat)):
        mismatch = (got != want).float().mean().item()
        if mismatch > MAX_BYTE_MISMATCH:
            problems.append(f"{mismatch:.1%} of {what} bytes differ from the reference (allowed {MAX_BYTE_MISMATCH:.0%})")
    rows, cols = x.shape
    sf_cols = cols // reference.SF_VEC_SIZE
    decoded = reference.dequantize(values, flat if swizzled else flat.reshape(rows, sf_cols), scale,
                                   is_sf_swizzled_layout=swizzled)
    error = ((decoded - x.float()).norm() / x.float().norm().clamp_min(1e-30)).item()
    if not error <= MAX_DECODED_RELATIVE_ERROR:  # NaN fails too
        problems.append(f"decoded with the caller's global scale the output is {error:.2f} (relative L2) from the "
                        f"input (allowed {MAX_DECODED_RELATIVE_ERROR}): wrong numbers, e.g. an inverted global scale")
    return problems
