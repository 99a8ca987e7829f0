"""An SGLang quantized linear layer's eager set-up, shared by preflight's probe (pcgkit.preflight.probe) and the
workshop's method sweep (lab.sweep.sglang_methods): each step through the sweep's one eager set-up guard
(pcgkit.sweep.engine.eager_setup), with what counts as a CUDA need on SGLang's side; the checkpoint stood in.
"""

from __future__ import annotations

from typing import Any, Callable

from pcgkit.sglang.cudastub import CudaOnlyStubCalled
from pcgkit.sweep.engine import eager_setup

# Eager set-up that failed because what it needs exists only on CUDA: a stubbed sgl_kernel value
# (Marlin's scalar types), a sglang op with only a CUDA implementation (the sweep's own markers are added).
CUDA_ONLY_SETUP_MARKERS = ("<pcgkit stub ", "with arguments from the 'CPU' backend")


def stage(name: str, step: Callable[[], Any]) -> Any:
    """Eager set-up of an SGLang layer: a CUDA need (stubbed kernel, refused load, driver) is needs-gpu; anything
    else the spec's (pcgkit.sweep.engine.SetupFailed)."""
    return eager_setup(name, step, CUDA_ONLY_SETUP_MARKERS, (CudaOnlyStubCalled,))


def fill_weights(layer) -> None:
    """Checkpoint stand-in: zeros, scales one (values never matter: the graph never runs)."""
    import torch

    with torch.no_grad():
        for name, param in layer.named_parameters():
            if param.dtype.is_floating_point and "scale" in name:
                param.fill_(1)
            else:
                param.zero_()
