"""Numerics -- eager flashinfer.fp4_quantize on CUDA against the pure-PyTorch NVFP4 reference.

Exact match of packed E2M1 bytes and E4M3 scale bytes is expected where FlashInfer's kernel runs;
otherwise the mismatch counts are recorded (JUnit properties) and the test fails.

Which archs FlashInfer 0.6.1 supports for fp4_quantize, from its source:
  * get_fp4_quantization_module's backend_modules accepts "121", "120", "110", "103", "100", "90"
    (0.7.4 adds "120f", "107"): the loader JIT-builds a module for SM90 without complaint;
  * but quantize_with_block_size and cvt_warp_fp16_to_fp4 (quantization.cuh) are wrapped in
    `#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000)`: the SM90 build launches an empty
    kernel and fp4_quantize returns torch.empty() memory, unwritten.
To tell "unwritten" from "wrong", the caching allocator is first filled with a sentinel byte:
on SM9x the test xfails only when the outputs still hold the sentinel (and fails otherwise).
"""

import inspect
import re

import pytest

from pcgkit.fp4 import reference as ref
from pcgkit.fp4.fixcheck import KERNEL_MIN_MAJOR  # quantization.cuh: kernel bodies only for __CUDA_ARCH__ >= 1000

pytestmark = pytest.mark.gpu

SENTINEL = 0xA5

CASES = [
    pytest.param(128, 256, True, id="128x256-swizzled"),
    pytest.param(128, 256, False, id="128x256-linear"),
    pytest.param(130, 64, True, id="130x64-swizzled"),  # rows padded to 256 in the swizzled layout
    pytest.param(33, 32, True, id="33x32-swizzled"),  # K/16 = 2: scale columns padded to 4
    pytest.param(7, 48, False, id="7x48-linear"),  # K/16 = 3 (its swizzled shape cannot be reshaped)
]


def _declared_backends() -> list[str]:
    from flashinfer import fp4_quantization

    source = inspect.getsource(fp4_quantization.get_fp4_quantization_module)
    return re.findall(r'"(\d+f?)":\s*gen_fp4_quantization_', source)


def _poison_allocator(torch) -> None:
    # Freed blocks go back to the caching allocator, and the next small torch.empty() reuses them.
    poisoned = torch.full((1 << 20,), SENTINEL, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    del poisoned


@pytest.mark.parametrize("rows, cols, swizzled", CASES)
def test_fp4_quantize_matches_reference(rows, cols, swizzled, record_property):
    """flashinfer.fp4_quantize's packed values and scale bytes equal the reference, byte for byte."""
    import flashinfer
    import torch

    major, minor = torch.cuda.get_device_capability()
    record_property("pcgkit.numerics.device", f"{torch.cuda.get_device_name()} ({major}.{minor})")
    record_property("pcgkit.numerics.declared_backends", ",".join(_declared_backends()))
    generator = torch.Generator().manual_seed(rows * 1000 + cols)
    x = (torch.randn(rows, cols, generator=generator) * 3).to(torch.bfloat16)
    scale = ref.global_scale_for(x)
    want_values, want_scales = ref.quantize(x, scale, is_sf_swizzled_layout=swizzled)

    x_cuda, scale_cuda = x.cuda(), scale.cuda()
    flashinfer.fp4_quantize(x_cuda, scale_cuda, is_sf_swizzled_layout=swizzled)  # JIT build, warm
    _poison_allocator(torch)
    values, scales = flashinfer.fp4_quantize(x_cuda, scale_cuda, is_sf_swizzled_layout=swizzled)
    torch.cuda.synchronize()
    values, scales = values.cpu(), scales.cpu()

    # Swizzled scales are the same bytes in every release; only the returned view changed
    # (0.7.0 reshapes them to the padded column count), so bytes are compared flat.
    record_property("pcgkit.numerics.scale_shape", f"{tuple(scales.shape)} (reference {tuple(want_scales.shape)})")
    assert values.shape == want_values.shape and scales.numel() == want_scales.numel()
    scales, want_scales = scales.reshape(-1), want_scales.reshape(-1)
    value_mismatches = int((values != want_values).sum())
    scale_mismatches = int((scales != want_scales).sum())
    unwritten = int((values == SENTINEL).sum() + (scales == SENTINEL).sum())
    total = values.numel() + scales.numel()
    record_property("pcgkit.numerics.value_mismatches", f"{value_mismatches}/{values.numel()}")
    record_property("pcgkit.numerics.scale_mismatches", f"{scale_mismatches}/{scales.numel()}")
    record_property("pcgkit.numerics.sentinel_bytes", f"{unwritten}/{total}")
    if value_mismatches == 0 and scale_mismatches == 0:
        return
    summary = (
        f"{value_mismatches}/{values.numel()} value bytes and {scale_mismatches}/{scales.numel()} scale bytes "
        f"differ from the reference; {unwritten}/{total} output bytes still hold the allocator sentinel"
    )
    if major < KERNEL_MIN_MAJOR and unwritten == total:
        pytest.xfail(f"FlashInfer's fp4 quantize kernel is empty below sm_100 (this is {major}.{minor}): {summary}")
    pytest.fail(summary, pytrace=False)
