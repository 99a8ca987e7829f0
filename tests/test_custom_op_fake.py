"""The custom-op fix's fake, on CPU: shapes against FlashInfer's formulas, opcheck against the reference."""

import types

import pytest
import torch

from pcgkit.fp4 import reference as ref
from pcgkit.fp4.custom_op import SHAPE_GRID, define_fp4_quantize_op, fake_metadata, output_metadata


def _reference_kernel(
    x, global_scale, sf_vec_size=16, sf_use_ue8m0=False, is_sf_swizzled_layout=True, is_sf_8x4_layout=False,
    enable_pdl=None,
):
    return ref.quantize(x, global_scale, is_sf_swizzled_layout=is_sf_swizzled_layout, is_sf_8x4_layout=is_sf_8x4_layout)


@pytest.fixture(scope="module")
def reference_op():
    """pcgkit_test::fp4_quantize_ref: the same fake, with the pure-torch reference as its CPU kernel."""
    return define_fp4_quantize_op("pcgkit_test::fp4_quantize_ref", _reference_kernel)


def _flashinfer_formula(rows: int, cols: int, swizzled: bool) -> str:
    """Output metadata from fp4_quantization.py's own size helper and its wrapper's reshape."""
    from flashinfer.fp4_quantization import _compute_swizzled_layout_sf_size

    sf_cols = cols // 16
    numel = _compute_swizzled_layout_sf_size(rows, sf_cols) if swizzled else rows * sf_cols
    if numel % sf_cols:
        return "raises RuntimeError"
    return f"({rows}, {cols // 2})/uint8, ({numel // sf_cols}, {sf_cols})/uint8"


@pytest.mark.parametrize("swizzled", [True, False], ids=["swizzled", "linear"])
@pytest.mark.parametrize("rows, cols", SHAPE_GRID)
def test_fake_matches_flashinfer_formulas_and_reference(rows, cols, swizzled):
    """The fake's shapes/dtypes equal FlashInfer's size formulas and the reference kernel's real outputs."""
    x = torch.randn(rows, cols, dtype=torch.bfloat16)
    scale = torch.ones(1)
    fake = fake_metadata(x, scale, swizzled)
    assert fake == _flashinfer_formula(rows, cols, swizzled)
    assert fake == output_metadata(_reference_kernel, x, scale, 16, False, swizzled, False, None)


def test_flashinfers_own_fake_disagrees_with_its_op():
    """FlashInfer 0.6.1's dead `_fake_fp4_quantize_sm100` says int64/int32, unpadded: not reusable."""
    from flashinfer import fp4_quantization

    loader = fp4_quantization.get_fp4_quantization_module.__wrapped__
    code = next(c for c in loader.__code__.co_consts if getattr(c, "co_name", "") == "_fake_fp4_quantize_sm100")
    flashinfer_fake = types.FunctionType(code, vars(fp4_quantization))
    values, scales = flashinfer_fake(torch.empty(130, 64, dtype=torch.bfloat16, device="meta"), None, 16, False, True)
    assert (values.dtype, scales.dtype) == (torch.int64, torch.int32)
    assert scales.numel() == 130 * 4  # the real swizzled op allocates 256 * 4
    assert fake_metadata(torch.empty(130, 64, dtype=torch.bfloat16), None, True).endswith("(256, 4)/uint8")


def test_column_major_input_is_described_transposed():
    """Column-major [32, 64]: FlashInfer quantizes its [64, 32] transpose and transposes both outputs back."""
    x = torch.randn(64, 32, dtype=torch.bfloat16).t()  # [32, 64], stride(-2) == 1
    assert fake_metadata(x, None, False) == "(16, 64)/uint8, (2, 64)/uint8"


@pytest.mark.parametrize("swizzled", [True, False], ids=["swizzled", "linear"])
def test_opcheck_passes_with_the_reference_kernel(reference_op, swizzled):
    """torch.library.opcheck (all four checks) passes for the fake against a real CPU kernel."""
    x = (torch.randn(130, 64) * 3).to(torch.bfloat16)
    results = torch.library.opcheck(reference_op, (x, ref.global_scale_for(x), 16, False, swizzled, False, None))
    assert set(results.values()) == {"SUCCESS"}
    assert set(results) == {"test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic"}


def test_opcheck_catches_a_wrong_fake():
    """A fake with FlashInfer's wrong dtypes makes opcheck's fake-tensor check fail (the check has teeth)."""

    @torch.library.custom_op("pcgkit_test::fp4_wrong_fake", mutates_args=())
    def wrong(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return ref.quantize(x, 1.0, is_sf_swizzled_layout=False)

    @wrong.register_fake
    def _(x):
        return x.new_empty((x.shape[0], x.shape[1] // 2), dtype=torch.int64), x.new_empty(
            (x.shape[0], x.shape[1] // 16), dtype=torch.int32
        )

    with pytest.raises(Exception, match="(?i)fake|dtype"):
        torch.library.opcheck(wrong, (torch.randn(4, 32, dtype=torch.bfloat16),), test_utils="test_faketensor")


@pytest.mark.parametrize(
    "version, expected", [("0.6.1", "raises RuntimeError"), ("0.7.0", "(7, 24)/uint8, (128, 4)/uint8")]
)
def test_fake_follows_the_swizzled_column_padding_of_each_release(monkeypatch, version, expected):
    """K/16 = 3: up to 0.6.x the swizzled reshape fails like the op; from 0.7.0 scales come back as 4 padded columns."""
    import flashinfer

    monkeypatch.setattr(flashinfer, "__version__", version)
    assert fake_metadata(torch.randn(7, 48, dtype=torch.bfloat16), torch.ones(1), True) == expected
