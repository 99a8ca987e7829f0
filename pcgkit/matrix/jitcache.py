"""A FlashInfer JIT cache shared by the cells that may share one, and by no other.

FlashInfer keeps built kernels under $FLASHINFER_WORKSPACE_BASE/.cache/flashinfer/<version>/<archs>/
(flashinfer/jit/env.py): that path knows neither the torch the module was built against, nor the CUDA
runtime, the Python or the nvcc, so a module built for torch 2.9.1 would be loaded by a torch 2.11 cell.
Each cell gets a workspace base keyed by all of these: cells that agree reuse the build (the
allow-in-graph case spends ~30 s in nvcc on a cold cache) and a wrong cache is never found.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import shutil
from collections.abc import Mapping

from pcgkit.util import proc

ENV_VAR = "FLASHINFER_WORKSPACE_BASE"
# Installed distributions whose versions fix the CUDA runtime torch was built with (cu12 and cu13 names).
CUDA_RUNTIME_PREFIXES = ("nvidia-cuda-runtime", "nvidia-cuda-nvrtc")


@dataclasses.dataclass(frozen=True)
class ArchFacts:
    arch_list: str  # FLASHINFER_CUDA_ARCH_LIST when set (it decides the build), else ""
    devices: str  # compute capabilities of the visible GPUs, "none" without one
    toolkit: str  # the nvcc that would compile (resolved path), "none" without one


def cache_key(installed: Mapping[str, str], python: str, facts: ArchFacts) -> str | None:
    """'fi0.6.1-torch2.9.1-py3.12-<sha12>' for this environment; None when it has no FlashInfer. Pure."""
    flashinfer, torch = installed.get("flashinfer-python"), installed.get("torch")
    if not flashinfer or not torch:
        return None
    runtime = sorted(f"{n}=={v}" for n, v in installed.items() if n.startswith(CUDA_RUNTIME_PREFIXES))
    parts = {
        "flashinfer": flashinfer, "flashinfer-cubin": installed.get("flashinfer-cubin"),
        "flashinfer-jit-cache": installed.get("flashinfer-jit-cache"), "torch": torch, "cuda-runtime": runtime,
        "python": python, **dataclasses.asdict(facts),
    }
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:12]
    return f"fi{flashinfer}-torch{torch}-py{python}-{digest}"


@functools.cache
def machine_arch_facts() -> ArchFacts:
    """What decides the arch list and the compiler on this machine (nvidia-smi asked once)."""
    devices = "none"
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) != "" and shutil.which("nvidia-smi"):
        done = proc.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"], timeout=30, echo=False)
        if done.ok and done.output_tail.strip():
            devices = ",".join(sorted(done.output_tail.split()))
        devices += f" (CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '')})"
    nvcc = shutil.which("nvcc")
    toolkit = os.path.realpath(nvcc) if nvcc else "none"
    cuda_home = os.environ.get("CUDA_HOME")
    if cuda_home:
        toolkit += f" (CUDA_HOME={cuda_home})"
    return ArchFacts(os.environ.get("FLASHINFER_CUDA_ARCH_LIST", ""), devices, toolkit)
