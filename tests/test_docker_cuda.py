"""The CUDA toolkit from PyPI's NVIDIA wheels as data, and the check that a toolkit fits a cell's torch
before any image is built (pcgkit/matrix/backends/docker_cuda.py, docker/cuda-toolkits.toml). No Docker."""

from __future__ import annotations

import dataclasses

import pytest

from pcgkit.errors import UsageError
from pcgkit.matrix.backends import docker as backend_docker
from pcgkit.matrix.backends import docker_cuda as dc
from pcgkit.matrix.backends import docker_engine as engine
from pcgkit.matrix.backends import docker_plan as plan
from pcgkit.matrix.backends.base import StageFailed
from pcgkit.matrix.cells import Cell

KNOWN = dc.load_cuda_toolkits()
CUDA13 = KNOWN.toolkits["13.0"]


def with_wheel(toolkit: dc.CudaToolkit, name: str, version: str | None) -> dc.CudaToolkit:
    """The toolkit with one wheel's version replaced (None: the wheel removed)."""
    wheels = tuple(dataclasses.replace(w, version=version) if w.name == name else w
                   for w in toolkit.wheels if not (w.name == name and version is None))
    return dataclasses.replace(toolkit, wheels=wheels)


def test_committed_set_is_one_cuda_13_0_with_nvcc_and_hashes():
    """The committed 13.0 set has nvcc, one major.minor across nvcc's chain, and a sha256 per wheel."""
    names = {w.name for w in CUDA13.wheels}
    assert {"nvidia-cuda-nvcc", "nvidia-nvvm", "nvidia-cuda-crt", "nvidia-cuda-runtime", "nvidia-cuda-cccl",
            "nvidia-cuda-cuobjdump", "nvidia-cublas", "nvidia-curand"} <= names
    assert all(w.version.startswith("13.0.") for w in CUDA13.wheels if w.part == dc.COMPILER)
    assert dc.toolkit_mismatch(CUDA13, "2.13.0", dc.CPU) is None


def test_requirements_pin_every_wheel_by_hash_and_name_the_layout():
    """The file pip installs with --require-hashes: every wheel ==version --hash, plus the cuda and root lines."""
    text = dc.requirements(CUDA13)
    pinned = [line for line in text.splitlines() if not line.startswith("#")]
    assert len(pinned) == len(CUDA13.wheels)
    assert all(" --hash=sha256:" in line and "==" in line for line in pinned)
    assert "# cuda: 13.0" in text and "# root: nvidia/cu13" in text


@pytest.mark.parametrize(("torch", "expected"), [
    ("2.9.1", "torch 2.9.1 is built for CUDA 12.8 and CUDA wheel set '13.0' is CUDA 13.0"),  # the seed: cu128
    ("2.8.0", "libcudart.so.13 beside torch's libcudart.so.12"),
    ("2.7.0", "torch 2.7.0: the CUDA it is built for is not recorded"),
])
def test_a_torch_of_another_cuda_major_or_unknown_is_refused_in_one_line(torch, expected):
    """torch cu128 with the CUDA 13 wheels (and an unrecorded torch) gets one line naming the mismatch."""
    line = dc.toolkit_mismatch(CUDA13, torch, dc.torch_cuda_build(torch, KNOWN.torch_cuda))
    assert line is not None and expected in line and "\n" not in line


@pytest.mark.parametrize("torch", ["2.11.0", "2.13.0", "2.14.1", "2.15.0"])
def test_torch_built_for_cuda_13_0_or_newer_minor_fits_the_13_0_set(torch):
    """Same major, toolkit minor not newer than torch's runtime: fits (2.15.0 is built for 13.2)."""
    assert dc.toolkit_mismatch(CUDA13, torch, dc.torch_cuda_build(torch, KNOWN.torch_cuda)) is None


def test_a_toolkit_newer_than_torchs_runtime_is_refused():
    """A 13.2 toolkit for torch's 13.0 runtime: the module could call what that runtime lacks."""
    newer = dataclasses.replace(CUDA13, name="13.2", cuda="13.2", wheels=tuple(
        dataclasses.replace(w, version="13.2.51") if w.part == dc.COMPILER else w for w in CUDA13.wheels))
    assert dc.toolkit_mismatch(newer, "2.15.0", "13.2") is None
    line = dc.toolkit_mismatch(newer, "2.13.0", "13.0")
    assert line and "newer toolkit" in line


def test_a_cpu_torch_from_the_wheelhouse_has_no_runtime_to_clash_with():
    """A torch-X+cpu wheel in the build's wheelhouse is a CPU build whatever PyPI's build of X is."""
    assert dc.torch_cuda_build("2.13.0", KNOWN.torch_cuda, ("torch-2.13.0+cpu-cp311-cp311-x.whl",)) == dc.CPU
    assert dc.torch_cuda_build("2.13.0", KNOWN.torch_cuda, ("torch-2.9.1+cpu-cp311-cp311-x.whl",)) == "13.0"


@pytest.mark.parametrize(("change", "expected"), [
    (("nvidia-cuda-nvcc", None), "has no nvidia-cuda-nvcc"),
    (("nvidia-nvvm", "13.5.37"), "nvidia-nvvm 13.5.37 is not CUDA 13.0"),
    (("nvidia-cuda-cuobjdump", "12.9.1"), "nvidia-cuda-cuobjdump 12.9.1 is not CUDA 13.x"),
])
def test_a_broken_wheel_set_is_refused_whatever_the_torch(change, expected):
    """No nvcc, a mixed minor in nvcc's chain, a tool of another major: one line, even for a CPU torch."""
    line = dc.toolkit_mismatch(with_wheel(CUDA13, *change), "2.13.0", dc.CPU)
    assert line is not None and expected in line


def test_a_toolkit_older_than_12_8_cannot_target_sm120():
    """CUDA 12.6 wheels: sm_120 needs nvcc 12.8."""
    old = dataclasses.replace(CUDA13, cuda="12.6", wheels=tuple(
        dataclasses.replace(w, version="12.6.85") for w in CUDA13.wheels))
    line = dc.toolkit_mismatch(old, "2.13.0", dc.CPU)
    assert line and "sm_120 needs nvcc 12.8" in line


def test_a_base_images_own_toolkit_is_held_to_the_same_runtime_rule():
    """nvidia/cuda 12.8 fits the seed's torch 2.9.1 (cu128) and not torch 2.11.0 (CUDA 13.0)."""
    pins = plan.load_image_pins()
    base = pins.bases[pins.default_base]
    for_torch = {torch: dc.torch_cuda_build(torch, KNOWN.torch_cuda) for torch in ("2.9.1", "2.11.0")}
    assert dc.cuda_for_cell(base.name, base.ref, base.cuda, "", "2.9.1", for_torch["2.9.1"], KNOWN) == ("", None)
    _, line = dc.cuda_for_cell(base.name, base.ref, base.cuda, "", "2.11.0", for_torch["2.11.0"], KNOWN)
    assert line and "torch 2.11.0 is built for CUDA 13.0" in line and base.ref in line


def test_the_registry_free_cuda_base_names_a_committed_wheel_set():
    """pins.toml's debian-pypi-cuda-13.0 base takes its toolkit from the 13.0 wheels and is local (no digest to lock)."""
    base = plan.load_image_pins().bases["debian-pypi-cuda-13.0"]
    assert (base.cuda_source, base.cuda_wheels, base.local) == (plan.CUDA_FROM_WHEELS, "13.0", True)
    assert base.cuda_wheels in KNOWN.toolkits


def test_the_backend_refuses_a_mismatched_cell_before_touching_the_engine(monkeypatch, tmp_path):
    """The seed's torch (cu128) on the CUDA 13 wheel base: the image stage fails in one line, nothing is built."""
    touched = []
    monkeypatch.setattr(engine, "ensure_base", lambda *a, **k: touched.append("base"))
    monkeypatch.setattr(engine, "build", lambda *a, **k: touched.append("build"))
    seed = Cell(id="seed-on-wheels", python="3.11", flashinfer="0.6.1", torch="2.9.1",
                base_image="debian-pypi-cuda-13.0")
    with pytest.raises(StageFailed) as failed:
        backend_docker.prepare_image(object(), seed, backend_docker.DockerConfig(gpus="none"), tmp_path, 60)
    assert failed.value.reason.startswith("CUDA mismatch: torch 2.9.1 is built for CUDA 12.8")
    assert touched == []


def test_docker_context_refuses_a_mismatched_cell_in_one_line(tmp_path):
    """`pcgkit docker context` for a cell whose torch does not fit its base's toolkit writes nothing."""
    from pcgkit.commands import docker as docker_cmd

    matrix = tmp_path / "matrix.toml"
    matrix.write_text('schema = "pcgkit.matrix/1"\n[[cell]]\nid = "seed-wheels"\nflashinfer-python = "0.6.1"\n'
                      'torch = "2.9.1"\npython = "3.11"\nbase-image = "debian-pypi-cuda-13.0"\n')
    import argparse

    parser = argparse.ArgumentParser()
    docker_cmd.register(parser.add_subparsers())
    args = parser.parse_args(["docker", "context", "--cell", "seed-wheels", "--matrix", str(matrix),
                              str(tmp_path / "ctx")])
    with pytest.raises(UsageError, match="CUDA mismatch: torch 2.9.1 is built for CUDA 12.8"):
        args.func(args)
    assert not (tmp_path / "ctx").exists()


def test_a_cell_without_a_base_takes_the_one_for_its_torchs_cuda():
    """torch 2.9.1 (CUDA 12.8) -> cuda-12.8; torch 2.11.0 (CUDA 13.0) -> cuda-13.0; a CPU torch -> the default."""
    pins = plan.load_image_pins()
    for torch, wheels, base in (("2.9.1", (), "cuda-12.8"), ("2.11.0", (), "cuda-13.0"),
                                ("2.13.0", ("torch-2.13.0+cpu-cp311-cp311-x.whl",), pins.default_base)):
        cell = Cell(id="c", flashinfer="0.6.1", torch=torch)
        chosen, pinned = backend_docker.base_and_cuda(cell, pins, tuple(plan.Path(w) for w in wheels))
        assert chosen.name == base and pinned == ""
    named = Cell(id="n", flashinfer="0.6.1", torch="2.11.0", base_image="cuda-12.8")  # named: kept, and refused
    with pytest.raises(StageFailed, match="CUDA mismatch: torch 2.11.0 is built for CUDA 13.0"):
        backend_docker.base_and_cuda(named, pins, ())
