"""The SGLang side of the sweep (issue 19 item 2): spec table, sgl_kernel import stub, classification glue.

The reference .venv has no sglang, so the real trace runs only where sglang is installed (the last
test, skipped with a reason elsewhere); everything else is pure or uses a tiny stand-in.
"""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from lab.sweep import sglang_methods
from lab.sweep.sglang_methods import MethodSpecError, load_methods, parse_method
from pcgkit.harness.versions import installed_version
from pcgkit.preflight.envs import sweep_import_dependencies
from pcgkit.sglang import cudastub
from pcgkit.sweep.classify import Observation, SweepClass, classify
from pcgkit.sweep.engine import SetupFailed


def test_method_table_loads_with_unique_ids_and_sglang_classes():
    """Every method row names a LinearMethod inside sglang's quantization package and a PEP 440 range."""
    specs = load_methods()
    assert len({s.id for s in specs}) == len(specs) >= 10
    assert all(s.linear_method.startswith("sglang.srt.layers.quantization.") for s in specs)
    assert {"modelopt_fp4", "fp8", "unquantized"} <= {s.id for s in specs}
    fp8 = next(s for s in specs if s.id == "fp8-block")
    assert fp8.config_dict()["weight_block_size"] == [128, 128] and fp8.applies_to("0.5.8")


@pytest.mark.parametrize("raw, message", [
    ({"id": "x", "method": "fp8", "linear_method": "a.B", "releases": "nope"}, "PEP 440"),
    ({"id": "x", "method": "fp8", "linear_method": "a.B", "releases": ">=1", "bogus": 1}, "unknown keys"),
    ({"id": "x", "method": "", "linear_method": "a.B", "releases": ">=1", "quant_config": {"a": 1}}, "quant_config"),
    ({"method": "fp8"}, "no id"),
])
def test_malformed_method_rows_are_one_line_errors(raw, message):
    """A bad row is a MethodSpecError naming what is wrong."""
    with pytest.raises(MethodSpecError, match=message):
        parse_method(raw)


def test_sweep_deps_add_the_measured_058_extras_without_touching_the_case_deps():
    """0.5.8's sweep needs transformers 4.57.1 & co on top of the case's list; other releases get nothing extra."""
    deps = sweep_import_dependencies("0.5.8")
    assert "transformers==4.57.1" in deps and "sentencepiece" in deps and "pybase64" in deps
    assert not any(d.startswith("sgl") and "kernel" in d for d in deps)
    from pcgkit.matrix.deps import sglang_import_dependencies

    assert sweep_import_dependencies("0.5.5") == sglang_import_dependencies("0.5.5")


def test_stub_answers_imports_and_raises_when_called():
    """Inside the block `from sgl_kernel.x import y` imports; calling y raises naming it; outside, no stub."""
    if importlib.util.find_spec("sgl_kernel") is not None:
        pytest.skip("a real sgl_kernel is installed: the stub never shadows it")
    with cudastub.sgl_kernel_stubbed() as stubbed:
        from sgl_kernel.scalar_type import scalar_types  # type: ignore[import-not-found]

        assert stubbed and repr(scalar_types.uint4b8) == "<pcgkit stub sgl_kernel.scalar_type.scalar_types.uint4b8>"
        with pytest.raises(cudastub.CudaOnlyStubCalled, match="sgl_kernel.scalar_type.scalar_types.uint4b8"):
            scalar_types.uint4b8()
    for name in [m for m in sys.modules if m.split(".")[0] == "sgl_kernel"]:
        del sys.modules[name]
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("sgl_kernel")


def _planted_sgl_kernel(folder, monkeypatch) -> None:
    """An importable `sgl_kernel` whose import fails as the trimmed real one did under a simulated SM120 on the H200."""
    package = folder / "sgl_kernel"
    package.mkdir()
    (package / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'common_ops'\")\n")
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()


def test_always_stubs_even_over_a_real_install_and_the_default_never_does(tmp_path, monkeypatch):
    """always=True (a simulation on a GPU host) answers `import sgl_kernel` with the stand-in over a real install
    whose import fails for the answered architecture; without it the real package is used (and fails)."""
    _planted_sgl_kernel(tmp_path, monkeypatch)
    with cudastub.sgl_kernel_stubbed(always=True) as stubbed:
        import sgl_kernel  # type: ignore[import-not-found]

        assert stubbed and isinstance(sgl_kernel.gemm, cudastub.CudaOnlyPlaceholder)
    for name in [m for m in sys.modules if m.split(".")[0] == "sgl_kernel"]:
        del sys.modules[name]
    with cudastub.sgl_kernel_stubbed() as stubbed:
        assert not stubbed
        with pytest.raises(ModuleNotFoundError, match="common_ops"):
            importlib.import_module("sgl_kernel")


def test_stub_skips_fake_registrations_of_its_ops_only():
    """register_fake("sgl_kernel::...") is a no-op under the stub (no C++ schema); other names go through."""
    import torch

    calls = []
    original = lambda op, *a, **k: calls.append(op) or (lambda fn: fn)  # noqa: E731
    register = cudastub._skipping_stubbed_fakes(original)
    fn = lambda x: x  # noqa: E731
    assert register("sgl_kernel::gptq_shuffle")(fn) is fn and calls == []
    register("mylib::op")
    assert calls == ["mylib::op"] and torch.library.register_fake is not register


def test_a_stub_call_under_fullgraph_is_named_in_the_break():
    """Traced under fullgraph, a call into the stub breaks with its name in the explanation (-> needs-gpu)."""
    import torch

    from pcgkit.harness.tracing import trace

    stub = cudastub.CudaOnlyPlaceholder("sgl_kernel.fp8_scaled_mm")
    outcome = trace(lambda x: stub(x) + 1, (torch.ones(2),), fullgraph=True, execute=False)
    assert not outcome.traced and outcome.signature is not None
    text = f"{outcome.signature.message_head} {outcome.signature.explanation}"
    assert cudastub.stub_reached(text) == "sgl_kernel.fp8_scaled_mm"


def test_stub_reached_reads_missing_sgl_kernel_ops():
    """An unregistered torch.ops.sgl_kernel op in an error is named; unrelated text is None."""
    assert cudastub.stub_reached("'_OpNamespace' 'sgl_kernel' object has no attribute 'cutlass_scaled_fp4_mm'") \
        == "torch.ops.sgl_kernel.cutlass_scaled_fp4_mm"
    assert cudastub.stub_reached("Unsupported: posix.stat") is None


@pytest.mark.parametrize("exc, needs_gpu", [
    (cudastub.CudaOnlyStubCalled("x"), True),
    (ValueError("Marlin does not support weight_bits = <pcgkit stub sgl_kernel.scalar_types.uint4b8>"), True),
    (NotImplementedError("Could not run 'sglang::per_tensor_quant_fp8' with arguments from the 'CPU' backend"), True),
    (RuntimeError("Found no NVIDIA driver on your system"), True),
    (KeyError("weight_block_size"), False),
])
def test_setup_failures_split_into_needs_gpu_and_spec_errors(exc, needs_gpu):
    """Set-up that needs CUDA is needs-gpu; any other set-up failure is the spec's error, with the stage named."""
    def boom():
        raise exc

    with pytest.raises(SetupFailed, match="create_weights") as caught:
        cudastub.stage("create_weights", boom)
    assert caught.value.needs_gpu is needs_gpu
    status = "needs-gpu" if needs_gpu else "build-error"
    expected = SweepClass.NEEDS_GPU if needs_gpu else SweepClass.ERROR
    assert classify(Observation(status, str(caught.value))).cls is expected


def test_readiness_rows_put_arches_in_order_and_mark_gaps():
    """One row per method, one column per arch present (sm120, sm100, sm90 order), '-' where not run."""
    rows = [{"method_id": "fp8", "arch": "sm90", "classification": {"class": "opaque-op"}},
            {"method_id": "fp8", "arch": "sm120", "classification": {"class": "needs-gpu"}},
            {"method_id": "awq", "arch": "sm120", "classification": {"class": "error"}}]
    assert sglang_methods.readiness_rows(rows) == [("fp8", "needs-gpu", "opaque-op"), ("awq", "error", "-")]


def test_without_sglang_the_arch_sweep_says_so(monkeypatch):
    """No sglang installed: a LookupError saying so, not an empty table."""
    monkeypatch.setattr("pcgkit.harness.versions.installed_version", lambda name: None)
    with pytest.raises(LookupError, match="not installed"):
        sglang_methods.sweep_arch("sm90", load_methods()[:1])


@pytest.mark.skipif(installed_version("sglang") is None, reason="sglang not installed (the reference .venv); "
                    "run with an sglang venv's python: measured on 0.5.8")
def test_installed_sglang_unquantized_apply_traces_through_install_torch_compiled(tmp_path):
    """With sglang installed: the unquantized linear traces through SGLang's own wrapper, with its evidence."""
    import json

    out = tmp_path / "sm90.json"
    done = subprocess.run([sys.executable, "-m", "lab.sweep.sglang_methods", "--arch", "sm90", "--only",
                           "unquantized", "--json", str(out)], capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    [row] = json.loads(out.read_text())
    assert row["classification"]["class"] == "traces-through" and row["simulated"] is True
    assert row["fullgraph"]["read_from"].startswith("sglang/") and "torch.cuda.is_available" in row["simulation_replaced"]
