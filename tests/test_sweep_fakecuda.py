"""The certificate's retry with inputs on the simulated cuda:0 (lab.sweep.fakecuda): FakeTensors that say
`cuda:0` on a host without a GPU, which dynamo traces under fullgraph=True like real CUDA tensors."""

from __future__ import annotations

import pytest

from lab.sweep.fakecuda import on_fake_cuda, refused_cpu_inputs

torch = pytest.importorskip("torch")


def test_which_reasons_mean_the_release_refused_cpu_inputs():
    """The device checks FlashInfer 0.7.0 raised on the certificate's CPU inputs (committed rows' run errors), and
    not a shape or arch check."""
    for where in ("the release's own check raised, under the trace and when run: ValueError: x must be a CUDA tensor",
                  "ValueError: fused_rmsnorm_silu requires CUDA tensors",
                  "ValueError: query, key, and value must be CUDA tensors",
                  "the release rejected the inputs: ValueError: Expected a cuda device, but got: cpu"):
        assert refused_cpu_inputs(where), where
    for where in ("ValueError: TGV GEMM requires SM100, SM103 architecture", "TypeError: b must be uint8; got torch.int32", ""):
        assert not refused_cpu_inputs(where), where


def test_inputs_on_fake_cuda_keep_shape_stride_dtype_and_pass_a_device_check_under_fullgraph():
    """A (K, V) pair and a keyword tensor become cuda:0 FakeTensors of the same metadata; a function that refuses
    CPU tensors ("x must be a CUDA tensor") traces with them under fullgraph=True, and refuses the CPU original."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    mode = FakeTensorMode(allow_non_fake_inputs=True)
    pair = (torch.zeros(4, 16, 2, 8, dtype=torch.uint8), torch.zeros(4, 16, 2, 8, dtype=torch.uint8).transpose(1, 2))
    args = on_fake_cuda((pair, 3, "cpu"), mode)
    kwargs = on_fake_cuda({"x": torch.ones(2, 3, dtype=torch.bfloat16), "device": torch.device("cpu")}, mode)
    fake_pair, count, device = args
    assert count == 3 and isinstance(fake_pair, tuple)
    assert device == kwargs["device"] == torch.device("cuda:0")  # a device argument follows the inputs
    assert all(isinstance(t, FakeTensor) and t.device == torch.device("cuda:0") for t in (*fake_pair, kwargs["x"]))
    assert [(t.shape, t.stride(), t.dtype) for t in fake_pair] == [(t.shape, t.stride(), t.dtype) for t in pair]

    def checked(x):
        if not x.is_cuda:
            raise ValueError("x must be a CUDA tensor")
        return x * 2

    torch._dynamo.reset()
    out = torch.compile(checked, fullgraph=True, backend="eager")(kwargs["x"])
    assert out.device == torch.device("cuda:0") and out.shape == (2, 3)
    with pytest.raises(ValueError, match="CUDA tensor"):
        checked(torch.ones(2, 3))
