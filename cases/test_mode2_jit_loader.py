"""Mode 2 -- the seed's first workaround only moves the failure deeper into JIT loading.

The seed patched flashinfer.jit.cpp_ext.get_cuda_version to answer from torch.version.cuda
instead of running nvcc. The trace then fails further on in FlashInfer's JIT loader: in the seed,
a pathlib stat in build_and_load; on flashinfer 0.6.1 + torch 2.9.1, the registry's
datetime.now() in flashinfer/jit/core.py:register. The case records wherever it lands.
Seed: shared/seeds 001, 004.
"""

from pcgkit.fp4.layer import dense_nvfp4_layer, example_activation
from pcgkit.harness.casekit import CaseContext, NotApplicable
from pcgkit.harness.tracing import trace
from pcgkit.util.patching import patched_everywhere
from pcgkit.values.trace import TraceOutcome
from pcgkit.verdicts.modes import MODE2 as MODE


def reproduce(ctx: CaseContext) -> TraceOutcome:
    import torch
    from flashinfer.jit import cpp_ext
    from packaging.version import Version

    original = getattr(cpp_ext, "get_cuda_version", None)
    if original is None:
        raise NotApplicable("flashinfer.jit.cpp_ext has no get_cuda_version to patch")
    # Computed outside the trace: the workaround must not itself put work under dynamo.
    answer = Version(torch.version.cuda) if torch.version.cuda else Version("12.8")
    ctx.evidence["get_cuda_version_answer"] = (
        f"{answer} (torch.version.cuda)" if torch.version.cuda else f"{answer} (fixed: torch has no CUDA)"
    )

    def get_cuda_version_from_torch():
        return answer

    layer = dense_nvfp4_layer(ctx.torch_device)
    x = example_activation(ctx.torch_device)
    with patched_everywhere(original, get_cuda_version_from_torch, "flashinfer") as replaced:
        ctx.evidence["patched"] = replaced
        return trace(layer, (x,), fullgraph=True, execute=ctx.execute)


def test_failure_moves_into_jit_loader(pcgkit_case, target):
    """With get_cuda_version answered from torch, the trace still fails inside flashinfer/jit/."""
    pcgkit_case.run(MODE, reproduce)
