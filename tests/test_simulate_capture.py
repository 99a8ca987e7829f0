"""The simulation answers "is a CUDA graph capture under way?" as a GPU does while torch.compile traces: no.

FlashInfer's top-k dispatch (0.7.0 flashinfer/topk.py:693 `is_cub_topk_beneficial`; 0.7.4 topk.py:66
`_get_row_states_buffer`) asks `torch.cuda.is_current_stream_capturing()`; without a driver its binding raises
"CUDA driver version is insufficient", which the certificate recorded as a simulation gap."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def test_capture_query_answers_no_inside_the_simulation_and_raises_again_outside():
    """Inside: False, recorded among the simulated answers, the public function object unchanged, so dynamo's
    rule for it applies as on a GPU: under fullgraph (torch 2.9) the query is a graph break of its own ("torch.*
    op returned non-Tensor", the first site of 0.7.0's top_k), not a driver error; outside: the host's answer."""
    from pcgkit.harness.simulate import simulated_sm120

    public = torch.cuda.is_current_stream_capturing

    def step(x):
        return x + 1 if not torch.cuda.is_current_stream_capturing() else x

    with simulated_sm120() as sim:
        assert torch.cuda.is_current_stream_capturing is public
        assert torch.cuda.is_current_stream_capturing() is False
        assert "torch.cuda.graphs._cuda_isCurrentStreamCapturing" in sim.replaced
        assert ("torch.cuda.graphs.is_current_stream_capturing", False) in sim.told
        torch._dynamo.reset()
        with pytest.raises(torch._dynamo.exc.Unsupported, match="non-Tensor"):
            torch.compile(step, fullgraph=True, backend="eager")(torch.zeros(2))
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError):
            torch.cuda.is_current_stream_capturing()


def test_simulated_properties_answer_the_threads_per_multiprocessor_of_the_family():
    """0.7.x's fused_rmsnorm_silu reads `max_threads_per_multi_processor`: 1536 on SM120, 2048 on SM90 (CUDA C++
    Programming Guide, technical specifications per compute capability)."""
    from pcgkit.harness.simulate import simulated_sm120

    with simulated_sm120():
        assert torch.cuda.get_device_properties(0).max_threads_per_multi_processor == 1536
    with simulated_sm120(capability=(9, 0)):
        assert torch.cuda.get_device_properties(0).max_threads_per_multi_processor == 2048
