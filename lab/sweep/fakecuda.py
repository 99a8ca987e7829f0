"""The trace's inputs on the simulated CUDA device: FakeTensors whose device is cuda:0 (the edge's helper).

On a CPU host the certificate's inputs are CPU tensors, and a FlashInfer check such as "x must be a CUDA
tensor" refuses them under the trace and when run: that says nothing about compile safety. torch's
FakeTensorMode makes tensors that report `device == cuda:0` without a GPU or a driver (metadata only, no
storage); dynamo traces them under fullgraph=True as it does real CUDA tensors. The certificate retries such a
refused callable once with its inputs made so (lab.sweep.certify), and the row says `inputs_device`:
simulated. Values are not kept (a FakeTensor has none): only shapes, strides and dtypes.
"""

from __future__ import annotations

import re

# The release refused CPU inputs: its own device check, as FlashInfer words it.
CUDA_INPUT_REJECTION = re.compile(r"must be (?:a )?CUDA tensors?|requires CUDA tensors?|must be CUDA tensors"
                                  r"|Expected a cuda device|must be on (?:a )?CUDA|must be on cuda", re.IGNORECASE)
INPUTS_DEVICE = "cuda:0 (FakeTensors on the simulated device: shapes and dtypes, no storage)"


def refused_cpu_inputs(where: str) -> bool:
    """Did the row's reason say the release refused the inputs for living on the CPU? Pure."""
    return bool(CUDA_INPUT_REJECTION.search(where or ""))


def on_fake_cuda(value, mode):
    """`value` (a tensor, or a tuple/list/dict of them) as FakeTensors of the same shape, stride and dtype on
    cuda:0, made in `mode` (a FakeTensorMode); a CPU device argument as cuda:0; anything else as it is."""
    import torch

    if isinstance(value, torch.Tensor):
        with mode:
            return torch.empty_strided(tuple(value.shape), tuple(value.stride()), dtype=value.dtype, device="cuda:0")
    if isinstance(value, (tuple, list)):
        return type(value)(on_fake_cuda(v, mode) for v in value)
    if isinstance(value, dict):
        return {k: on_fake_cuda(v, mode) for k, v in value.items()}
    if value == "cpu" or (isinstance(value, torch.device) and value.type == "cpu"):
        return torch.device("cuda:0")  # a `device` argument: where the inputs live (derive: the kit's "cpu")
    return value
