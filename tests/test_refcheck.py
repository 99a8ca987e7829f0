"""The numbers check (pcgkit.fp4.reference.reference_problems): the reference's own output passes; a planted
inverted global scale, the silent failure of FlashInfer 0.6.12-0.7.0.post1's op with a bool enable_pdl, fails it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pcgkit.fp4 import reference  # noqa: E402
from pcgkit.fp4.reference import reference_problems  # noqa: E402


def _input():
    return torch.randn(130, 64, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)


@pytest.mark.parametrize("swizzled", [True, False])
def test_the_references_own_output_passes(swizzled):
    """What the reference computes for (x, global_scale) is within the check, in both scale layouts."""
    x = _input()
    scale = reference.global_scale_for(x)
    values, scales = reference.quantize(x, scale, is_sf_swizzled_layout=swizzled)
    assert reference_problems(x, scale, values, scales, swizzled=swizzled) == []


def test_a_planted_inverted_global_scale_fails():
    """Quantized with 1/global_scale (what is_global_scale_inversed does to a non-inverted caller's scale):
    the bytes differ and the decoded output is far from the input."""
    x = _input()
    scale = reference.global_scale_for(x)
    values, scales = reference.quantize(x, 1.0 / scale)
    problems = reference_problems(x, scale, values, scales)
    assert any("value bytes differ" in p for p in problems), problems
    assert any("inverted global scale" in p for p in problems), problems


def test_a_few_flipped_roundings_pass_but_many_do_not():
    """A handful of 1-ulp rounding flips is within the allowance; flipping a tenth of the bytes is not."""
    x = _input()
    scale = reference.global_scale_for(x)
    values, scales = reference.quantize(x, scale)
    few, many = values.clone(), values.clone()
    few.view(-1)[:3] ^= 0x01
    many.view(-1)[: values.numel() // 10] ^= 0x11
    assert reference_problems(x, scale, few, scales) == []
    assert any("value bytes differ" in p for p in reference_problems(x, scale, many, scales))
