"""Versions of the stack under test, read from package metadata (no heavy imports)."""

from __future__ import annotations

import importlib.metadata
import platform
import sys

DISTRIBUTIONS = ("sglang", "sgl-kernel", "flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache", "torch")


def installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def collect_versions() -> dict[str, str | None]:
    """sglang / flashinfer / torch / python versions; None for what is not installed."""
    versions: dict[str, str | None] = {name: installed_version(name) for name in DISTRIBUTIONS}
    versions["python"] = platform.python_version()
    torch = sys.modules.get("torch")  # only if already imported: never import torch for a version
    versions["torch_cuda"] = getattr(getattr(torch, "version", None), "cuda", None) if torch else None
    return versions
