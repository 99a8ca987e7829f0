"""The container backend as data: image pins, the base a cell builds on, the build context and
arguments, the image tag, and the container's run settings. Pure except `write_context` and
`load_image_pins`; nothing here talks to Docker (docker_engine.py is the edge).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import shutil
from pathlib import Path

from pcgkit import resources
from pcgkit.matrix.cells import SCOPE_ALL, Cell
from pcgkit.util.tomlfile import tomllib

KIT_ROOT = resources.workspace_root()  # the build context is cut from a checkout
DOCKER_DIR = resources.docker_dir()
DOCKERFILE = DOCKER_DIR / "Dockerfile"
IMAGE_SCRIPTS = ("cuda-toolkit.sh", "jit-prebuild.py", "entrypoint.sh")  # docker/image/, copied into image/
CUDA_FROM_BASE, CUDA_FROM_WHEELS = "base", "pypi-wheels"  # the Dockerfile's CUDA_SOURCE
DEFAULT_IMAGE_PINS = DOCKER_DIR / "pins.toml"
PINS_SCHEMA = "pcgkit.docker-pins/1"
NOT_RECORDED = "not recorded yet"
LOCALLY_BUILT = "none: locally built"
IMAGE_REPO = "pcgkit-cell"
# What the image needs of the kit to run `pcgkit run`: the package, the cases, their fixtures and
# the pytest configuration. Nothing else of the checkout goes into the build context.
KIT_PATHS: tuple[str, ...] = ("pcgkit", "cases", "fixtures", "conftest.py", "tox.ini", "pyproject.toml")
_SKIP_NAMES = ("__pycache__", ".pytest_cache")

OUT_DIR = "/out"  # the one writable mount of a case run
CONTAINER_USER = "pcgkit"  # made by the Dockerfile (uid 10001)


@dataclasses.dataclass(frozen=True)
class BaseImage:
    name: str  # a key of [bases], or the reference itself for an unnamed one
    ref: str
    digest: str = NOT_RECORDED
    cuda: str = NOT_RECORDED
    python: str = NOT_RECORDED
    cuda_wheels: str = ""  # a set of docker/cuda-toolkits.toml: the toolkit comes from PyPI's wheels
    local: bool = False  # made on this machine (docker/local-base.sh): no registry holds it

    @property
    def cuda_source(self) -> str:
        return CUDA_FROM_WHEELS if self.cuda_wheels else CUDA_FROM_BASE

    @property
    def pinned_ref(self) -> str:
        """ref@digest when the digest is known: what a pull must fetch byte for byte."""
        return f"{self.ref}@{self.digest}" if self.digest.startswith("sha256:") else self.ref


@dataclasses.dataclass(frozen=True)
class ImagePins:
    default_base: str
    uv: str
    bases: dict[str, BaseImage]
    default_by_cuda: dict[str, str] = dataclasses.field(default_factory=dict)  # torch's CUDA major -> base name
    cuda_arch_list: str = ""  # FLASHINFER_CUDA_ARCH_LIST for the modules compiled at build time
    jit_prebuild: tuple[str, ...] = ()  # flashinfer.jit generators compiled into the image


def parse_image_pins(text: str) -> ImagePins:
    """docker/pins.toml as data; a bad file is a ValueError naming what is wrong. Pure."""
    data = tomllib.loads(text)
    if data.get("schema") != PINS_SCHEMA:
        raise ValueError(f"image pins schema {data.get('schema')!r}, expected {PINS_SCHEMA!r}")
    bases = {}
    for name, table in data.get("bases", {}).items():
        if "ref" not in table:
            raise ValueError(f"[bases.{name}] has no ref")
        known = {k: str(table[k]) for k in ("digest", "cuda", "python") if k in table}
        bases[name] = BaseImage(name, table["ref"], **known, cuda_wheels=str(table.get("cuda-wheels", "")),
                                local=bool(table.get("local", False)))
    default = data.get("default_base", "")
    if default not in bases:
        raise ValueError(f"default_base {default!r} is not one of [bases]: {sorted(bases)}")
    by_cuda = {str(k): str(v) for k, v in data.get("default-base-by-cuda", {}).items()}
    unknown = sorted(v for v in by_cuda.values() if v not in bases)
    if unknown:
        raise ValueError(f"default-base-by-cuda names {unknown}, not in [bases]: {sorted(bases)}")
    return ImagePins(default, str(data.get("uv", "")), bases, by_cuda, str(data.get("cuda-arch-list", "")),
                     tuple(data.get("jit-prebuild", ())))


def load_image_pins(path: Path = DEFAULT_IMAGE_PINS) -> ImagePins:
    return parse_image_pins(path.read_text())


def base_for(cell: Cell, pins: ImagePins, torch_cuda: str | None = None) -> BaseImage:
    """The base image a cell builds on: its `base-image` (a pins name or a full ref), else the base for
    its torch's CUDA major (default-base-by-cuda: a CUDA 13 torch needs a CUDA 13 toolkit), else the default."""
    major = (torch_cuda or "").split(".")[0]
    wanted = cell.base_image or pins.default_by_cuda.get(major) or pins.default_base
    return pins.bases.get(wanted) or BaseImage(name=wanted, ref=wanted)


def image_tag(cell: Cell) -> str:
    """pcgkit-cell:<cell id>-<definition hash>: one tag per cell definition. Pure."""
    safe_id = re.sub(r"[^A-Za-z0-9_.-]", "_", cell.id)[:100]
    return f"{IMAGE_REPO}:{safe_id}-{cell.definition_hash}"


def build_args(cell: Cell, base: BaseImage, pins: ImagePins, kit_deps: list[str]) -> dict[str, str]:
    """The Dockerfile's ARGs for one cell. Pure."""
    requirements = cell.requirements()
    return {
        "BASE_IMAGE": base.pinned_ref,
        "PYTHON_VERSION": cell.python,
        "TORCH_PIN": " ".join(r for r in requirements if r.startswith("torch==")),
        "FLASHINFER_PIN": " ".join(r for r in requirements if r.startswith("flashinfer-python")),
        "EXTRA_PINS": " ".join(cell.companions),
        "SGLANG_PIN": f"sglang=={cell.sglang}" if cell.sglang else "",
        "KIT_DEPS": " ".join(kit_deps),
        "UV_VERSION": pins.uv,
        "CUDA_SOURCE": base.cuda_source,
        "CUDA_ARCH_LIST": pins.cuda_arch_list,
        "JIT_PREBUILD": " ".join(pins.jit_prebuild),
    }


def kit_files(root: Path = KIT_ROOT) -> list[Path]:
    """The kit's files that go into an image, relative to root, sorted (the context hash reads them)."""
    found = []
    for name in KIT_PATHS:
        path = root / name
        if path.is_file():
            found.append(Path(name))
        elif path.is_dir():
            found += [
                p.relative_to(root) for p in path.rglob("*")
                if p.is_file() and not any(part in _SKIP_NAMES or part.endswith(".egg-info") for part in p.parts)
            ]
    return sorted(found)


def context_hash(args: dict[str, str], root: Path = KIT_ROOT, aids: tuple[Path, ...] = (),
                 cuda_requirements: str = "") -> str:
    """What decides the image's bytes: the Dockerfile and its scripts, the build arguments, the CUDA
    wheel pins, the kit's files and the names and sizes of the build aids. An image labelled with the
    same hash is reused."""
    digest = hashlib.sha256(DOCKERFILE.read_bytes())
    for script in IMAGE_SCRIPTS:
        digest.update((DOCKER_DIR / "image" / script).read_bytes())
    digest.update(cuda_requirements.encode())
    for key in sorted(args):
        digest.update(f"{key}={args[key]}\n".encode())
    for rel in kit_files(root):
        digest.update(str(rel).encode() + b"\0" + (root / rel).read_bytes())
    for aid in aids:
        digest.update(f"aid {aid.name} {aid.stat().st_size}\n".encode())
    return digest.hexdigest()[:16]


def write_context(
    dest: Path, root: Path = KIT_ROOT, ca_bundle: Path | None = None, wheelhouse: Path | None = None,
    force: bool = False, cuda_requirements: str = "",
) -> Path:
    """The build context: Dockerfile, image/ (its scripts and the CUDA wheel pins), kit/ (KIT_PATHS only),
    build-aids/ (CA bundle, wheelhouse). A file in DEST that the kit did not write is never replaced
    without force: every name is checked before the first copy (util/atomic.OutputFolder)."""
    from pcgkit.util import atomic

    copies = {"Dockerfile": DOCKERFILE, **{f"image/{s}": DOCKER_DIR / "image" / s for s in IMAGE_SCRIPTS},
              **{str(Path("kit") / rel): root / rel for rel in kit_files(root)}}
    if ca_bundle is not None:
        copies["build-aids/ca.pem"] = ca_bundle
    written = ["build-aids/README", "image/cuda-requirements.txt"]
    folder = atomic.OutputFolder(dest, force=force, what="DEST").check([*copies, *written])
    for name, source in copies.items():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():
            target.unlink()  # replaced, never written through
        shutil.copy2(source, target)
    folder.write_text("build-aids/README", "Build-stage only: never copied into the shipped image.\n")
    folder.write_text("image/cuda-requirements.txt", cuda_requirements or "# the base image's own CUDA (if any)\n",
                      redact=False)  # sha256 pins are not secrets
    folder.record(*copies)
    if wheelhouse is not None:
        (dest / "build-aids" / "wheelhouse").mkdir(exist_ok=True)
        for wheel in sorted(wheelhouse.glob("*.whl")):
            target = dest / "build-aids" / "wheelhouse" / wheel.name
            if not target.exists():
                try:
                    target.hardlink_to(wheel)  # a 200 MB torch wheel: link, don't copy, when we can
                except OSError:
                    shutil.copy2(wheel, target)
    return dest


def container_kwargs(image: str, command: tuple[str, ...], volume: str, gpus: bool, environment: dict[str, str],
                     labels: dict[str, str], mem_limit: str | None = None, tmpfs_mb: int = 1024) -> dict:
    """client.containers.create's keywords for one case run, `volume` the output mounted at OUT_DIR. Pure."""
    kwargs = {
        "image": image,
        "command": list(command),
        "user": CONTAINER_USER,
        "network_mode": "none",  # the cases need no network: a case that reaches out is a bug
        "read_only": True,  # nothing writable but the output volume and a scratch /tmp
        # exec: FlashInfer's JIT modules live (and are dlopen'ed) under /tmp; Docker's default noexec
        # made every load fail with "failed to map segment from shared object" (measured 2026-12-07)
        "tmpfs": {"/tmp": f"rw,exec,nosuid,nodev,size={tmpfs_mb}m"},
        "volumes": {volume: {"bind": OUT_DIR, "mode": "rw"}},
        "environment": dict(environment),
        "labels": dict(labels),
        "detach": True,
    }
    if mem_limit:
        kwargs["mem_limit"] = mem_limit
    if gpus:
        kwargs["device_requests"] = [{"Driver": "", "Count": -1, "Capabilities": [["gpu"]]}]
    return kwargs


def run_command(timeout_s: float, case_timeout_s: float, require_hardware: tuple[str, ...] = (),
                select: str | None = None, scope: str = SCOPE_ALL) -> tuple[str, ...]:
    """The arguments after the image's ENTRYPOINT (`pcgkit run --python VENV --reports /out`). Pure."""
    argv = ["--timeout", f"{timeout_s:g}", "--case-timeout", f"{case_timeout_s:g}"]
    if select:
        argv += ["-m", select]
    if scope != SCOPE_ALL:
        argv += ["--scope", scope]
    return (*argv, *(f"--require-hardware={hw}" for hw in require_hardware))


# HOME and the caches point into the scratch /tmp: the root filesystem is read-only.
RUN_ENVIRONMENT = {"HOME": "/tmp/home", "XDG_CACHE_HOME": "/tmp/cache", "TMPDIR": "/tmp"}


def docker_run_command(tag: str, gpus: bool = True, results: str = "$PWD/pcgkit-out") -> str:
    """The `docker run` line a maintainer pastes to reproduce a cell from its image. Pure."""
    parts = ["docker run --rm"]
    if gpus:
        parts.append("--gpus all")
    parts += [
        "--network none --read-only --tmpfs /tmp:exec,size=1g",
        "-e HOME=/tmp/home -e XDG_CACHE_HOME=/tmp/cache",
        "--user \"$(id -u):$(id -g)\" -e USER=pcgkit",
        f"-v \"{results}:{OUT_DIR}\"",
        tag,
    ]
    return " \\\n  ".join(parts)
