# ruff: noqa: UP045  (Optional[...] on purpose: the planted path is annotated as FlashInfer annotates its own)
"""The argument audit (pcgkit.fp4.argaudit) over planted call paths: positional forwarding into a signature
with an extra slot is caught, keyword forwarding passes, and a kernel slot is named by the caller's source."""

from __future__ import annotations

from typing import Optional

import pytest

torch = pytest.importorskip("torch")

from pcgkit.fp4.argaudit import Boundary, audit, compare  # noqa: E402
from pcgkit.fp4.fake_shapes import KernelCall, RecordingKernelModule  # noqa: E402


def _chain(log: list[KernelCall]):
    """A planted FlashInfer-shaped path: a Python wrapper whose 7th parameter is is_global_scale_inversed
    (as in FlashInfer 0.6.12-0.7.x), calling a recording kernel positionally, as FlashInfer's sm100 function does."""
    module = RecordingKernelModule("planted", log)

    def inner(
        input: torch.Tensor,
        global_scale: Optional[torch.Tensor] = None,
        sf_vec_size: int = 16,
        sf_use_ue8m0: bool = False,
        is_sf_swizzled_layout: bool = True,
        is_sf_8x4_layout: bool = False,
        is_global_scale_inversed: bool = False,
        enable_pdl: Optional[bool] = None,
    ):
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


def test_positional_forwarding_into_the_inversion_slot_is_caught():
    """enable_pdl forwarded by position lands in is_global_scale_inversed: the audit names both, at the
    Python boundary and at the kernel, and the default None reaching a `bool` is a finding too."""
    log: list[KernelCall] = []
    positional_op, _ = _chain(log)
    result = audit(positional_op, "planted positional op", log)
    assert not result.passed
    text = "\n".join(result.findings)
    assert "changing enable_pdl alone changed is_global_scale_inversed at" in text
    assert "at kernel planted.fp4_quantize" in text
    assert "is_global_scale_inversed=None reaches" in text and "annotated bool" in text


def test_keyword_forwarding_passes_down_to_the_kernel():
    """The same path forwarding by keyword passes: every parameter reaches its namesake, kernel included."""
    log: list[KernelCall] = []
    _, keyword_op = _chain(log)
    result = audit(keyword_op, "planted keyword op", log)
    assert result.findings == () and result.passed, result.findings
    assert result.audited == ("input", "global_scale", "sf_vec_size", "sf_use_ue8m0", "is_sf_swizzled_layout",
                              "is_sf_8x4_layout", "enable_pdl")
    assert result.boundaries[-1] == "kernel planted.fp4_quantize"


def test_a_path_that_never_reaches_a_kernel_does_not_pass():
    """No kernel boundary crossed: the audit cannot say the arguments arrive, so it does not pass."""
    result = audit(lambda input, global_scale=None: (input, global_scale), "no kernel", [])
    assert not result.passed and "never reached a kernel" in result.summary()


def test_a_dropped_parameter_is_a_finding():
    """A boundary that has the parameter but does not receive the caller's change reports it missing."""
    before = [Boundary("f", ("a", "b"), (1, 2))]
    assert compare("b", before, [Boundary("f", ("a", "b"), (1, 2))]) == [
        "changing b alone changed nothing at f: it does not arrive there"]
    assert compare("b", before, [Boundary("f", ("a", "b"), (1, 3))]) == []


def test_fake_execution_reports_what_the_entry_raises():
    """An entry that raises under fake tensors (the TypeError 0.6.12-0.7.0's kernel binding raises) is a finding."""
    pytest.importorskip("flashinfer")
    from pcgkit.fp4.argaudit import fake_execution

    def entry(input, global_scale=None, enable_pdl=None):
        raise TypeError("Mismatched type on argument #8")

    found = fake_execution(entry, "planted")
    assert len(found) == 2 and all("TypeError: Mismatched type on argument #8" in f for f in found)


def test_the_kits_custom_op_passes_over_the_installed_flashinfer():
    """Over the installed FlashInfer's real Python (not written here), the kit's keyword-forwarding op passes the
    audit down to the JIT module's kernel, and runs under fake tensors."""
    pytest.importorskip("flashinfer")
    from pcgkit.fp4.argaudit import audit_flashinfer_entry, fake_execution
    from pcgkit.fp4.custom_op import OP_NAME, fp4_quantize_op

    result = audit_flashinfer_entry(fp4_quantize_op(), OP_NAME)
    assert result.passed, result.findings
    assert any(b.startswith("flashinfer.") for b in result.boundaries) and result.boundaries[-1].startswith("kernel ")
    assert fake_execution(fp4_quantize_op(), OP_NAME) == ()


def test_an_op_with_a_cuda_kernel_only_is_audited_through_that_kernel():
    """SGLang registers its ops for CUDA only: on CPU the audit calls the op's CUDA kernel (its Python body) with
    CPU tensors instead of reporting the missing CPU kernel as a failure of the call path."""
    from torch.library import Library

    from pcgkit.fp4.argaudit import runnable_here

    log: list[KernelCall] = []
    _, keyword_op = _chain(log)
    lib = Library("pcgkit_audit_probe", "FRAGMENT")
    lib.define("q(Tensor input, Tensor? global_scale=None, SymInt sf_vec_size=16, bool sf_use_ue8m0=False, "
               "bool is_sf_swizzled_layout=True, bool is_sf_8x4_layout=False, bool? enable_pdl=None) -> Tensor")
    lib.impl("q", keyword_op, "CUDA")
    op = torch.ops.pcgkit_audit_probe.q
    with pytest.raises(NotImplementedError):
        op(torch.ones(8, 64))
    _, how = runnable_here(op)
    result = audit(op, "probe op", log)
    assert "CUDA kernel only" in how and result.how_called == how
    assert result.passed, result.findings
