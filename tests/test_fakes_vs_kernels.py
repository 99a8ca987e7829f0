"""benchmarks/fakes_vs_kernels.py (issue 40): a registered op's fake against its kernel, on CPU with ops defined
here (one honest fake, one whose fake lays its output out row-major where the kernel is column-major, one whose
kernel refuses this device), and the pure comparison and table on their own."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("fakes_vs_kernels_under_test", ROOT / "benchmarks" / "fakes_vs_kernels.py")
fvk = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fvk)
QUICK = ("test_schema", "test_faketensor")  # opcheck's aot_dispatch test compiles (~20 s here); the device runs all four


@torch.library.custom_op("pcgkit_fvk_test::honest", mutates_args=())
def _honest(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@_honest.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op("pcgkit_fvk_test::column_major", mutates_args=())
def _column_major(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_strided(x.shape, (1, x.shape[0]), dtype=x.dtype, device=x.device)
    out.copy_(x)
    return out


@_column_major.register_fake
def _(x):
    return x.new_empty(x.shape)  # row-major: the drift a compiled graph would trust


@torch.library.custom_op("pcgkit_fvk_test::other_gpu", mutates_args=())
def _other_gpu(x: torch.Tensor) -> torch.Tensor:
    raise RuntimeError("kernel requires SM100 or newer; got SM90")


@_other_gpu.register_fake
def _(x):
    return torch.empty_like(x)


def test_an_honest_fake_agrees_and_passes_opcheck():
    """Same shape, dtype, stride and device from the fake as from the kernel, and every opcheck test SUCCESS."""
    row = fvk.judge("pcgkit_fvk_test::honest", (torch.randn(4, 3),), {}, "test", "cpu", QUICK)
    assert row["class"] == fvk.AGREES and row["differences"] == []
    assert row["real"] == {"shape": [4, 3], "dtype": "float32", "stride": [3, 1], "device": "cpu"}
    assert set(row["opcheck"]) == set(QUICK) and set(row["opcheck"].values()) == {"SUCCESS"}


def test_a_fake_with_other_strides_is_drift():
    """The kernel returns column-major [4, 3] (strides 1, 4), the fake row-major (3, 1): drift, named by field."""
    row = fvk.judge("pcgkit_fvk_test::column_major", (torch.randn(4, 3),), {}, "test", "cpu", QUICK)
    assert row["class"] == fvk.FAKE_DRIFT and row["differences"] == ["out.stride: real [1, 4], fake [3, 1]"]


@torch.library.custom_op("pcgkit_fvk_opcheck::wrong_dtype_fake", mutates_args=())
def _wrong_dtype_fake(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@_wrong_dtype_fake.register_fake
def _(x):
    return x.new_empty(x.shape, dtype=torch.float64)


def test_an_opcheck_failure_keeps_what_caused_it():
    """opcheck's error names the failing test; its cause (what differed) is kept beside it, not cut off."""
    row = fvk.judge("pcgkit_fvk_opcheck::wrong_dtype_fake", (torch.randn(4, 3),), {}, "test", "cpu", QUICK)
    text = row["opcheck"]["opcheck"]
    assert row["class"] == fvk.FAKE_DRIFT and text.startswith("OpCheckError: ") and " <- caused by: " in text
    assert "float64" in text.split(" <- caused by: ", 1)[1]


def test_a_kernel_that_refuses_this_gpu_is_recorded_not_judged():
    """The kernel's own refusal is the record; no fake comparison and no opcheck are claimed."""
    row = fvk.judge("pcgkit_fvk_test::other_gpu", (torch.randn(2),), {}, "test", "cpu")
    assert row["class"] == fvk.KERNEL_RAISED and "requires SM100" in row["kernel_error"]
    assert "fake" not in row and "opcheck" not in row


def test_run_covers_every_registered_op_of_the_namespace_with_certificate_inputs(tmp_path):
    """run(): ops found in torch's dispatcher; a certificate's recorded call (metadata) becomes random inputs;
    an op with neither recipe nor recorded call is listed as no-inputs; the table renders every row."""
    cert = {"schema": "pcgkit.certificate/1", "ops": [
        {"qualname": "pcgkit_fvk_test::honest", "call": {"caller": "spec x", "args": [{"tensor": [2, 5], "dtype": "float32"}],
                                                         "kwargs": {}}}]}
    (tmp_path / "cert.json").write_text(json.dumps(cert))
    doc = fvk.run("cpu", [tmp_path / "cert.json"], ("pcgkit_fvk_test",), package=None, opcheck_tests=QUICK)
    rows = {r["op"]: r for r in doc["rows"]}
    assert set(rows) == {"pcgkit_fvk_test::honest", "pcgkit_fvk_test::column_major", "pcgkit_fvk_test::other_gpu"}
    assert rows["pcgkit_fvk_test::honest"]["class"] == fvk.AGREES
    assert rows["pcgkit_fvk_test::honest"]["inputs"] == [{"shape": [2, 5], "dtype": "float32", "stride": [5, 1], "device": "cpu"}]
    assert rows["pcgkit_fvk_test::column_major"]["class"] == fvk.NO_INPUTS
    table = fvk.render(doc)
    assert "agrees: 1; no-inputs: 2" in table and "`pcgkit_fvk_test::honest` | agrees | certificate cert.json (spec x)" in table
    assert doc["schema"] == fvk.SCHEMA and doc["simulated"] is False


@pytest.mark.parametrize("real, fake, expected", [
    ([{"shape": [1], "dtype": "uint8"}], [{"shape": [1], "dtype": "uint8"}], []),
    ([{"shape": [2048], "dtype": "uint8"}], [{"shape": [32768], "dtype": "uint8"}], ["out[0].shape: real [2048], fake [32768]"]),
    ([{"shape": [1]}], {"shape": [1]}, ["out: real [{'shape': [1]}], fake {'shape': [1]}"]),
])
def test_compare_meta(real, fake, expected):
    """Field-by-field differences, with where they are; a tuple against a single tensor is one difference."""
    assert fvk.compare_meta(real, fake) == expected


def test_materialize_never_makes_zeros():
    """A recorded float tensor becomes random data (zeros hide unwritten outputs); dtypes pass through."""
    t = fvk.materialize({"tensor": [64], "dtype": "bfloat16"}, "cpu")
    assert t.dtype == torch.bfloat16 and bool((t != 0).any())
    assert fvk.materialize({"dtype_value": "float16"}, "cpu") is torch.float16
