# ruff: noqa: UP045  (Optional[...] on purpose: the planted path is annotated as FlashInfer annotates its own)
"""The argument audit against real kernels (issue 48): the pass-through recorder (lab/commands/argaudit_gpu.py) in front
of a planted "compiled" kernel that checks its values as FlashInfer's does, and the lab command's rows
(lab/commands/argaudit_gpu.py) against the committed matrix. No GPU: the kernel here is planted; on the device
the same recorder wraps the module FlashInfer built for the GPU."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import pytest

torch = pytest.importorskip("torch")

from lab.commands import argaudit_gpu as cmd  # noqa: E402
from lab.commands.argaudit_gpu import PassThroughKernelModule  # noqa: E402
from pcgkit.errors import UsageError  # noqa: E402
from pcgkit.fp4.argaudit import audit  # noqa: E402
from pcgkit.fp4.fake_shapes import KernelCall  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


class CompiledKernel:
    """Stands in for the JIT-built module: refuses what FlashInfer's fp4Quantize.cpp refuses (a None in the bool
    slot #8, sfVecSize 32 without UE8M0, UE8M0 with sfVecSize 16) and counts what it actually ran."""

    def __init__(self):
        self.ran = 0

    def fp4_quantize(self, input, global_scale, out, sf_vec_size, sf_use_ue8m0, is_sf_swizzled_layout,
                     is_sf_8x4_layout, is_global_scale_inversed, enable_pdl):
        if not isinstance(is_global_scale_inversed, bool) or not isinstance(enable_pdl, bool):
            raise TypeError("Mismatched type on argument #8 when calling: fp4_quantize(...). Expected bool but got None")
        if sf_use_ue8m0 and sf_vec_size != 32:
            raise RuntimeError("sfVecSize can only be 32, when sfUseUE8M0 is true")
        if not sf_use_ue8m0 and sf_vec_size != 16:
            raise RuntimeError("sfVecSize can only be 16, when sfUseUE8M0 is false")
        self.ran += 1


def _chain(log: list[KernelCall], kernel: CompiledKernel):
    module = PassThroughKernelModule(kernel, "fp4_quantization_90", log)

    def inner(input: torch.Tensor, global_scale: Optional[torch.Tensor] = None, sf_vec_size: int = 16,
              sf_use_ue8m0: bool = False, is_sf_swizzled_layout: bool = True, is_sf_8x4_layout: bool = False,
              is_global_scale_inversed: bool = False, enable_pdl: Optional[bool] = None):
        if enable_pdl is None:  # FlashInfer's Python resolves None from the device (PDL: SM90+)
            enable_pdl = True
        out = torch.empty(input.shape[0], input.shape[1] // 2, dtype=torch.uint8)
        module.fp4_quantize(input, global_scale, out, sf_vec_size, sf_use_ue8m0, is_sf_swizzled_layout,
                            is_sf_8x4_layout, is_global_scale_inversed, enable_pdl)
        return out

    def positional_op(input: torch.Tensor, global_scale: Optional[torch.Tensor] = None, sf_vec_size: int = 16,
                      sf_use_ue8m0: bool = False, is_sf_swizzled_layout: bool = True, is_sf_8x4_layout: bool = False,
                      enable_pdl: Optional[bool] = None):
        return inner(input, global_scale, sf_vec_size, sf_use_ue8m0, is_sf_swizzled_layout, is_sf_8x4_layout,
                     enable_pdl)

    def keyword_op(input: torch.Tensor, global_scale: Optional[torch.Tensor] = None, sf_vec_size: int = 16,
                   sf_use_ue8m0: bool = False, is_sf_swizzled_layout: bool = True, is_sf_8x4_layout: bool = False,
                   enable_pdl: Optional[bool] = None):
        return inner(input, global_scale, sf_vec_size, sf_use_ue8m0, is_sf_swizzled_layout=is_sf_swizzled_layout,
                     is_sf_8x4_layout=is_sf_8x4_layout, enable_pdl=enable_pdl)

    return positional_op, keyword_op


def _record(result, version: str) -> dict:
    return {"flashinfer": version, "device": "NVIDIA H100 80GB HBM3", "capability": "9.0", "audit": result.to_dict()}


def test_positional_forwarding_reaches_the_real_kernel_in_the_wrong_slot():
    """0.6.12-0.7.0's shape over a kernel that checks types: the kernel itself refuses the leading-arguments call
    (the TypeError on argument #8), enable_pdl=True arrives as is_global_scale_inversed=True, and enable_pdl=False
    is dropped (the kernel gets the resolved True)."""
    log: list[KernelCall] = []
    kernel = CompiledKernel()
    positional_op, _ = _chain(log, kernel)
    result = audit(positional_op, "torch.ops.flashinfer.fp4_quantize", log)
    assert not result.passed and kernel.ran > 0
    text = "\n".join(result.findings)
    assert "changing enable_pdl alone changed is_global_scale_inversed at kernel fp4_quantization_90.fp4_quantize" in text
    assert "the call with only input, global_scale raised TypeError: Mismatched type on argument #8" in text
    seen = dict(result.kernel_args)
    assert seen["every argument given"]["is_global_scale_inversed"] is True
    assert seen["enable_pdl changed alone"]["is_global_scale_inversed"] is False
    assert seen["enable_pdl changed alone"]["enable_pdl"] is True  # False never arrives
    assert any(k.raised and k.raised.startswith("TypeError: Mismatched type on argument #8") for k in log)


def test_keyword_forwarding_passes_and_a_kernels_own_value_check_is_not_a_finding():
    """0.7.1's shape: every argument reaches its namesake; sf_vec_size 32 without UE8M0 is refused by the kernel
    after the call reached it, which the audit keeps apart from forwarding findings."""
    log: list[KernelCall] = []
    _, keyword_op = _chain(log, CompiledKernel())
    result = audit(keyword_op, "torch.ops.flashinfer.fp4_quantize", log)
    assert result.passed, result.findings
    assert result.kernel_refusals == (
        "changing sf_vec_size alone: the kernel refused (RuntimeError: sfVecSize can only be 16, when sfUseUE8M0 is false)",
        "changing sf_use_ue8m0 alone: the kernel refused (RuntimeError: sfVecSize can only be 32, when sfUseUE8M0 is true)")
    assert dict(result.kernel_args)["enable_pdl changed alone"]["enable_pdl"] is False
    row = cmd.document([_record(result, "0.7.1")], _snapshot(), "2026-12-07")["rows"][0]
    assert row["status"] == "passed" and row["against_matrix"] == "agrees" and row["simulated"] is False
    assert row["device"] == "NVIDIA H100 80GB HBM3 (SM90, CC 9.0), real GPU"


def test_a_release_that_refuses_the_gpu_before_its_kernel_is_not_comparable():
    """0.7.4's shape on SM90: the wrapper raises before any kernel call; the row says so and leaves the
    matrix's simulated verdict standing."""
    def refusing(input, global_scale=None, enable_pdl=None):
        raise RuntimeError("fp4_quantize requires SM100 or newer; got SM90")

    result = audit(refusing, "torch.ops.flashinfer.fp4_quantize", [])
    row = cmd.document([_record(result, "0.7.4")], _snapshot(), "2026-12-07")["rows"][0]
    assert row["status"] == "refused" and "requires SM100 or newer" in row["summary"]
    assert row["against_matrix"].startswith("not comparable on this GPU (the matrix's simulated SM120 verdict fixed stands")


def _snapshot() -> dict:
    return json.loads((ROOT / "fixtures" / "matrix_snapshot.json").read_text())


def test_rows_are_set_beside_the_committed_matrix():
    """The FlashInfer-only cells of the committed matrix give each release's simulated verdict of the fix."""
    verdicts = cmd.matrix_verdicts(_snapshot())
    assert verdicts["0.6.12"] == verdicts["0.7.0"] == "traces-but-fails"
    assert verdicts["0.7.1"] == verdicts["0.7.4"] == "fixed"
    assert cmd.agreement("fails", "traces-but-fails") == "agrees"
    assert cmd.agreement("passed", "traces-but-fails") == "disagrees (matrix: traces-but-fails)"
    assert cmd.agreement("error", None) == "no matrix row for this release"
    error = cmd.document([{"flashinfer": "0.7.0", "error": "the audit process failed (exit 1): boom"}], _snapshot(), "d")
    assert error["rows"][0]["status"] == "error" and error["rows"][0]["device"] == "no GPU"
    assert "| 0.7.0 | no GPU | **error**" in cmd.render(error)


def test_bad_site_arguments_are_one_clear_line():
    assert cmd.parse_sites(["0.7.1=/tmp/a", "0.6.12=/tmp/b"]) == {"0.7.1": Path("/tmp/a"), "0.6.12": Path("/tmp/b")}
    with pytest.raises(UsageError, match="--site takes VERSION=FOLDER"):
        cmd.parse_sites(["/tmp/a"])


def test_the_recorder_sits_between_flashinfers_own_loader_and_the_module_it_builds():
    """recording_real_modules over the installed FlashInfer's real Python (not written here): whatever its JIT loader
    builds is wrapped, so the audit records every kernel call of its fp4_quantize and the built module still runs
    them. The build itself is stood in for (no nvcc here) and the hardware answered as SM120 (no GPU here)."""
    pytest.importorskip("flashinfer")
    from unittest import mock

    from flashinfer.jit import core

    from lab.commands.argaudit_gpu import recording_real_modules
    from pcgkit.fp4.fake_shapes import flashinfer_python_fp4_quantize
    from pcgkit.harness.simulate import simulated_sm120

    built: list[str] = []

    class Built:
        ran = 0

        def __getattr__(self, name):
            def kernel(*args, **kwargs):
                Built.ran += 1
            return kernel

    def stand_in_build(spec, *args, **kwargs):
        built.append(spec.name)
        return Built()

    log: list[KernelCall] = []
    with simulated_sm120(), mock.patch.object(core.JitSpec, "build_and_load", stand_in_build), recording_real_modules(log):
        result = audit(flashinfer_python_fp4_quantize(), "flashinfer.fp4_quantize", log)
    assert built and Built.ran == len(log) > 0 and all(k.raised is None for k in log)
    assert result.passed, result.findings
    assert result.boundaries[-1] == f"kernel {built[0]}.fp4_quantize"
