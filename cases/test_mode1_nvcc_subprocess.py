"""Mode 1 -- nvcc subprocess.

torch.compile(fullgraph=True) over SGLang's NVFP4 activation quantize traces into
flashinfer.fp4_quantize -> get_fp4_quantization_module -> is_cuda_version_at_least("12.8") ->
get_cuda_version(), which runs `nvcc --version` in a subprocess. Dynamo cannot trace the
subprocess (it dies on `_thread.allocate_lock`): "Attempted to call function marked as skipped".
Seed: shared/seeds 000, 004.
"""

from pcgkit.fp4.layer import cache_state, dense_nvfp4_layer, example_activation
from pcgkit.harness.casekit import CaseContext
from pcgkit.harness.tracing import trace
from pcgkit.values.trace import TraceOutcome
from pcgkit.verdicts.modes import MODE1 as MODE


def reproduce(ctx: CaseContext) -> TraceOutcome:
    from flashinfer.jit import cpp_ext

    layer = dense_nvfp4_layer(ctx.torch_device)
    x = example_activation(ctx.torch_device)
    ctx.evidence["get_cuda_version.cache_info"] = cache_state(getattr(cpp_ext, "get_cuda_version", None))
    return trace(layer, (x,), fullgraph=True, execute=ctx.execute)


def test_nvcc_subprocess(pcgkit_case, target):
    """fp4_quantize under fullgraph=True dies in get_cuda_version's nvcc subprocess."""
    pcgkit_case.run(MODE, reproduce)
