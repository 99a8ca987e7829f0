"""Simulated SM120: answer the *hardware queries* on the traced path as an SM120 GPU would.

Only queries are replaced (FlashInfer's compute-capability and PDL queries and its JIT arch check; torch's device
*properties* under the real torch.cuda.get_device_capability, which device is current, and whether a CUDA graph
capture is under way: no); all FlashInfer and SGLang code under test is the real one. Patches live exactly as long
as the `with` block. On a real GPU nothing here is used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from typing import Iterator
from unittest import mock

from pcgkit.harness.hardware import SIMULATED_PART_SHAPE, SIMULATED_SM120_CAPABILITY
from pcgkit.util.patching import patched_everywhere

# (defining module, attribute): the hardware queries FlashInfer consults on the fp4_quantize path.
FLASHINFER_QUERIES: tuple[tuple[str, str], ...] = (
    ("flashinfer.utils", "get_compute_capability"),
    ("flashinfer.utils", "device_support_pdl"),
    ("flashinfer.jit.core", "check_cuda_arch"),
)

# (module, instance): FlashInfer's CompilationContext objects built at import time. Each asked
# torch.cuda.device_count()/get_device_capability() then; with no GPU it holds no target arch and
# every JIT spec fails with "No supported CUDA architectures found". Inside the block their
# TARGET_CUDA_ARCHS is what that import-time query returns on the simulated part.
FLASHINFER_IMPORT_TIME_ARCH_ANSWERS: tuple[tuple[str, str], ...] = (
    ("flashinfer.jit.core", "current_compilation_context"),
    ("flashinfer.jit.cpp_ext", "cpp_ext_initial_compilation_context"),
)


@dataclasses.dataclass(frozen=True)
class Simulation:
    capability: tuple[int, int]
    replaced: tuple[str, ...]  # "module.attr" of every binding that was answered
    # (query, answer) of each stand-in call that really ran (not inside dynamo's symbolic model):
    # torch.cuda.get_device_properties runs for real under dynamo's folded get_device_capability.
    told: list[tuple[str, object]] = dataclasses.field(default_factory=list)


# The capabilities of the simulations active now, innermost last: a nested simulated_sm120()
# without a capability answers as the enclosing one does (an SM90 run's fake-shape check stays SM90).
_ACTIVE_CAPABILITIES: list[tuple[int, int]] = []


@dataclasses.dataclass(frozen=True)
class SimulatedDeviceProperties:
    """What torch.cuda.get_device_properties returns, for the fields the traced path reads."""

    name: str
    major: int
    minor: int
    multi_processor_count: int
    total_memory: int
    shared_memory_per_block_optin: int  # FlashInfer's CuTe-DSL norms (0.6.12+) size their tiles by it
    max_threads_per_multi_processor: int  # 0.7.x's fused_rmsnorm_silu sizes its grid by it


def _answers(capability: tuple[int, int], told: list[tuple[str, object]]) -> dict[str, object]:
    """Stand-ins for FlashInfer's queries. They go through the REAL torch.cuda.get_device_capability
    function object (only the properties underneath it are simulated), so dynamo treats the query
    exactly as it does on a real GPU of this torch version: torch 2.9 folds it to a constant,
    torch 2.11 refuses to trace it ("marked as skipped"). Answering with a plain constant instead
    would hide that failure point (seen on a real H200 with torch 2.11 + flashinfer 0.6.1)."""
    import torch

    def get_compute_capability(device=None):
        return torch.cuda.get_device_capability(getattr(device, "index", None))

    def device_support_pdl(device=None):
        major, _ = get_compute_capability(device)
        return major >= 9  # FlashInfer's own rule

    def check_cuda_arch():
        return None  # an SM120 part passes FlashInfer's "sm75 or higher" check

    def get_device_properties(device=None):
        # Named and sized after the family actually answered (simulated_sm120 is also used for SM90/SM100).
        shape = SIMULATED_PART_SHAPE.get(capability[0], SIMULATED_PART_SHAPE[12])
        properties = SimulatedDeviceProperties(f"simulated SM{capability[0]}{capability[1]}", *capability, *shape)
        told.append(("torch.cuda.get_device_properties", (properties.major, properties.minor)))
        return properties

    def current_device():
        told.append(("torch.cuda.current_device", 0))
        return 0  # the simulated part is the process's one device

    def is_current_stream_capturing():
        # The driver's answer on a GPU where no CUDA graph capture is under way, as during the compile:
        # torch.compile traces before SGLang's runner starts capturing (FlashInfer's top-k dispatch asks).
        told.append(("torch.cuda.graphs.is_current_stream_capturing", False))
        return False

    return {
        "current_device": current_device,
        "get_compute_capability": get_compute_capability,
        "device_support_pdl": device_support_pdl,
        "check_cuda_arch": check_cuda_arch,
        "get_device_properties": get_device_properties,
        "is_current_stream_capturing": is_current_stream_capturing,
    }


@contextlib.contextmanager
def simulated_sm120(capability: tuple[int, int] | None = None) -> Iterator[Simulation]:
    """Answer FlashInfer's and torch's hardware queries as an SM120 part would (or as `capability`;
    nested without one: as the enclosing simulation), inside the block."""
    import importlib

    import torch

    # dynamo resolves torch functions through a name->object map it builds lazily, once per
    # process (trace_rules.get_torch_obj_rule_map, functools-cached). Built while a torch.cuda
    # function is patched, it would hold the stand-in and later, real-GPU traces in the same
    # process would see the real function as unknown ("marked as skipped"): build it first.
    from torch._dynamo import trace_rules

    if hasattr(trace_rules, "get_torch_obj_rule_map"):
        trace_rules.get_torch_obj_rule_map()
    if capability is None:
        capability = _ACTIVE_CAPABILITIES[-1] if _ACTIVE_CAPABILITIES else SIMULATED_SM120_CAPABILITY
    told: list[tuple[str, object]] = []
    answers = _answers(capability, told)
    replaced: list[str] = []
    with contextlib.ExitStack() as stack:
        _ACTIVE_CAPABILITIES.append(capability)
        stack.callback(_ACTIVE_CAPABILITIES.pop)
        for module_name, attr in FLASHINFER_QUERIES:
            try:
                original = getattr(importlib.import_module(module_name), attr, None)
            except ModuleNotFoundError:
                original = None
            if original is None:
                continue  # this FlashInfer version has no such query
            answer = answers[attr]
            if hasattr(original, "cache_info"):  # keep FlashInfer's functools.cache, and its dynamo warning
                answer = functools.cache(answer)  # type: ignore[arg-type]
            replaced += stack.enter_context(patched_everywhere(original, answer, "flashinfer"))
        for module_name, attr in FLASHINFER_IMPORT_TIME_ARCH_ANSWERS:
            try:
                context = getattr(importlib.import_module(module_name), attr, None)
            except ModuleNotFoundError:
                context = None
            if context is not None and hasattr(context, "TARGET_CUDA_ARCHS"):
                # FlashInfer's own rule (CompilationContext.__init__): the minor gets an 'a' suffix from SM90 on
                major, minor = capability
                archs = {(major, f"{minor}a" if major >= 9 else str(minor))}
                stack.enter_context(mock.patch.object(context, "TARGET_CUDA_ARCHS", archs))
                replaced.append(f"{module_name}.{attr}.TARGET_CUDA_ARCHS")
        # Below torch.cuda.get_device_capability, which stays the real function object.
        stack.enter_context(mock.patch.object(torch.cuda, "get_device_properties", answers["get_device_properties"]))
        replaced.append("torch.cuda.get_device_properties")
        # Which device is current is a driver query too (CuTe-DSL constructors ask it, 0.6.12's norms).
        stack.enter_context(mock.patch.object(torch.cuda, "current_device", answers["current_device"]))
        replaced.append("torch.cuda.current_device")
        # Below torch.cuda.is_current_stream_capturing (the real function object, so dynamo sees it as on a
        # GPU): the binding it calls, which on a host without a driver raises "CUDA driver version is insufficient".
        graphs = importlib.import_module("torch.cuda.graphs")
        if hasattr(graphs, "_cuda_isCurrentStreamCapturing"):
            stack.enter_context(mock.patch.object(graphs, "_cuda_isCurrentStreamCapturing", answers["is_current_stream_capturing"]))
            replaced.append("torch.cuda.graphs._cuda_isCurrentStreamCapturing")
        yield Simulation(capability, tuple(sorted(replaced)), told)
