"""The container backend against a real Docker engine: a base image built here without a registry
(docker/local-base.sh: debootstrap + docker import), one cell's image built from it through
docker/Dockerfile, the simulated-SM120 cases run inside, and the results compared with the venv
backend's for the same cell. Then the failure paths: a bad build, a hung container killed, an
OOM kill, an unreachable registry, a dead daemon.

No engine: skipped on a laptop, FAILED in CI (CI or PCGKIT_REQUIRE_DOCKER=1; .ci/run starts one).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

import pytest

from pcgkit.matrix.backends import docker as backend_docker
from pcgkit.matrix.backends import docker_engine as engine
from pcgkit.matrix.backends import docker_plan as plan
from pcgkit.matrix.backends import loop
from pcgkit.matrix.backends.base import BackendConfig
from pcgkit.matrix.backends.venv import BACKEND as VENV_BACKEND
from pcgkit.matrix.cells import Cell
from pcgkit.util import proc

pytestmark = pytest.mark.docker

LOCAL_BASE = "pcgkit-local/bookworm-py311:minbase"
# A CPU torch wheel lies on these machines (FACTS.md): both backends install it, so the image
# stays ~1.6 GB instead of ~7 GB of CUDA wheels. Elsewhere the cell pulls torch from PyPI.
WHEELHOUSE = Path(os.environ.get("PCGKIT_WHEELHOUSE", "/opt/wheels"))
# Debian bookworm's python3 is 3.11: the cell's Python must be the image's.
CELL = Cell(id="docker-py311", python="3.11", flashinfer="0.6.1", torch="2.13.0", base_image=LOCAL_BASE)
LOCK = Path("/tmp/pcgkit-docker-tests.lock")


def docker_required() -> bool:
    return bool(os.environ.get("CI")) or os.environ.get("PCGKIT_REQUIRE_DOCKER") == "1"


@contextlib.contextmanager
def exclusive():
    """One xdist worker at a time builds images (the other then reuses them by context hash)."""
    with open(LOCK, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def client():
    """A live engine; no engine skips here but fails in CI."""
    try:
        return engine.connect(timeout_s=30)
    except engine.DockerFailure as exc:
        if docker_required():
            pytest.fail(f"CI needs a Docker engine and none answers: {exc.reason}")
        pytest.skip(f"no Docker engine reachable ({exc.cause}); CI starts one (.ci/run)")


@pytest.fixture(scope="session")
def local_base(client):
    """The registry-free base image (built once, its root filesystem cached between runs)."""
    with exclusive():
        done = proc.run([str(plan.DOCKER_DIR / "local-base.sh"), LOCAL_BASE], timeout=1500)
    assert done.ok, f"docker/local-base.sh {done.describe_failure()}:\n{done.output_tail}"
    return client.images.get(LOCAL_BASE)


def docker_config(**over) -> backend_docker.DockerConfig:
    settings = {"gpus": "none", "ca_bundle": backend_docker.default_ca_bundle(),
                "wheelhouse": WHEELHOUSE if WHEELHOUSE.is_dir() else None}
    return backend_docker.DockerConfig(**{**settings, **over})


@pytest.fixture(scope="session")
def cell_image(client, local_base, tmp_path_factory):
    """The cell's image, built through docker/Dockerfile (or reused when its context hash matches)."""
    cell_dir = tmp_path_factory.mktemp("build")
    with exclusive():
        image, base, _, _ = backend_docker.prepare_image(client, CELL, docker_config(), cell_dir, timeout_s=2400)
    return image


# Neither side gets a CUDA toolkit: the image has none, and the host's /usr/local/cuda would be
# found by FlashInfer's default path (get_cuda_path). That toolkit moves mode1's and mode3's
# innermost frames, and mode2's too (an earlier eager case then gets far enough to register the
# JIT spec, so mode2's trace skips register()'s datetime.now()). CUDA_HOME pointing nowhere on
# both sides gives both the same "no toolkit" path.
NO_TOOLKIT = (("CUDA_HOME", "/nonexistent/cuda"),)


@pytest.fixture(scope="session")
def docker_outcome(cell_image, tmp_path_factory):
    root = tmp_path_factory.mktemp("docker-cells")
    run = loop.CellLoop(backend_docker.DockerBackend(docker_config(environment=NO_TOOLKIT)))
    return run(CELL, BackendConfig(cells_root=root, backend="docker", timeout_s=1500, case_timeout_s=300))


@pytest.fixture(scope="session")
def venv_outcome(tmp_path_factory):
    """The same cell through the venv backend, with the same torch wheel and the same (absent) toolkit."""
    tmp = tmp_path_factory.mktemp("venv-cell")
    overrides = dict(NO_TOOLKIT)
    if WHEELHOUSE.is_dir():
        overrides["UV_FIND_LINKS"] = str(WHEELHOUSE)
    saved = {k: os.environ.get(k) for k in overrides}
    os.environ.update(overrides)
    try:
        config = BackendConfig(cells_root=tmp / "cells", envs_root=tmp / "envs", timeout_s=1500, case_timeout_s=300)
        return loop.run_cell(VENV_BACKEND, CELL, config)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def by_target(outcome) -> dict[tuple[str, str], tuple[str, str | None]]:
    """(mode, variant) -> (verdict, innermost library frame)."""
    table = {}
    for r in outcome.results:
        frame = r.signature.innermost_library_frame if r.signature else None
        table[(r.mode, r.variant)] = (r.verdict.value, str(frame) if frame else None)
    return table


def test_docker_cell_results_equal_the_venv_backends(docker_outcome, venv_outcome):
    """Same cell, two backends: the same verdicts and innermost frames for every mode and target."""
    assert not venv_outcome.is_error, f"venv backend: {venv_outcome.stage}: {venv_outcome.reason}"
    assert not docker_outcome.is_error, f"docker backend: {docker_outcome.stage}: {docker_outcome.reason}"
    docker_table, venv_table = by_target(docker_outcome), by_target(venv_outcome)
    assert docker_table == venv_table
    # Not vacuous: the simulated cases really traced into FlashInfer and reproduced there.
    assert docker_table[("mode1", "sim-sm120")][0] == "reproduced"
    assert docker_outcome.versions["torch"] == venv_outcome.versions["torch"]
    assert docker_outcome.versions["flashinfer-python"] == "0.6.1"


def test_docker_results_carry_image_provenance(docker_outcome, cell_image):
    """The cell and every result record the image id, 'locally built', the base and CUDA in image."""
    prov = docker_outcome.provenance
    assert prov["image_id"] == cell_image.id
    assert prov["image_digest"] == plan.LOCALLY_BUILT
    assert prov["base_image"] == LOCAL_BASE
    assert prov["cuda_in_image"].startswith("none")
    assert all(r.evidence["image"]["image_id"] == cell_image.id for r in docker_outcome.results)


def test_case_container_is_locked_down(client, cell_image):
    """Inside a case container: not root, no network, / read-only, /out writable."""
    probe = (
        "import os, socket; print('uid', os.getuid());"
        "print('ro', not os.access('/opt', os.W_OK) and not os.access('/', os.W_OK));"
        "open('/out/probe', 'w').write('x'); print('out ok');"
        "s = socket.socket();\n"
        "try:\n s.settimeout(3); s.connect(('1.1.1.1', 443)); print('net yes')\n"
        "except OSError as e:\n print('net no', e)"
    )
    with engine.output_volume(client) as volume:
        settings = plan.container_kwargs(cell_image.id, (), volume, gpus=False, environment={},
                                         labels={"pcgkit.test": "1"})
        kwargs = {**settings, "entrypoint": ["/opt/pcgkit/venv/bin/python", "-c", probe]}
        with engine.running(client, kwargs) as container:
            exited = engine.wait(container, 60, Path(os.devnull))
            logs = container.logs().decode()
    assert exited.status_code == 0, logs
    assert "uid 10001" in logs and "ro True" in logs and "out ok" in logs
    assert "net no" in logs


def test_hung_container_is_killed_and_removed(client, cell_image):
    """Past the hard limit the container is killed (not just the HTTP wait) and then removed."""
    with engine.output_volume(client) as volume:
        settings = plan.container_kwargs(cell_image.id, (), volume, gpus=False, environment={},
                                         labels={"pcgkit.test": "hang"})
        kwargs = {**settings, "entrypoint": ["sleep", "600"]}
        with engine.running(client, kwargs) as container:
            exited = engine.wait(container, 5, Path(os.devnull))
            container.reload()
            state = container.attrs["State"]
            name = container.name
    assert exited.timed_out and exited.duration_s < 60
    assert state["Running"] is False
    assert not client.containers.list(all=True, filters={"name": name})


def test_interrupted_run_still_removes_the_container(client, cell_image):
    """Ctrl-C inside the context manager: the container is gone afterwards."""
    kwargs = {"image": cell_image.id, "entrypoint": ["sleep", "600"], "detach": True, "network_mode": "none"}
    with pytest.raises(KeyboardInterrupt):
        with engine.running(client, kwargs) as container:
            name = container.name
            raise KeyboardInterrupt
    assert not client.containers.list(all=True, filters={"name": name})


def test_oom_killed_container_is_reported(client, cell_image):
    """A container over its memory limit is killed by the kernel and State.OOMKilled says so."""
    grab = "x = bytearray(512 * 1024 * 1024); x[::4096] = b'1' * len(x[::4096])"
    kwargs = {"image": cell_image.id, "entrypoint": ["/opt/pcgkit/venv/bin/python", "-c", grab], "detach": True,
              "network_mode": "none", "mem_limit": "64m", "memswap_limit": "64m"}
    with engine.running(client, kwargs) as container:
        exited = engine.wait(container, 120, Path(os.devnull))
    assert exited.oom_killed, exited


def test_bad_build_is_an_error_cell(local_base, tmp_path):
    """A pin that does not exist fails the image build: an error cell naming the build and the pin."""
    bad = Cell(id="docker-bad-pin", python="3.11", flashinfer="0.0.0", torch="2.13.0", base_image=LOCAL_BASE)
    with exclusive():
        outcome = loop.CellLoop(backend_docker.DockerBackend(docker_config()))(
            bad, BackendConfig(cells_root=tmp_path, backend="docker", timeout_s=900))
    assert outcome.is_error and outcome.stage == "install"
    assert engine.BUILD_FAILED in outcome.reason
    assert "0.0.0" in outcome.log_tail
    assert "flashinfer-python" in (tmp_path / bad.id / "build.log").read_text()


def test_python_mismatch_fails_the_build_with_both_versions(local_base, tmp_path):
    """A cell asking for another Python than the base has: the build says which two."""
    wrong = Cell(id="docker-py312-on-bookworm", python="3.12", torch="2.13.0", base_image=LOCAL_BASE)
    outcome = loop.CellLoop(backend_docker.DockerBackend(docker_config()))(
        wrong, BackendConfig(cells_root=tmp_path, backend="docker", timeout_s=600))
    assert outcome.is_error and engine.BUILD_FAILED in outcome.reason
    assert "python3 is 3.11; this cell wants Python 3.12" in outcome.log_tail


def test_unreachable_registry_on_pull_is_an_error_cell(client, tmp_path):
    """A base that must be pulled from a registry nobody can reach: an error cell saying so."""
    cell = Cell(id="docker-no-registry", python="3.11", torch="2.13.0", base_image="registry.invalid/pcgkit/none:1")
    outcome = loop.CellLoop(backend_docker.DockerBackend(docker_config()))(
        cell, BackendConfig(cells_root=tmp_path, backend="docker", timeout_s=300))
    assert outcome.is_error and outcome.stage == "install"
    assert outcome.reason.startswith(engine.PULL_UNREACHABLE), outcome.reason


def test_dead_daemon_is_an_error_cell(tmp_path, monkeypatch):
    """DOCKER_HOST at a socket nobody listens on: an error cell 'no Docker daemon', no crash."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/dead.sock")
    outcome = loop.CellLoop(backend_docker.DockerBackend(docker_config()))(
        CELL, BackendConfig(cells_root=tmp_path, backend="docker", timeout_s=60))
    assert outcome.is_error and outcome.reason.startswith(engine.NO_DAEMON), outcome.reason
    assert "start dockerd" in outcome.reason


def test_gpus_without_nvidia_runtime_is_a_clear_error_cell(cell_image, tmp_path):
    """--gpus all on an engine with no NVIDIA runtime (this one): an error cell naming the runtime."""
    info = engine.connect().info()
    if "nvidia" in (info.get("Runtimes") or {}):
        pytest.skip("this engine has the NVIDIA runtime: the missing-runtime path cannot happen here")
    outcome = loop.CellLoop(backend_docker.DockerBackend(docker_config(gpus="all")))(
        CELL, BackendConfig(cells_root=tmp_path, backend="docker", timeout_s=300))
    assert outcome.is_error and outcome.stage == "run"
    assert outcome.reason.startswith(engine.NO_GPU_RUNTIME), outcome.reason
    assert "nvidia-container-toolkit" in outcome.reason
