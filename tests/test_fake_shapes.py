"""The fake-vs-wrapper shape check (simulated kernel) on the installed FlashInfer, on CPU."""

import torch

from pcgkit.fp4.custom_op import fp4_quantize_fake
from pcgkit.fp4.fake_shapes import _fp4_quantization_module, check_fake_against_wrapper


def test_kit_fake_matches_the_installed_wrapper():
    """pcgkit's fake describes every SHAPE_GRID shape x layout exactly as the installed wrapper allocates it."""
    check = check_fake_against_wrapper()
    assert check.kernels_called == ("fp4_quantize",)
    assert check.checked == 14 and check.mismatches == ()
    assert "simulated kernel" in check.label


def test_a_wrong_fake_is_caught():
    """A fake that forgets the swizzled padding (FlashInfer's own dead fake does) disagrees on padded shapes."""

    def unpadded_fake(input, global_scale=None, sf_vec_size=16, sf_use_ue8m0=False, is_sf_swizzled_layout=True,
                      is_sf_8x4_layout=False, enable_pdl=None):
        rows, k = input.numel() // input.shape[-1], input.shape[-1]
        return (input.new_empty((*input.shape[:-1], k // 2), dtype=torch.uint8),
                input.new_empty((rows, k // sf_vec_size), dtype=torch.uint8))

    check = check_fake_against_wrapper(unpadded_fake)
    assert any("(130,64) swizzled=True" in m for m in check.mismatches)
    assert not any("swizzled=False" in m for m in check.mismatches)


def test_inert_modules_never_outlive_the_check():
    """The loader's cache is emptied afterwards, so a later real call builds the real module."""
    check_fake_against_wrapper(fp4_quantize_fake)
    assert _fp4_quantization_module().get_fp4_quantization_module.cache_info().currsize == 0
