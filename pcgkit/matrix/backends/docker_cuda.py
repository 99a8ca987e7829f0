"""CUDA toolkits from PyPI's NVIDIA wheels (docker/cuda-toolkits.toml) and whether one fits a cell.

Pure except `load_cuda_toolkits`. The image build (docker/image/cuda-toolkit.sh) installs `requirements(...)`.

What fits: FlashInfer's JIT links its modules against libcudart.so.<major>, which in the cell's process
resolves to the runtime torch already loaded. So the toolkit's CUDA major must be torch's and its minor
no newer (a module built with 13.2 may call what torch's 13.0 runtime lacks). A CPU torch brings no
runtime: only the toolkit's own rules apply (an nvcc, one major.minor across nvcc's chain, CUDA >= 12.8).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from pcgkit import resources
from pcgkit.util.tomlfile import tomllib

DEFAULT_CUDA_TOOLKITS = resources.docker_dir() / "cuda-toolkits.toml"
SCHEMA = "pcgkit.cuda-toolkits/1"
COMPILER, TOOL, HEADERS = "compiler", "tool", "headers"
NVCC = "nvidia-cuda-nvcc"
CPU = "cpu"  # torch built without CUDA
SM120_FIRST_CUDA = (12, 8)  # nvcc 12.8 is the first to accept sm_120a


@dataclasses.dataclass(frozen=True)
class CudaWheel:
    name: str
    version: str
    part: str  # COMPILER, TOOL or HEADERS
    sha256: str


@dataclasses.dataclass(frozen=True)
class CudaToolkit:
    name: str
    cuda: str  # "13.0"
    root: str  # where the wheels put it ("nvidia/cu13"): CUDA_HOME
    wheels: tuple[CudaWheel, ...]


@dataclasses.dataclass(frozen=True)
class CudaToolkits:
    toolkits: dict[str, CudaToolkit]
    torch_cuda: dict[str, str]  # torch version -> the CUDA its PyPI wheel is built for


def parse_cuda_toolkits(text: str) -> CudaToolkits:
    """docker/cuda-toolkits.toml as data; a bad file is a ValueError naming what is wrong. Pure."""
    data = tomllib.loads(text)
    if data.get("schema") != SCHEMA:
        raise ValueError(f"CUDA toolkits schema {data.get('schema')!r}, expected {SCHEMA!r}")
    toolkits = {}
    for name, table in data.get("toolkits", {}).items():
        wheels = []
        for w in table.get("wheels", []):
            if w.get("part") not in (COMPILER, TOOL, HEADERS) or not re.fullmatch(r"[0-9a-f]{64}", w.get("sha256", "")):
                raise ValueError(f"[toolkits.{name}] wheel {w.get('name')!r}: needs a part and a sha256")
            wheels.append(CudaWheel(w["name"], w["version"], w["part"], w["sha256"]))
        toolkits[name] = CudaToolkit(name, str(table["cuda"]), str(table["root"]), tuple(wheels))
    return CudaToolkits(toolkits, {str(k): str(v) for k, v in data.get("torch-cuda", {}).items()})


def load_cuda_toolkits(path: Path = DEFAULT_CUDA_TOOLKITS) -> CudaToolkits:
    return parse_cuda_toolkits(path.read_text())


def requirements(toolkit: CudaToolkit) -> str:
    """The pip requirements file (hashed) the image build installs, with the layout it needs. Pure."""
    lines = [f"# CUDA {toolkit.cuda} from PyPI's NVIDIA wheels: written from docker/cuda-toolkits.toml",
             f"# cuda: {toolkit.cuda}", f"# root: {toolkit.root}"]
    lines += [f"{w.name}=={w.version} --hash=sha256:{w.sha256}" for w in toolkit.wheels]
    return "\n".join(lines) + "\n"


def _major_minor(version: str) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else None


def torch_cuda_build(torch_version: str, recorded: dict[str, str], wheel_names: tuple[str, ...] = ()) -> str | None:
    """The CUDA a cell's torch is built for: CPU for a +cpu wheel in the build's wheelhouse, else
    the recorded PyPI build, else None (unknown). Pure."""
    if any(name.startswith(f"torch-{torch_version}+cpu-") for name in wheel_names):
        return CPU
    return recorded.get(torch_version)


def toolkit_mismatch(toolkit: CudaToolkit, torch_version: str, torch_cuda: str | None) -> str | None:
    """One line naming why this wheel set cannot serve a cell with this torch, or None. Pure."""
    label = f"CUDA wheel set {toolkit.name!r}"
    have = _major_minor(toolkit.cuda)
    if have is None:
        return f"{label}: cuda {toolkit.cuda!r} is not a CUDA version"
    if not any(w.name == NVCC for w in toolkit.wheels):
        return f"{label} has no {NVCC}: nothing would compile (PyPI's nvidia-cuda-nvcc-cu12 ships ptxas only)"
    for w in toolkit.wheels:
        part_cuda = _major_minor(w.version)
        if w.part == COMPILER and part_cuda != have:
            return (f"{label}: {w.name} {w.version} is not CUDA {toolkit.cuda}; nvcc's chain must share one "
                    f"major.minor (ptxas rejects a newer nvvm's PTX)")
        if w.part == TOOL and (part_cuda is None or part_cuda[0] != have[0]):
            return f"{label}: {w.name} {w.version} is not CUDA {have[0]}.x"
    if have < SM120_FIRST_CUDA:
        return f"{label} is CUDA {toolkit.cuda}: sm_120 needs nvcc 12.8 or newer"
    return runtime_mismatch(label, toolkit.cuda, torch_version, torch_cuda)


def runtime_mismatch(label: str, cuda: str, torch_version: str, torch_cuda: str | None) -> str | None:
    """One line when a toolkit of CUDA `cuda` cannot build modules for this torch's runtime, or None
    (the module docstring says why major must equal and minor must not be newer). Pure."""
    have = _major_minor(cuda)
    if have is None:
        return None  # a base whose CUDA nobody recorded: nothing to compare
    if torch_cuda is None:
        return (f"torch {torch_version}: the CUDA it is built for is not recorded in docker/cuda-toolkits.toml "
                f"[torch-cuda] (read it from its nvidia-cuda-runtime requirement)")
    if torch_cuda == CPU:
        return None
    wanted = _major_minor(torch_cuda)
    if wanted is None or wanted[0] != have[0]:
        return (f"torch {torch_version} is built for CUDA {torch_cuda} and {label} is CUDA {cuda}: "
                f"a JIT module would need libcudart.so.{have[0]} beside torch's libcudart.so.{torch_cuda.split('.')[0]}"
                f" (use a CUDA {torch_cuda} toolkit, e.g. the nvidia/cuda base)")
    if have > wanted:
        return (f"torch {torch_version} is built for CUDA {torch_cuda} and {label} is CUDA {cuda}: "
                f"a module built with the newer toolkit may call what torch's runtime lacks")
    return None


def cuda_for_cell(base_name: str, base_ref: str, base_cuda: str, cuda_wheels: str, torch_version: str | None,
                  torch_cuda: str | None, known: CudaToolkits) -> tuple[str, str | None]:
    """(the hashed wheel pins the build installs, '' for a base's own toolkit; one line naming why the toolkit
    cannot serve this cell, or None), torch_cuda as torch_cuda_build says (CPU without a torch). Pure."""
    if not cuda_wheels:
        return "", runtime_mismatch(f"base image {base_ref}", base_cuda, torch_version or "", torch_cuda)
    toolkit = known.toolkits.get(cuda_wheels)
    if toolkit is None:
        return "", f"base {base_name!r}: cuda-wheels {cuda_wheels!r} is not a set of docker/cuda-toolkits.toml"
    return requirements(toolkit), toolkit_mismatch(toolkit, torch_version or "", torch_cuda)
