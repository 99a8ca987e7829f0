"""The container backend (`pcgkit matrix --backend docker`): one image per cell, the cases run inside.

base (local or pulled) -> image (built from docker/Dockerfile, or reused when one with the same context
hash exists) -> case run (no network, non-root, read-only root, only the output volume writable, GPUs when
the host has them, a hard timeout that kills the container) -> the results copied out, each stamped with
the image's provenance. The container and its volume are removed in every case.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from pcgkit.errors import UsageError
from pcgkit.jobs.run import RunFiles
from pcgkit.matrix.backends import docker_cuda
from pcgkit.matrix.backends import docker_engine as engine
from pcgkit.matrix.backends import docker_plan as plan
from pcgkit.matrix.backends.base import CaseRequest, CasesRan, CellContext, StageFailed
from pcgkit.matrix.cells import EXISTING, Cell
from pcgkit.matrix.deps import kit_light_dependencies
from pcgkit.matrix.outcome import STAGE_INSTALL, STAGE_RUN
from pcgkit.matrix.where import host_gpu

STAGE_IMAGE = STAGE_INSTALL  # the image build is this backend's install stage
GPU_AUTO, GPU_ALL, GPU_NONE = "auto", "all", "none"
EXTRA_RUN_S = 120.0  # the hard kill comes this long after `pcgkit run`'s own deadline
SUMMARY = "a pinned image each (docker/)"  # how `--backend`'s help describes it
CI_ARGUMENTS = ("--gpus", GPU_ALL)  # a GPU runner's job passes every GPU into the case container


def add_options(parser) -> None:
    """This backend's own options on `pcgkit matrix` / `bisect` (config_from_args reads them)."""
    group = parser.add_argument_group("docker backend (--backend docker)")
    group.add_argument("--docker-pins", default=str(plan.DEFAULT_IMAGE_PINS), help="image pins (docker/pins.toml)")
    group.add_argument("--gpus", choices=(GPU_AUTO, GPU_ALL, GPU_NONE), default=GPU_AUTO,
                       help="request the host's GPUs: auto = when nvidia-smi finds a driver (default)")
    group.add_argument("--wheelhouse", help="folder of wheels the image build may use (find-links), e.g. a CPU torch")
    group.add_argument("--docker-ca-bundle", help="CA bundle for the build stage (default: the host's)")
    group.add_argument("--docker-memory", help="memory limit per case container, e.g. 16g")
    group.add_argument("--docker-env", action="append", metavar="KEY=VALUE",
                       help="environment variable for the case container (repeatable)")


@dataclasses.dataclass(frozen=True)
class DockerConfig:
    image_pins: Path = plan.DEFAULT_IMAGE_PINS
    gpus: str = GPU_AUTO  # auto: when the host has an NVIDIA GPU
    ca_bundle: Path | None = None  # for the build stage only (a TLS-intercepting proxy's CA)
    wheelhouse: Path | None = None  # find-links for the build stage (e.g. a CPU torch wheel)
    mem_limit: str | None = None
    environment: tuple[tuple[str, str], ...] = ()  # extra variables for the case run (e.g. CUDA_HOME)


def config_from_args(args) -> DockerConfig:
    ca = Path(args.docker_ca_bundle) if args.docker_ca_bundle else default_ca_bundle()
    return DockerConfig(
        image_pins=Path(args.docker_pins), gpus=args.gpus, ca_bundle=ca,
        wheelhouse=Path(args.wheelhouse) if args.wheelhouse else None, mem_limit=args.docker_memory,
        environment=parse_env(args.docker_env or ()),
    )


def parse_env(items) -> tuple[tuple[str, str], ...]:
    """KEY=VALUE strings as pairs; anything else is a usage error. Pure."""
    pairs = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--docker-env {item!r}: expected KEY=VALUE")
        pairs.append((key, value))
    return tuple(pairs)


def default_ca_bundle() -> Path | None:
    """The host's CA bundle when the host trusts a custom one (SSL_CERT_FILE, else Debian's)."""
    for candidate in (os.environ.get("SSL_CERT_FILE"), "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def wants_gpus(setting: str, driver: str | None) -> bool:
    return setting == GPU_ALL or (setting == GPU_AUTO and driver is not None)


def provenance(image, base: plan.BaseImage, base_image, driver: str | None, gpus: bool, lock: dict) -> dict:
    """What the report says about where a cell ran: image and base (ids, digests), CUDA and where it came
    from, the image's context hash, the host driver."""
    digests = image.attrs.get("RepoDigests") or []
    cuda_source = (image.labels or {}).get("pcgkit.cuda-source", "")
    env = dict(item.split("=", 1) for item in image.attrs.get("Config", {}).get("Env") or [] if "=" in item)
    cuda = env.get("CUDA_VERSION") or (
        f"{base.cuda} from PyPI's NVIDIA wheels" if cuda_source == plan.CUDA_FROM_WHEELS
        else "none (no CUDA toolkit in the image)")
    base_digests = (base_image.attrs.get("RepoDigests") or []) if base_image is not None else []
    return {
        "backend": "docker",
        "image": image.tags[0] if image.tags else "",
        "image_id": image.id,
        "image_digest": digests[0] if digests else plan.LOCALLY_BUILT,
        "base_image": base.ref,
        "base_image_id": base_image.id if base_image is not None else "",
        "base_image_digest": base_digests[0] if base_digests else (
            base.digest if base.digest.startswith("sha256:") else f"{plan.NOT_RECORDED} (local or untagged base)"
        ),
        "cuda_in_image": cuda,
        "cuda_source": cuda_source,
        "cuda_lock": list(lock.get("cuda_wheels", ())),
        "context_hash": lock.get("context_hash", ""),
        "jit_prebuild": (image.labels or {}).get("pcgkit.jit-prebuild", ""),
        "build_aids": (image.labels or {}).get("pcgkit.build-aids", ""),
        "host_driver": driver if gpus else "none (no GPU requested)",
        "gpus": gpus,
    }


def build_aids_label(ca_bundle: Path | None, wheels: tuple[Path, ...]) -> str:
    """What the build stage was given besides PyPI (it stays in one lower layer): said on the image. Pure."""
    parts = [f"ca bundle {ca_bundle}"] if ca_bundle else []
    parts += [f"wheel {w.name}" for w in wheels]
    return "; ".join(parts) or "none"


def base_and_cuda(cell: Cell, pins: plan.ImagePins, aids: tuple[Path, ...]) -> tuple[plan.BaseImage, str]:
    """The cell's base (by its torch's CUDA unless it names one) and the base's CUDA wheel pins ('' for its
    own toolkit); a toolkit that does not fit the cell's torch is refused before anything is built."""
    known = docker_cuda.load_cuda_toolkits()
    wheels = tuple(a.name for a in aids)
    torch_cuda = docker_cuda.torch_cuda_build(cell.torch, known.torch_cuda, wheels) if cell.torch else None
    base = plan.base_for(cell, pins, torch_cuda)
    wanted, mismatch = docker_cuda.cuda_for_cell(base.name, base.ref, base.cuda, base.cuda_wheels, cell.torch,
                                                 torch_cuda if cell.torch else docker_cuda.CPU, known)
    if mismatch:
        raise StageFailed(STAGE_IMAGE, f"CUDA mismatch: {mismatch}", provenance={"backend": "docker"})
    return base, wanted


def _wheel_pins(cuda_pins: str) -> list[str]:
    return [line for line in cuda_pins.splitlines() if line and not line.startswith("#")]


def image_lock(image, cuda_pins: str) -> dict:
    """What pins the image: its context hash, the CUDA source and the hashed CUDA wheels it was assembled
    from (none for a base's own toolkit). Pure."""
    labels = image.labels or {}
    return {
        "source": "docker image", "context_hash": labels.get("pcgkit.context-hash", ""),
        "cuda_source": labels.get("pcgkit.cuda-source", ""),
        "cuda_wheels": [line.replace(" --hash=", " ") for line in _wheel_pins(cuda_pins)],
    }


def prepare_image(client, cell: Cell, docker: DockerConfig, cell_dir: Path, timeout_s: float):
    """(image, base, base image, lock): the cell's image, built unless one with the same context hash exists."""
    pins = plan.load_image_pins(docker.image_pins)
    aids = tuple(sorted(docker.wheelhouse.glob("*.whl"))) if docker.wheelhouse else ()
    base, cuda_pins = base_and_cuda(cell, pins, aids)
    args = plan.build_args(cell, base, pins, kit_light_dependencies(cell.python))
    tag = plan.image_tag(cell)
    log_path = cell_dir / "build.log"
    log_path.write_text("")
    base_image = engine.ensure_base(client, base.pinned_ref, log_path)
    # The base's id joins the hash: a base re-imported or re-pulled under the same tag rebuilds.
    chash = plan.context_hash({**args, "base image id": base_image.id}, aids=aids, cuda_requirements=cuda_pins)
    image = engine.find_image(client, tag)
    if image is not None and image.labels.get("pcgkit.context-hash") == chash:
        with open(log_path, "a") as log:
            log.write(f"reused {tag} ({image.id}): same context hash {chash}\n")
        return image, base, base_image, image_lock(image, cuda_pins)
    labels = {
        "pcgkit.cell": cell.id, "pcgkit.definition-hash": cell.definition_hash, "pcgkit.context-hash": chash,
        "pcgkit.base-image": base.ref, "pcgkit.build-aids": build_aids_label(docker.ca_bundle, aids),
        "pcgkit.cuda-wheels": " ".join(line.split(" --hash")[0] for line in _wheel_pins(cuda_pins)),
        "pcgkit.jit-prebuild": " ".join(pins.jit_prebuild),
    }
    with tempfile.TemporaryDirectory(prefix="pcgkit-ctx-") as tmp:
        context = plan.write_context(Path(tmp), ca_bundle=docker.ca_bundle, wheelhouse=docker.wheelhouse,
                                     cuda_requirements=cuda_pins)
        image = engine.build(client, context, tag, args, labels, log_path, timeout_s)
    return image, base, base_image, image_lock(image, cuda_pins)


def run_cases(client, image, cell: Cell, request: CaseRequest, docker: DockerConfig, cell_dir: Path,
              gpus: bool, timeout_s: float) -> engine.Exited:
    """Run `pcgkit run` in a fresh container; its /out copied into cell_dir. Always cleaned up."""
    run_timeout = max(1.0, timeout_s - EXTRA_RUN_S / 2)
    command = plan.run_command(run_timeout, min(request.case_timeout_s, run_timeout),
                               request.require_hardware, request.select, request.scope)
    RunFiles(cell_dir).clear()
    with engine.output_volume(client) as volume:
        kwargs = plan.container_kwargs(
            image=image.id, command=command, volume=volume, gpus=gpus,
            environment={**plan.RUN_ENVIRONMENT, **dict(docker.environment), **dict(request.env)},
            labels={"pcgkit.cell": cell.id}, mem_limit=docker.mem_limit,
        )
        with engine.running(client, kwargs) as container:
            exited = engine.wait(container, timeout_s, cell_dir / "run.log")
            engine.copy_out(container, plan.OUT_DIR, cell_dir)
    return exited


@dataclasses.dataclass(frozen=True)
class DockerEnvironment:
    """A cell's image, ready; each case run gets a fresh container of it."""

    client: Any
    image: Any
    docker: DockerConfig
    ctx: CellContext
    gpus: bool
    provenance: dict
    installed: tuple = ()  # not read from the image (its build log lists the install)
    lock: dict = dataclasses.field(default_factory=dict)

    @property
    def result_evidence(self) -> dict:
        return {"image": self.provenance}

    def run_cases(self, request: CaseRequest) -> CasesRan:
        try:
            exited = run_cases(self.client, self.image, self.ctx.cell, request, self.docker, self.ctx.cell_dir,
                               self.gpus, self.ctx.deadline.left())
        except engine.DockerFailure as exc:
            raise StageFailed(STAGE_RUN, exc.reason, exc.log_tail) from None
        if exited.oom_killed:
            raise StageFailed(STAGE_RUN, f"{engine.OOM_KILLED}: the kernel killed the container (State.OOMKilled)",
                              exited.log_tail)
        if exited.timed_out:
            raise StageFailed(STAGE_RUN, f"{engine.TIMEOUT}: container killed after {exited.duration_s:.0f} s "
                              f"(hard limit)", exited.log_tail)
        return CasesRan(exited.status_code == 0, f"container exit status {exited.status_code}", exited.log_tail,
                        exited.duration_s)


@dataclasses.dataclass(frozen=True)
class DockerBackend:
    """One pinned image per cell (this module's docstring)."""

    docker: DockerConfig = DockerConfig()
    prepare_stage: str = "image"

    def check_machine(self, cells) -> None:
        return None  # the engine is reached per cell: an unreachable one is each cell's image-stage error

    @contextlib.contextmanager
    def prepared(self, ctx: CellContext) -> Iterator[DockerEnvironment]:
        known = {"backend": "docker"}
        if ctx.cell.kind == EXISTING:
            raise StageFailed(STAGE_IMAGE, "kind 'existing' names a host interpreter: the docker backend cannot run it",
                              provenance=known)
        driver = host_gpu()[1] or None  # the host's NVIDIA driver; None without a GPU (or a working nvidia-smi)
        gpus = wants_gpus(self.docker.gpus, driver)
        try:
            client = engine.connect()
            image, base, base_image, lock = prepare_image(client, ctx.cell, self.docker, ctx.cell_dir,
                                                          ctx.deadline.end - time.monotonic())
        except engine.DockerFailure as exc:
            raise StageFailed(STAGE_IMAGE, exc.reason, exc.log_tail, provenance=known) from None
        yield DockerEnvironment(client, image, self.docker, ctx, gpus,
                                provenance(image, base, base_image, driver, gpus, lock), lock=lock)


def make_backend(args) -> DockerBackend:
    """This backend from the docker options of `pcgkit matrix` (the registry calls it)."""
    return DockerBackend(config_from_args(args))
