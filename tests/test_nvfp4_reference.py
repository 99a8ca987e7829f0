"""The pure-PyTorch NVFP4 reference: encodings computed by hand, packing, layouts, round trips."""

import pytest
import torch

from pcgkit.fp4 import reference as ref


def test_e2m1_codes_of_hand_picked_values():
    """Representable values map to their codes; ties go to the even code; overflow saturates to 6."""
    values = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, 1e9])
    expected = [0, 1, 2, 3, 4, 5, 6, 7, 0, 2, 2, 4, 4, 6, 6, 7, 7]
    assert ref.e2m1_encode(values).tolist() == expected


def test_e2m1_sign_bit_and_decode():
    """Negative values set bit 3 (also for -0 and values rounding to zero); decode inverts encode."""
    assert ref.e2m1_encode(torch.tensor([-0.0, -0.1, -0.5, -6.0, -5.0])).tolist() == [8, 8, 9, 15, 14]
    codes = torch.arange(16, dtype=torch.uint8)
    assert torch.equal(ref.e2m1_encode(ref.e2m1_decode(codes)), codes)


def test_e4m3_bytes_of_hand_picked_values():
    """1.0 = 0x38, 448 = 0x7E, overflow saturates to 448, 2^-9 is the smallest subnormal, ties to even."""
    values = torch.tensor([1.0, 448.0, 1000.0, 2.0**-9, 1.0625, 1.1875, 0.0])
    assert ref.e4m3_encode(values).tolist() == [0x38, 0x7E, 0x7E, 0x01, 0x38, 0x3A, 0x00]


def test_packing_puts_the_even_element_in_the_low_nibble():
    """Codes [1, 2, 3, 4] pack to bytes 0x21, 0x43 and unpack back."""
    codes = torch.tensor([[1, 2, 3, 4]], dtype=torch.uint8)
    packed = ref.pack_e2m1(codes)
    assert packed.tolist() == [[0x21, 0x43]]
    assert torch.equal(ref.unpack_e2m1(packed), codes)


def test_block_of_known_values_quantizes_exactly():
    """A block with max 6 and global scale 1: scale byte 1.0 (0x38), values encoded as themselves."""
    row = torch.tensor([[6.0, -3.0, 0.5, 1.0] + [0.0] * 12], dtype=torch.bfloat16)
    values, scales = ref.quantize(row, 1.0, is_sf_swizzled_layout=False)
    assert scales.tolist() == [[0x38]]
    assert values[0, :2].tolist() == [0x7 | (0xD << 4), 0x1 | (0x2 << 4)]


def test_swizzle_offsets_match_flashinfer_formula():
    """Offsets follow quantization.cu's `((m/128)*numSfTilesK + k/4)*512 + (m%32)*16 + ((m%128)/32)*4 + k%4`."""
    rows, sf_cols = 260, 6
    tiles_k = (sf_cols + 3) // 4
    r, c = torch.meshgrid(torch.arange(rows), torch.arange(sf_cols), indexing="ij")
    flashinfer_formula = ((r // 128) * tiles_k + c // 4) * 512 + (r % 32) * 16 + ((r % 128) // 32) * 4 + c % 4
    assert torch.equal(ref.swizzled_sf_offset(r, c, sf_cols), flashinfer_formula)


def test_swizzle_is_a_bijection_into_flashinfers_padded_size():
    """Every scale lands on a distinct byte inside the size FlashInfer allocates; the rest is zero padding."""
    from flashinfer.fp4_quantization import _compute_swizzled_layout_sf_size

    for rows, sf_cols, tile in ((1, 4, 128), (130, 3, 128), (33, 2, 128), (9, 5, 8)):
        linear = torch.arange(1, rows * sf_cols + 1, dtype=torch.int32).reshape(rows, sf_cols)
        swizzled = ref.swizzle_scales(linear, tile)
        assert swizzled.numel() == _compute_swizzled_layout_sf_size(rows, sf_cols, tile)
        assert int((swizzled != 0).sum()) == rows * sf_cols
        assert torch.equal(ref.unswizzle_scales(swizzled, rows, sf_cols, tile), linear)


@pytest.mark.parametrize("swizzled", [True, False])
def test_round_trip_error_within_half_the_coarsest_e2m1_step(swizzled):
    """|x - dequantize(quantize(x))| <= block scale * 1 (half of E2M1's widest gap, 4 -> 6)."""
    generator = torch.Generator().manual_seed(0)
    x = (torch.randn(130, 64, generator=generator) * 3).to(torch.bfloat16)
    scale = ref.global_scale_for(x)
    values, scales = ref.quantize(x, scale, is_sf_swizzled_layout=swizzled)
    back = ref.dequantize(values, scales, scale, is_sf_swizzled_layout=swizzled)
    block_max = x.float().abs().reshape(130, 4, 16).amax(-1, keepdim=True)
    bound = (block_max / 6 * (1 + 2**-4)).expand(130, 4, 16).reshape(130, 64)  # e4m3 rounds by <= 2^-4
    assert (back - x.float()).abs().le(bound + 1e-6).all()
    assert (back - x.float()).abs().max() > 0  # the quantizer does lose information


def test_swizzled_scales_reshape_like_flashinfer_and_refuse_impossible_shapes():
    """Scales come back as (-1, K/16); K/16 = 3 cannot divide the padded 512 bytes, as in FlashInfer."""
    x = torch.ones(33, 32, dtype=torch.bfloat16)
    assert ref.quantize(x, 1.0)[1].shape == (256, 2)
    with pytest.raises(RuntimeError):
        ref.quantize(torch.ones(7, 48, dtype=torch.bfloat16), 1.0)
