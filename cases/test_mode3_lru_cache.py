"""Mode 3 -- a warm functools.cache does not help: dynamo traces through the wrapper.

get_cuda_version (and get_fp4_quantization_module) are functools-cached. Calling them eagerly
first fills the caches (cache_info() is recorded as proof), yet dynamo warns "Dynamo detected a
call to a `functools.lru_cache`-wrapped function ... ignores the cache wrapper" and traces the
body again, hitting the same nvcc subprocess. Seed: shared/seeds 000, 004.
"""

from pcgkit.fp4.layer import cache_state, dense_nvfp4_layer, example_activation
from pcgkit.harness.casekit import CaseContext, KitError, NotApplicable
from pcgkit.harness.tracing import trace
from pcgkit.values.trace import TraceOutcome
from pcgkit.verdicts.modes import MODE3 as MODE


def reproduce(ctx: CaseContext) -> TraceOutcome:
    import flashinfer.fp4_quantization as fp4_quantization
    from flashinfer.jit import cpp_ext

    get_cuda_version = getattr(cpp_ext, "get_cuda_version", None)
    if cache_state(get_cuda_version) is None:
        raise NotApplicable("get_cuda_version is not functools-cached in this flashinfer")
    layer = dense_nvfp4_layer(ctx.torch_device)
    x = example_activation(ctx.torch_device)
    try:
        get_cuda_version()  # eager: runs nvcc once and fills the cache
    except Exception as exc:
        raise KitError(f"could not pre-warm get_cuda_version (is the CUDA toolkit installed?): {exc}") from exc
    if ctx.execute:
        layer(x)  # eager quantize on the GPU: builds the JIT module and fills its cache too
    warm = cache_state(get_cuda_version)
    ctx.evidence["get_cuda_version.cache_info"] = warm
    ctx.evidence["get_fp4_quantization_module.cache_info"] = cache_state(
        getattr(fp4_quantization, "get_fp4_quantization_module", None)
    )
    if not warm or warm["currsize"] < 1:
        raise KitError(f"get_cuda_version cache is not warm after an eager call: {warm}")
    return trace(layer, (x,), fullgraph=True, execute=ctx.execute)


def test_warm_cache_is_traced_through(pcgkit_case, target):
    """With get_cuda_version's cache warm, dynamo warns about lru_cache and still hits nvcc."""
    pcgkit_case.run(MODE, reproduce)
