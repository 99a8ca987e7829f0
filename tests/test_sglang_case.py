"""Plumbing of the SGLang-level case: family simulation, imports, torch-op detection, matrix deps, report."""

from __future__ import annotations

import types

import pytest

from pcgkit.catalog import all_modes
from pcgkit.harness.casekit import TARGETS, CaseContext, MissingDependency, NotApplicable
from pcgkit.harness.hardware import SIMULATED_SM120, Device
from pcgkit.matrix.backends.venv import cell_lock_inputs
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.deps import sglang_import_dependencies
from pcgkit.matrix.outcome import RAN, CellOutcome
from pcgkit.report.compat import build_compat
from pcgkit.report.markdown import render_markdown
from pcgkit.sglang import case as sglang_case
from pcgkit.sglang.dispatch import OTHER, SM120, Fp4Binding
from pcgkit.values.signature import Frame, Signature
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import CaseResult

SIM = next(t for t in TARGETS if t.simulated)
GPU = next(t for t in TARGETS if t.id == "gpu")


def _ctx(target=SIM, device=SIMULATED_SM120) -> CaseContext:
    return CaseContext(target, device, "cpu")


def test_modes_registered_for_reports():
    """Both SGLang-level modes are looked up by id like every other mode."""
    assert {"sglang-compile-sm120", "sglang-compile-sm90"} <= set(all_modes())


def test_other_family_is_simulated_sm90_and_labelled():
    """On the simulated target the non-SM120 run answers 9.0 and the device label says simulated SM90."""
    import torch

    ctx = _ctx()
    with sglang_case.family_device(ctx, OTHER):
        assert torch.cuda.get_device_capability() == (9, 0)
        assert ctx.device.label.startswith("simulated SM90")
    assert "torch.cuda.get_device_properties" in ctx.evidence["simulated_queries_sm90"]


def test_family_mismatch_on_real_hardware_is_not_applicable():
    """A real H200 cannot stand in for SM120, and a real SM120 cannot stand in for another family."""
    with pytest.raises(NotApplicable, match="needs an SM120 device"):
        with sglang_case.family_device(_ctx(GPU, Device("NVIDIA H200", (9, 0))), SM120):
            pass
    with pytest.raises(NotApplicable, match="non-SM120"):
        with sglang_case.family_device(_ctx(GPU, Device("RTX PRO 6000", (12, 0))), OTHER):
            pass


def test_missing_cuda_only_package_is_a_skip_not_an_error():
    """A path through sgl_kernel (not installed) is MissingDependency naming it."""
    binding = Fp4Binding(OTHER, "fp4_quantize", "sgl_kernel", "scaled_fp4_quant", "x", None)
    with pytest.raises(MissingDependency, match="sgl_kernel"):
        sglang_case.import_binding(binding)


def test_other_missing_module_stays_an_import_error():
    """A missing light dependency is a broken install (ImportError -> error), not a skip."""
    binding = Fp4Binding(SM120, "fp4_quantize", "pcgkit_no_such_module", "f", "x", None)
    with pytest.raises(ModuleNotFoundError):
        sglang_case.import_binding(binding)


def test_none_binding_is_not_applicable():
    """A binding whose import guard left it None (fp4_quantize = None) is not-applicable with the name."""
    binding = Fp4Binding(SM120, "fp4_quantize", "pcgkit.sglang.case", "NO_SUCH_ATTR", "x", None)
    with pytest.raises(NotApplicable, match="pcgkit.sglang.case.NO_SUCH_ATTR"):
        sglang_case.import_binding(binding)


def test_torch_op_name_tells_ops_from_functions():
    """torch.library.custom_op and torch.ops objects are ops; a plain function is not."""
    import torch

    @torch.library.custom_op("pcgkit_test::double", mutates_args=(), schema="(Tensor x) -> Tensor")
    def double(x):
        return x * 2

    assert "pcgkit_test" in sglang_case.torch_op_name(double)
    assert sglang_case.torch_op_name(torch.ops.aten.add) is not None
    assert sglang_case.torch_op_name(lambda x: x) is None


def test_ensure_compiled_is_taken_from_the_trampoline_closure():
    """The case calls install_torch_compiled's own _ensure_compiled, found in the trampoline's closure."""
    calls = []

    def _ensure_compiled(self, *args):
        calls.append(args)

    def trampoline(self, *args):
        return _ensure_compiled(self, *args)

    module = types.SimpleNamespace()
    module.forward = types.MethodType(trampoline, module)
    sglang_case.ensure_compiled_of(module)(module, 1)
    assert calls == [(1,)]


def test_without_sglang_the_case_is_not_applicable(monkeypatch):
    """The reference .venv has no sglang: not-applicable with a reason naming where it runs."""
    monkeypatch.setattr(sglang_case, "installed_version", lambda name: None)
    with pytest.raises(NotApplicable, match="sglang is not installed"):
        sglang_case.reproduce_family(_ctx(), SM120)


def test_matrix_sglang_cells_install_the_import_deps_and_keep_their_pins():
    """sglang cells resolve the light deps together with the cell's pins (one lock), sglang itself without
    its deps; FlashInfer-only cells get neither."""
    cell = Cell("seed", sglang="0.5.8", flashinfer="0.6.1", torch="2.9.1")
    inputs = cell_lock_inputs(cell)
    assert "pybase64" in inputs.requirements and "torch==2.9.1" in inputs.requirements
    assert inputs.no_deps == ("sglang==0.5.8",) and not any("sgl-kernel" in r for r in inputs.requirements)
    fi_only = cell_lock_inputs(Cell("fi", flashinfer="0.6.1", torch="2.9.1"))
    assert "pybase64" not in fi_only.requirements and fi_only.no_deps == ()


def test_import_deps_change_the_cell_hash(tmp_path):
    """The deps list is part of an sglang cell's definition, so editing it reruns the cell."""
    data = tmp_path / "deps.toml"
    data.write_text('[[deps]]\nsglang = ">=0.5.10"\npackages = ["orjson"]\n')
    assert sglang_import_dependencies("0.5.8", data) == []
    assert sglang_import_dependencies("0.5.10.post1", data) == ["orjson"]
    assert "sglang_import_deps" in Cell("s", sglang="0.5.8").definition()
    assert "sglang_import_deps" not in Cell("f", flashinfer="0.6.1").definition()


def _sglang_outcome() -> CellOutcome:
    sig = Signature("torch._dynamo.exc.Unsupported", "Attempted to call function marked as skipped", "gb0007",
                    innermost_library_frame=Frame("flashinfer/jit/cpp_ext.py", 69, "get_cuda_version"))
    facts = {"sglang": "0.5.8",
             "piecewise": {"default_state": "opt-in", "enable": "--enable-piecewise-cuda-graph", "disable": None,
                           "force": None, "source": "argparse (ServerArgs.add_cli_args)"},
             "fp4_dispatch": {SM120: {"module": "flashinfer", "attr": "fp4_quantize", "torch_op": None},
                              OTHER: {"module": "sgl_kernel", "attr": "scaled_fp4_quant",
                                      "torch_op": "torch.ops.sgl_kernel.scaled_fp4_quant"}}}
    results = (
        CaseResult("sglang-compile-sm120", "sim-sm120", Verdict.REPRODUCED, "r", {"label": "simulated SM120"},
                   {"sglang": "0.5.8"}, 1.0, sig, evidence={"sglang_facts": facts, "callable": "flashinfer.fp4_quantize"}),
        CaseResult("sglang-compile-sm90", "sim-sm120", Verdict.SKIPPED, "sgl_kernel (CUDA-only) is not installed",
                   {"label": "simulated SM90"}, {"sglang": "0.5.8"}, 1.0, None, evidence={"sglang_facts": facts}),
    )
    cell = Cell("seed", sglang="0.5.8", flashinfer="0.6.1", torch="2.9.1")
    return CellOutcome(cell, RAN, 5.0, versions={"sglang": "0.5.8", "python": "3.12.1"}, results=results)


def test_report_has_the_per_version_facts_section():
    """compat.json carries the facts per cell; compat.md renders flags, dispatch and both verdicts."""
    compat = build_compat([_sglang_outcome()], created="2026-11-29T10:00:00+00:00")
    (row,) = compat.sglang_facts
    assert row["verdicts"]["sglang-compile-sm120 [sim-sm120]"]["frame"] == "flashinfer/jit/cpp_ext.py:69:get_cuda_version"
    text = render_markdown(compat)
    assert "## SGLang per-version facts" in text
    assert "`--enable-piecewise-cuda-graph`" in text and "torch.ops.sgl_kernel.scaled_fp4_quant" in text
    assert "**reproduced** gb0007" in text and "**skipped**" in text


def test_report_without_sglang_cells_has_no_facts_section():
    """FlashInfer-only matrices render exactly as before (no empty section)."""
    compat = build_compat([], created="2026-11-29T10:00:00+00:00")
    assert compat.sglang_facts == () and "SGLang per-version facts" not in render_markdown(compat)


def test_the_one_op_module_annotates_its_input_with_the_tensor_class():
    """SGLang 0.5.4.post3-0.5.5 infer install_torch_compiled's dynamic dims only from `ann is torch.Tensor`:
    the case's forward carries the class, not the string PEP 563 would leave (measured: "No dynamic dims")."""
    import inspect

    import torch

    from pcgkit.sglang.case import build_module

    module = build_module(lambda x, scale: x, "cpu")
    assert inspect.signature(module.forward).parameters["x"].annotation is torch.Tensor
