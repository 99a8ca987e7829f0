"""The sweep for real, in the reference environment: the no-kernel guard, and one real trace per arch.

No importorskip: like test_reference_run.py, these run where torch and flashinfer are installed
(bin/pcgkit test); an install where they do not import is broken and must fail, not skip."""

from __future__ import annotations

import subprocess

import pytest

from pcgkit.harness.hardware import SIMULATED_ARCHES
from pcgkit.sweep.guard import KernelLoadRefused, no_kernels


def test_guard_refuses_builds_and_kernel_files_only_inside_the_block(tmp_path):
    """Inside no_kernels a subprocess (nvcc/ninja) or opening a .cubin raises and is recorded; outside it works."""
    cubin = tmp_path / "k.cubin"
    cubin.write_bytes(b"")
    with no_kernels() as refusals:
        with pytest.raises(KernelLoadRefused):
            subprocess.run(["true"], check=True)
        with pytest.raises(KernelLoadRefused):
            open(cubin, "rb")
        (tmp_path / "notes.txt").write_text("ok")  # other files stay readable/writable
    assert [r.event for r in refusals] == ["subprocess.Popen", "open"]
    subprocess.run(["true"], check=True)
    open(cubin, "rb").close()


def test_guard_replaces_the_unaudited_loaders():
    """tvm_ffi.load_module (dlopen from C++, no audit event) raises inside the block."""
    import tvm_ffi

    with no_kernels() as refusals, pytest.raises(KernelLoadRefused):
        tvm_ffi.load_module("/nonexistent/flashinfer_kernel.so")
    assert refusals[0].event == "tvm_ffi.load_module"


@pytest.mark.parametrize("arch", sorted(SIMULATED_ARCHES))
def test_rmsnorm_is_traced_and_classified(arch, monkeypatch):
    """A real trace of flashinfer.rmsnorm per simulated arch ends in a class with evidence, never an error."""
    import flashinfer  # noqa: F401  (must import here: a broken install fails this test)

    from pcgkit.harness.casekit import cuda_toolkit_root
    from pcgkit.sweep.engine import installed_versions, sweep_entry
    from pcgkit.sweep.specs import load_specs

    if cuda_toolkit_root():
        monkeypatch.setenv("CUDA_HOME", cuda_toolkit_root())
    spec = next(s for s in load_specs() if s.id == "rmsnorm")
    result = sweep_entry(spec, arch, SIMULATED_ARCHES[arch], installed_versions())
    assert result.classification.cls.value not in ("error", "not-applicable"), result.classification
    assert result.installed_signature and "weight" in result.installed_signature
    assert any("get_compute_capability" in r for r in result.simulation_replaced)
    if result.classification.cls.traced:
        assert result.signature is None
    else:
        assert result.signature and result.classification.where
