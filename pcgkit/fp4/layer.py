"""The code under trace, shared by every case: SGLang's dense NVFP4 activation quantize.

SGLang's ModelOptFp4LinearMethod.apply (sglang 0.5.8, python/sglang/srt/layers/quantization/modelopt_quant.py)
flattens the activation to [M, K] and calls `fp4_quantize(x, layer.input_scale_inv)` before the FP4 GEMM; dynamo
traces into that call. The GEMM is a registered op and plays no part in the failure, so it is left out.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from pcgkit.harness.casekit import NotApplicable
from pcgkit.util.patching import patched_everywhere

TOKENS, HIDDEN = 128, 256  # K a multiple of 16 (the NVFP4 block) and of 64 (the swizzled layout)


def dense_nvfp4_layer(torch_device: str):
    """A one-op nn.Module whose forward is SGLang's activation-quantize step."""
    import flashinfer
    import torch

    if not hasattr(flashinfer, "fp4_quantize"):
        raise NotApplicable(f"flashinfer {getattr(flashinfer, '__version__', '?')} has no fp4_quantize")

    class DenseNvfp4ActivationQuant(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("input_scale_inv", torch.ones(1, dtype=torch.float32, device=torch_device))

        def forward(self, x):
            x = x.view(-1, x.shape[-1])
            # Looked up on the module at call time, so a case may wrap fp4_quantize (mode 4).
            return flashinfer.fp4_quantize(x, self.input_scale_inv)

    return DenseNvfp4ActivationQuant()


@contextlib.contextmanager
def fp4_quantize_wrapped(wrap) -> Iterator[list[str]]:
    """Every binding of flashinfer.fp4_quantize replaced by `wrap(fp4_quantize)` for the duration
    of the block (a user's workaround applied where SGLang looks it up). Yields the bindings replaced."""
    import flashinfer

    original = flashinfer.fp4_quantize
    with patched_everywhere(original, wrap(original), "flashinfer") as replaced:
        yield replaced


def fp4_quantize_disabled() -> contextlib.AbstractContextManager[list[str]]:
    """The seed's second workaround: fp4_quantize wrapped in torch.compiler.disable."""
    import torch

    return fp4_quantize_wrapped(torch.compiler.disable)


def example_activation(torch_device: str):
    import torch

    generator = torch.Generator(device="cpu").manual_seed(0)
    return torch.randn(TOKENS, HIDDEN, generator=generator, dtype=torch.float32).to(torch.bfloat16).to(torch_device)


def cache_state(fn) -> dict | None:
    """functools cache_info() as a dict (None when fn is not cached in this version)."""
    info = getattr(fn, "cache_info", None)
    return info()._asdict() if info else None
