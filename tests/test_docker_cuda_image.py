"""The CUDA cell image built here without any registry: docker/local-base.sh's Debian base, the CUDA
13.0 toolkit assembled from PyPI's NVIDIA wheels (docker/cuda-toolkits.toml, pinned and hashed),
FlashInfer 0.6.1's fp4 quantization module compiled for sm_120a with that nvcc during the build (no
GPU), then the seed stack's cases run inside it on that compiled JIT cache. Only the hardware queries
are simulated (the cases' target says so). CI's second invocation runs it (marked docker and slow).

The cell is the docker tests' CPU-torch cell (torch 2.13.0+cpu from the machine's wheelhouse keeps the
image ~2.5 GB instead of ~7 GB of CUDA wheels; a CPU torch has no CUDA runtime to clash with) on the
CUDA base. The seed's own torch 2.9.1 is built for CUDA 12.8: docker_cuda refuses it with these wheels
(tests/test_docker_cuda.py), and PyPI has no CUDA 12 nvcc; on a runner it takes nvidia/cuda:12.8.
"""

from __future__ import annotations

import re
import time

import pytest
from test_docker_engine import client, docker_config, exclusive, local_base  # noqa: F401 - fixtures

from pcgkit.matrix.backends import docker as backend_docker
from pcgkit.matrix.backends import docker_plan as plan
from pcgkit.matrix.backends import loop
from pcgkit.matrix.backends.base import BackendConfig
from pcgkit.matrix.cells import Cell
from pcgkit.report import compat, markdown

pytestmark = [pytest.mark.docker, pytest.mark.slow]

CUDA_CELL = Cell(id="docker-cuda-py311", python="3.11", flashinfer="0.6.1", torch="2.13.0",
                 base_image="debian-pypi-cuda-13.0")
FP4_SM120_SO = "fp4_quantization_120.so"


@pytest.fixture(scope="module")
def cuda_image(client, local_base, tmp_path_factory):  # noqa: F811 - the imported fixtures
    """The CUDA cell image (built once; reused while its context hash holds). Its build log is kept."""
    cell_dir = tmp_path_factory.mktemp("cuda-build")
    start = time.monotonic()
    with exclusive():
        image, _, _, lock = backend_docker.prepare_image(client, CUDA_CELL, docker_config(), cell_dir,
                                                         timeout_s=3600)
    print(f"cuda image {image.id}: ready in {time.monotonic() - start:.0f} s; log {cell_dir / 'build.log'}")
    return image


def in_image(client, image, script: str) -> str:  # noqa: F811
    """stdout+stderr of a shell script run in the image as its user, with no network."""
    out = client.containers.run(image.id, entrypoint=["/bin/sh", "-c", script], network_mode="none",
                                remove=True, stdout=True, stderr=True)
    return out.decode()


def test_cuda_image_says_where_its_toolkit_came_from(client, cuda_image):  # noqa: F811
    """Label and file inside both say pypi-wheels; the file lists every hashed wheel; nvcc is 13.0."""
    assert cuda_image.labels["pcgkit.cuda-source"] == plan.CUDA_FROM_WHEELS
    out = in_image(client, cuda_image, "cat /opt/pcgkit/cuda-source.txt; echo CUDA_HOME=$CUDA_HOME; nvcc --version")
    assert out.startswith("cuda-source=pypi-wheels (Build cuda_13.0")
    assert "nvidia-cuda-nvcc==13.0.88 --hash=sha256:56fe502eb776" in out
    assert "CUDA_HOME=/opt/pcgkit/cuda" in out and "release 13.0, V13.0.88" in out


def test_fp4_module_was_compiled_for_sm120a_in_the_build(client, cuda_image):  # noqa: F811
    """The build compiled fp4_quantization_120.so with nvcc; cuobjdump lists sm_120a code in it."""
    out = in_image(client, cuda_image, "cat /opt/pcgkit/jit-prebuilt.txt; "
                   f"cuobjdump --list-elf $(find /opt/pcgkit/jit-cache -name {FP4_SM120_SO})")
    assert f"gen_fp4_quantization_sm120_module: {FP4_SM120_SO}" in out
    elf = [line for line in out.splitlines() if line.startswith("ELF file")]
    assert elf and all("sm_120a" in line for line in elf), out


@pytest.fixture(scope="module")
def cuda_outcome(cuda_image, tmp_path_factory):
    """The cell's cases in the CUDA image: the image's own CUDA_HOME and its compiled JIT cache."""
    root = tmp_path_factory.mktemp("cuda-cells")
    run = loop.CellLoop(backend_docker.DockerBackend(docker_config()))
    return run(CUDA_CELL, BackendConfig(cells_root=root, backend="docker", timeout_s=1800, case_timeout_s=400))


def verdicts(outcome) -> dict[tuple[str, str], str]:
    return {(r.mode, r.variant): r.verdict.value for r in outcome.results}


def test_cases_run_in_the_cuda_image_with_the_real_toolkit(cuda_outcome):
    """The cases ran; the toolkit they saw is the image's (nvcc 13.0); hardware is labelled simulated."""
    assert not cuda_outcome.is_error, f"{cuda_outcome.stage}: {cuda_outcome.reason}\n{cuda_outcome.log_tail}"
    table = verdicts(cuda_outcome)
    # mode 1 with a real nvcc: dynamo stops at `nvcc --version` in get_cuda_version, not at `which nvcc`
    assert table[("mode1", "sim-sm120")] == "reproduced"
    mode1 = next(r for r in cuda_outcome.results if (r.mode, r.variant) == ("mode1", "sim-sm120"))
    assert "get_cuda_version" in str(mode1.signature.innermost_library_frame)
    assert mode1.evidence["CUDA_HOME"] == "/opt/pcgkit/cuda"
    # mode 3: the warm cache is a real one now (get_cuda_version ran nvcc eagerly), and it is traced through
    assert table[("mode3", "sim-sm120")] == "reproduced"
    mode3 = next(r for r in cuda_outcome.results if (r.mode, r.variant) == ("mode3", "sim-sm120"))
    assert mode3.evidence["get_cuda_version.cache_info"]["currsize"] >= 1
    # allow-in-graph: the loader, run at trace time, finds the compiled module warm and loads it (from the
    # exec /tmp); dynamo then refuses the module object it returns (gb0208), not a failed load (gb4315)
    allow = next(r for r in cuda_outcome.results if (r.mode, r.variant) == ("fix-allow-in-graph", "sim-sm120"))
    assert allow.signature.graph_break_id == "gb0208", allow.signature
    assert all(r.simulated for r in cuda_outcome.results if r.variant.startswith("sim-"))


def test_report_carries_the_image_digest_and_its_cuda_lock(cuda_outcome, cuda_image, tmp_path):
    """results.json's cell and the summary name the image, its CUDA source and the hashed CUDA wheels."""
    assert cuda_outcome.provenance["image_id"] == cuda_image.id
    assert cuda_outcome.provenance["cuda_source"] == plan.CUDA_FROM_WHEELS
    lock = cuda_outcome.lock
    assert lock["context_hash"] == cuda_image.labels["pcgkit.context-hash"]
    assert any(re.fullmatch(r"nvidia-cuda-nvcc==13\.0\.88 sha256:[0-9a-f]{64}", w) for w in lock["cuda_wheels"])
    report = compat.build_compat([cuda_outcome], created="2026-12-07T00:00:00Z")
    cell = report.cells[0].to_dict()  # what results' compat.json holds for the cell
    assert cell["provenance"]["image_digest"] == plan.LOCALLY_BUILT
    assert cell["provenance"]["cuda_lock"] == lock["cuda_wheels"]
    assert cell["provenance"]["context_hash"] == lock["context_hash"]
    table = "\n".join(markdown.render_images(report.cells))  # the summary's Images section
    assert cuda_image.id[:19] in table and "13.0 from PyPI's NVIDIA wheels" in table
