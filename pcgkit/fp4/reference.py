"""A pure-PyTorch NVFP4 quantizer that follows FlashInfer's fp4_quantize kernel step by step.

Source followed (flashinfer-python 0.6.1, data/csrc/nv_internal/tensorrt_llm/kernels/quantization.cuh,
`cvt_warp_fp16_to_fp4` and `get_sf_out_offset_128x4` / `_8x4`), for sf_vec_size=16, E4M3 scales:

  vec_max   = max |x| over a block of 16 consecutive elements of a row
  sf        = global_scale * (vec_max * (1/6))           fp32, in this order
  sf_byte   = e4m3(sf), saturating to 448, round-to-nearest-even
  out_scale = 1 / (float(sf_byte) * (1/global_scale))    0 when vec_max == 0
  value     = e2m1(x * out_scale), round-to-nearest-even, saturating to 6 (cvt.rn.satfinite)
  packing   : two E2M1 nibbles per byte, the even element in the low nibble

`global_scale` is what SGLang passes as `input_scale_inv` (typically 448 * 6 / amax).

Known difference: the kernel's reciprocals are `rcp.approx.ftz.f32` (max 1 ulp error); this file
uses correctly rounded fp32 reciprocals. A 1-ulp difference can flip a rounding decision on
rare inputs, so a GPU comparison (reference_problems) reports mismatch counts rather than assuming equality.
"""

from __future__ import annotations

import torch

SF_VEC_SIZE = 16
E2M1_MAX = 6.0
E4M3_MAX = 448.0

# Magnitudes of the eight non-negative E2M1 codes 0b000..0b111.
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
# Midpoints between neighbouring codes, and whether a value exactly on one rounds up: ties go to
# the even code (mantissa bit 0), so the direction alternates.
_E2M1_MIDPOINTS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)
_E2M1_TIE_ROUNDS_UP = (False, True, False, True, False, True, False)


def e2m1_encode(x: torch.Tensor) -> torch.Tensor:
    """4-bit E2M1 codes (uint8, 0..15) of fp32 values: RNE, saturating to +-6, sign bit 0x8 kept for -0."""
    x = x.to(torch.float32)
    magnitude = x.abs()
    code = torch.zeros_like(x, dtype=torch.uint8)
    for midpoint, tie_up in zip(_E2M1_MIDPOINTS, _E2M1_TIE_ROUNDS_UP):
        crossed = magnitude >= midpoint if tie_up else magnitude > midpoint
        code += crossed.to(torch.uint8)
    return code | (torch.signbit(x).to(torch.uint8) << 3)


def e2m1_decode(code: torch.Tensor) -> torch.Tensor:
    """fp32 values of 4-bit E2M1 codes."""
    table = torch.tensor(E2M1_VALUES, dtype=torch.float32, device=code.device)
    code = code.to(torch.int64)
    magnitude = table[code & 0x7]
    return torch.where((code & 0x8) != 0, -magnitude, magnitude)


def e4m3_encode(x: torch.Tensor) -> torch.Tensor:
    """E4M3 bytes of non-negative fp32 values, saturating at 448 like __nv_fp8_e4m3(float)."""
    # torch's float8_e4m3fn cast rounds to nearest even but turns overflow into NaN: saturate first.
    clamped = x.to(torch.float32).clamp(max=E4M3_MAX)
    return clamped.to(torch.float8_e4m3fn).view(torch.uint8)


def e4m3_decode(byte: torch.Tensor) -> torch.Tensor:
    return byte.to(torch.uint8).view(torch.float8_e4m3fn).to(torch.float32)


def pack_e2m1(codes: torch.Tensor) -> torch.Tensor:
    """[..., K] codes -> [..., K/2] bytes, element 2j in the low nibble of byte j."""
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


def unpack_e2m1(packed: torch.Tensor) -> torch.Tensor:
    """[..., K/2] bytes -> [..., K] codes (inverse of pack_e2m1)."""
    low, high = packed & 0x0F, packed >> 4
    return torch.stack((low, high), dim=-1).flatten(-2)


def _round_up(n: int, multiple: int) -> int:
    return (n + multiple - 1) // multiple * multiple


def swizzled_sf_offset(row: torch.Tensor, col: torch.Tensor, sf_cols: int, row_tile: int = 128) -> torch.Tensor:
    """Byte offset of scale (row, col) in the swizzled layout (get_sf_out_offset_128x4 / _8x4)."""
    k_tiles = _round_up(sf_cols, 4) // 4
    if row_tile == 128:
        # tile [32 (m % 32), 4 ((m % 128) / 32), 4 (k % 4)], 512 bytes, tiles ordered m-major then k
        within = (row % 32) * 16 + ((row % 128) // 32) * 4 + col % 4
        return (row // 128) * (k_tiles * 512) + (col // 4) * 512 + within
    if row_tile == 8:
        return (row // 8) * (k_tiles * 32) + (col // 4) * 32 + (row % 8) * 4 + col % 4
    raise ValueError(f"row_tile must be 128 or 8, not {row_tile}")


def swizzle_scales(linear: torch.Tensor, row_tile: int = 128) -> torch.Tensor:
    """[rows, sf_cols] linear scales -> flat swizzled bytes, padding zero (as the kernel writes it)."""
    rows, sf_cols = linear.shape
    size = _round_up(rows, row_tile) * _round_up(sf_cols, 4)  # rows padded to the tile, scale columns to 4
    out = torch.zeros(size, dtype=linear.dtype, device=linear.device)
    r, c = torch.meshgrid(torch.arange(rows), torch.arange(sf_cols), indexing="ij")
    out[swizzled_sf_offset(r, c, sf_cols, row_tile).flatten().to(linear.device)] = linear.flatten()
    return out


def unswizzle_scales(swizzled: torch.Tensor, rows: int, sf_cols: int, row_tile: int = 128) -> torch.Tensor:
    """Flat (or reshaped) swizzled bytes -> [rows, sf_cols] linear scales."""
    r, c = torch.meshgrid(torch.arange(rows), torch.arange(sf_cols), indexing="ij")
    offsets = swizzled_sf_offset(r, c, sf_cols, row_tile).to(swizzled.device)
    return swizzled.reshape(-1)[offsets]


def quantize(
    x: torch.Tensor,
    global_scale: torch.Tensor | float | None,
    *,
    is_sf_swizzled_layout: bool = True,
    is_sf_8x4_layout: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(packed values [M, K/2] uint8, scales uint8) shaped as flashinfer.fp4_quantize returns them, for x [M, K]
    row-major, K a multiple of 16: scales reshaped to (-1, K/16) as FlashInfer's wrapper does (failing, as there,
    when the padded swizzled size is not a multiple of K/16)."""
    if x.dim() != 2 or x.shape[-1] % SF_VEC_SIZE:
        raise ValueError(f"expected [M, K] with K a multiple of {SF_VEC_SIZE}, got {tuple(x.shape)}")
    rows, cols = x.shape
    sf_cols = cols // SF_VEC_SIZE
    scale = torch.as_tensor(1.0 if global_scale is None else global_scale, dtype=torch.float32)
    scale = scale.reshape(()).to(x.device)
    blocks = x.to(torch.float32).reshape(rows, sf_cols, SF_VEC_SIZE)
    vec_max = blocks.abs().amax(dim=-1)
    one_sixth = torch.reciprocal(torch.tensor(E2M1_MAX, dtype=torch.float32))
    sf_bytes = e4m3_encode(scale * (vec_max * one_sixth))
    sf_value = e4m3_decode(sf_bytes)
    out_scale = torch.where(vec_max != 0, torch.reciprocal(sf_value * torch.reciprocal(scale)), 0.0)
    codes = e2m1_encode(blocks * out_scale.unsqueeze(-1)).reshape(rows, cols)
    packed = pack_e2m1(codes)
    if is_sf_swizzled_layout:
        sf = swizzle_scales(sf_bytes, 8 if is_sf_8x4_layout else 128)
    else:
        sf = sf_bytes.reshape(-1)
    return packed, sf.reshape(-1, sf_cols)


def dequantize(
    packed: torch.Tensor,
    sf: torch.Tensor,
    global_scale: torch.Tensor | float | None,
    *,
    is_sf_swizzled_layout: bool = True,
    is_sf_8x4_layout: bool = False,
) -> torch.Tensor:
    """fp32 [M, K] from packed values and scales: e2m1 * e4m3 / global_scale."""
    rows, cols = packed.shape[0], packed.shape[1] * 2
    sf_cols = cols // SF_VEC_SIZE
    if is_sf_swizzled_layout:
        sf_bytes = unswizzle_scales(sf, rows, sf_cols, 8 if is_sf_8x4_layout else 128)
    else:
        sf_bytes = sf.reshape(rows, sf_cols)
    scale = torch.as_tensor(1.0 if global_scale is None else global_scale, dtype=torch.float32).reshape(())
    values = e2m1_decode(unpack_e2m1(packed)).reshape(rows, sf_cols, SF_VEC_SIZE)
    return (values * (e4m3_decode(sf_bytes) / scale.to(packed.device)).unsqueeze(-1)).reshape(rows, cols)


def global_scale_for(x: torch.Tensor) -> torch.Tensor:
    """The usual input_scale_inv: 448 * 6 / amax(x), as a [1] fp32 tensor."""
    amax = x.abs().amax().to(torch.float32)
    return (E4M3_MAX * E2M1_MAX / amax).reshape(1)


# The numbers check, where a kernel really computed something (SM100+: FlashInfer's quantize kernels have bodies only
# there): the bytes against this reference's, allowing a small mismatch fraction (the kernel's reciprocals are
# rcp.approx: a rounding decision can flip on rare inputs), and the decoded values against the input, which an
# inverted global scale breaks (its scales collapse or saturate).
MAX_BYTE_MISMATCH = 0.01  # fraction of value/scale bytes allowed to differ from the reference
MAX_DECODED_RELATIVE_ERROR = 0.25  # NVFP4 of Gaussian data decodes within ~0.1 (L2, relative)


def reference_problems(x, global_scale, values, scales, *, swizzled: bool = True) -> list[str]:
    """What disagrees with the reference for `fp4_quantize(x, global_scale)` -> (values, scales); [] if nothing.
    x: [M, K] row-major; scales as FlashInfer returns them (any 2-D reshape of the same bytes)."""
    x = x.detach().cpu()
    values, scales = values.detach().cpu(), scales.detach().cpu()
    scale = torch.as_tensor(global_scale, dtype=torch.float32).detach().cpu()
    ref_values, ref_scales = quantize(x, scale, is_sf_swizzled_layout=swizzled)
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
    sf_cols = cols // SF_VEC_SIZE
    sf = flat if swizzled else flat.reshape(rows, sf_cols)
    decoded = dequantize(values, sf, scale, is_sf_swizzled_layout=swizzled)
    error = ((decoded - x.float()).norm() / x.float().norm().clamp_min(1e-30)).item()
    if not error <= MAX_DECODED_RELATIVE_ERROR:  # NaN fails too
        problems.append(f"decoded with the caller's global scale the output is {error:.2f} (relative L2) from the "
                        f"input (allowed {MAX_DECODED_RELATIVE_ERROR}): wrong numbers, e.g. an inverted global scale")
    return problems
