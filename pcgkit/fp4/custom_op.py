"""The custom-op fix: flashinfer.fp4_quantize behind torch.library.custom_op with a faithful fake.

Dynamo does not trace into a custom op: it records one node and asks the fake for output shapes, so FlashInfer's
JIT loader (nvcc subprocess, functools.cache, file I/O) never runs under trace; the real kernel runs when the graph
executes, outside dynamo. The fake mirrors the installed FlashInfer's fp4_quantize wrapper and fp4_quantize_sm100:
  values  uint8 (*shape[:-1], K/2)
  scales  uint8, flat size M*K/sf_vec (linear) or round_up(M, 128 or 8) * round_up(K/sf_vec, 4)
          (swizzled), then reshaped: up to 0.6.7.post3 to (-1, K/sf_vec), which fails like the real op
          when that size is not a multiple of K/sf_vec; from 0.6.8 swizzled scales are reshaped to
          (-1, round_up(K/sf_vec, 4)) (the padded columns). Both transposed back for column-major input.
pcgkit.fp4.fake_shapes checks this against each release's own wrapper. FlashInfer's own fake
(`_fake_fp4_quantize_sm100`) says int64 values and int32 scales of size M*K/sf_vec whatever the layout: it does
not match its op, so it cannot be reused here.
"""

from __future__ import annotations

import functools
from typing import Callable

import torch

OP_NAME = "pcgkit::fp4_quantize"


def padded_sf_numel(rows: int, k: int, sf_vec_size: int, swizzled: bool, is_8x4: bool) -> int:
    """Bytes FlashInfer allocates for the scales (fp4_quantize_sm100's out_sf)."""
    sf_cols = k // sf_vec_size
    if not swizzled:
        return rows * sf_cols
    row_tile = 8 if is_8x4 else 128
    return -(-rows // row_tile) * row_tile * (-(-sf_cols // 4) * 4)


# First FlashInfer release whose wrapper reshapes swizzled scales to the padded column count
# (measured with pcgkit.fp4.fake_shapes in the matrix: 0.6.7.post3 does not, 0.6.8.post1 .. 0.7.4 do;
# 0.6.8's wheel has the padded reshape in quantization/fp4_quantization.py).
PADDED_SWIZZLED_COLUMNS_FROM = "0.6.8"


def swizzled_columns_padded() -> bool:
    """Whether the installed fp4_quantize returns swizzled scales as (-1, round_up(K/sf_vec, 4))."""
    import flashinfer
    from packaging.version import Version

    return Version(flashinfer.__version__) >= Version(PADDED_SWIZZLED_COLUMNS_FROM)


def fp4_quantize_fake(
    input: torch.Tensor,
    global_scale: torch.Tensor | None = None,
    sf_vec_size: int = 16,
    sf_use_ue8m0: bool = False,
    is_sf_swizzled_layout: bool = True,
    is_sf_8x4_layout: bool = False,
    enable_pdl: bool | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Output metadata of flashinfer.fp4_quantize, computed the way its wrapper computes it."""
    if sf_vec_size not in (16, 32):
        raise NotImplementedError("sf_vec_size can only be 16 or 32")
    column_major = input.stride(-2) == 1
    if column_major:
        input = input.transpose(-2, -1)
    k = input.shape[-1]
    torch._check(k % sf_vec_size == 0, lambda: f"K={k} is not a multiple of sf_vec_size={sf_vec_size}")
    rows = input.numel() // k
    values_shape = [*input.shape[:-1], k // 2]
    sf_flat = input.new_empty(
        (padded_sf_numel(rows, k, sf_vec_size, is_sf_swizzled_layout, is_sf_8x4_layout),), dtype=torch.uint8
    )
    # The same reshape as FlashInfer's wrapper, so an impossible shape fails here as it does there.
    sf_cols = k // sf_vec_size
    if is_sf_swizzled_layout and swizzled_columns_padded():
        sf_cols = -(-sf_cols // 4) * 4
    scales_shape = list(sf_flat.reshape((-1, sf_cols)).shape)
    if column_major:
        values_shape[-2:] = values_shape[-1], values_shape[-2]
        scales_shape.reverse()
    # Fresh contiguous tensors: the real op below returns contiguous copies of FlashInfer's views.
    return input.new_empty(values_shape, dtype=torch.uint8), input.new_empty(scales_shape, dtype=torch.uint8)


def define_fp4_quantize_op(name: str, kernel: Callable[..., tuple[torch.Tensor, torch.Tensor]]):
    """Register `kernel` as custom op `name` with fp4_quantize_fake as its fake. Returns the op."""

    @torch.library.custom_op(name, mutates_args=())
    def op(
        input: torch.Tensor,
        global_scale: torch.Tensor | None = None,
        sf_vec_size: int = 16,
        sf_use_ue8m0: bool = False,
        is_sf_swizzled_layout: bool = True,
        is_sf_8x4_layout: bool = False,
        enable_pdl: bool | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # By keyword: from 0.7.0 FlashInfer's 7th positional parameter is is_global_scale_inversed,
        # so positional forwarding would pass enable_pdl as that flag (FlashInfer's own op notes it).
        values, scales = kernel(
            input, global_scale, sf_vec_size, sf_use_ue8m0,
            is_sf_swizzled_layout=is_sf_swizzled_layout, is_sf_8x4_layout=is_sf_8x4_layout, enable_pdl=enable_pdl,
        )
        # FlashInfer transposes both for column-major input; a custom op's outputs must match the
        # fake's (contiguous) strides. Same values, and no copy in the usual row-major case.
        return values.contiguous(), scales.contiguous()

    op.register_fake(fp4_quantize_fake)
    return op


@functools.cache
def fp4_quantize_op():
    """The pcgkit::fp4_quantize op over the installed flashinfer.fp4_quantize, registered once. The kernel is bound
    at the first call, so a caller may afterwards point the name `flashinfer.fp4_quantize` at this op (as the fix
    does) without the op calling itself."""
    from flashinfer.fp4_quantization import fp4_quantize

    return define_fp4_quantize_op(OP_NAME, fp4_quantize)


# (M, K) shapes whose outputs the fake must describe: K/16 = 4, 16, 3, 6, 2, 5 (not a multiple
# of 4 pads the swizzled columns), M below, at and above the 128-row tile.
SHAPE_GRID: tuple[tuple[int, int], ...] = ((1, 64), (128, 256), (130, 64), (7, 48), (5, 96), (33, 32), (256, 80))


def output_metadata(fn: Callable, x: torch.Tensor, *args) -> str:
    """'shape/dtype, shape/dtype' of fn(x, *args), or 'raises <Type>' (what a fake must match)."""
    try:
        outputs = fn(x, *args)
    except (RuntimeError, ValueError) as exc:
        return f"raises {type(exc).__name__}"
    return ", ".join(f"{tuple(t.shape)}/{str(t.dtype).removeprefix('torch.')}" for t in outputs)


def fake_metadata(
    x: torch.Tensor, global_scale: torch.Tensor | None, swizzled: bool, fake: Callable = fp4_quantize_fake
) -> str:
    """output_metadata of `fake` (a fake function, or a registered op, whose fake then runs) under
    FakeTensorMode: nothing real runs, any device."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        fake_x = mode.from_tensor(x)
        fake_scale = mode.from_tensor(global_scale) if global_scale is not None else None
        return output_metadata(fake, fake_x, fake_scale, 16, False, swizzled)


def shape_mismatches(real: Callable, fake: Callable, device: str, real_name: str) -> list[str]:
    """Where `fake` (under FakeTensorMode) and `real` disagree on output shapes/dtypes, over SHAPE_GRID x both scale
    layouts on `device`: "(rows,cols) swizzled=...: <real_name> ..., fake ..." each."""
    mismatches = []
    for rows, cols in SHAPE_GRID:
        x = torch.randn(rows, cols, dtype=torch.bfloat16, device=device)
        scale = torch.ones(1, dtype=torch.float32, device=device)
        for swizzled in (True, False):
            got = output_metadata(real, x, scale, 16, False, swizzled)
            described = fake_metadata(x, scale, swizzled, fake)
            if got != described:
                mismatches.append(f"({rows},{cols}) swizzled={swizzled}: {real_name} {got}, fake {described}")
    return mismatches
