"""The one place the kit talks to a Docker engine (through the Docker SDK for Python).

Every failure leaves here as a DockerFailure with a short cause and what to do next (NEXT_STEP); the
backend turns it into an error cell. `classify` is pure; the rest needs a real engine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
import tarfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

NO_DAEMON = "no Docker daemon"
PERMISSION = "no permission on the Docker socket"
NO_SDK = "Docker SDK missing"
BUILD_FAILED = "image build failed"
PULL_UNREACHABLE = "registry unreachable on pull"
PULL_FAILED = "pull failed"
NO_GPU_RUNTIME = "NVIDIA container runtime missing"
OOM_KILLED = "OOM-killed"
TIMEOUT = "timeout"
ENGINE_ERROR = "Docker engine error"

NEXT_STEP = {
    NO_DAEMON: "start dockerd (or point DOCKER_HOST at a running engine), then rerun",
    PERMISSION: "add this user to the docker group (or run as root), then log in again",
    NO_SDK: "install the extra: pip install 'pcgkit[docker]'",
    BUILD_FAILED: "see build.log in the cell's folder; the pins may not exist for this Python",
    PULL_UNREACHABLE: "this machine cannot reach the registry: build the base locally or pull it elsewhere "
    "and `docker load` it",
    PULL_FAILED: "check the image reference and digest in docker/pins.toml",
    NO_GPU_RUNTIME: "install nvidia-container-toolkit and restart dockerd (`nvidia-ctk runtime configure`)",
    OOM_KILLED: "give the container more memory (--docker-memory) or run fewer cells at once",
    TIMEOUT: "raise --timeout, or see run.log for where the case hung",
    ENGINE_ERROR: "see the message; docker info shows the engine's state",
}


class DockerFailure(Exception):
    def __init__(self, cause: str, detail: str, log_tail: str = ""):
        super().__init__(f"{cause}: {detail}")
        self.cause = cause
        self.detail = detail
        self.log_tail = log_tail

    @property
    def reason(self) -> str:
        return f"{self.cause}: {self.detail} (next: {NEXT_STEP.get(self.cause, '')})"


# The engine's and the SDK's own words for the failures worth naming, checked in order.
_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"permission denied.*docker\.sock|PermissionError|connect: permission denied", PERMISSION),
    (r"could not select device driver .* with capabilities: \[\[gpu\]\]|nvidia-container-cli|unknown runtime.*nvidia",
     NO_GPU_RUNTIME),
    (r"Error while fetching server API version|Connection refused|FileNotFoundError|No such file or directory.*sock|"
     r"Cannot connect to the Docker daemon|Connection aborted", NO_DAEMON),
    (r"dial tcp|no such host|i/o timeout|TLS handshake timeout|server misbehaving|network is unreachable|"
     r"connection reset by peer|Temporary failure in name resolution", PULL_UNREACHABLE),
    (r"manifest unknown|pull access denied|not found: manifest|repository does not exist|invalid reference format",
     PULL_FAILED),
)


def classify(message: str, default: str = ENGINE_ERROR) -> str:
    """A short cause from an engine or SDK error message. Pure."""
    for pattern, cause in _PATTERNS:
        if re.search(pattern, message, re.IGNORECASE | re.DOTALL):
            return cause
    return default


def _sdk():
    try:
        import docker  # noqa: PLC0415 - the SDK is an optional extra: only this backend needs it
    except ImportError as exc:  # pragma: no cover - the test extra installs it
        raise DockerFailure(NO_SDK, str(exc)) from exc
    return docker


def connect(timeout_s: float = 60.0):
    """A client for the engine $DOCKER_HOST names (or the local socket), pinged."""
    docker = _sdk()
    try:
        client = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except docker.errors.DockerException as exc:
        raise DockerFailure(classify(str(exc), NO_DAEMON), one_line_cut(str(exc))) from exc
    except PermissionError as exc:
        raise DockerFailure(PERMISSION, one_line_cut(str(exc))) from exc
    return client


def one_line_cut(text: str, limit: int = 400) -> str:
    """An SDK error on one line, cut to `limit` characters (what a cell reason or a docker command prints). Pure."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def find_image(client, ref: str):
    docker = _sdk()
    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None


def ensure_base(client, ref: str, log_path: Path):
    """The base image, pulled when it is not here yet. A local one (docker import) is used as is."""
    docker = _sdk()
    image = find_image(client, ref)
    if image is not None:
        return image
    with open(log_path, "a") as log:
        log.write(f"+ pull {ref}\n")
        try:
            image = client.images.pull(ref)
        except docker.errors.DockerException as exc:
            log.write(str(exc) + "\n")
            raise DockerFailure(classify(str(exc), PULL_FAILED), f"{ref}: {one_line_cut(str(exc))}") from exc
    return image


def build(client, context: Path, tag: str, args: dict[str, str], labels: dict[str, str], log_path: Path,
          timeout_s: float):
    """Build the image, streaming the builder's output to log_path; the image or a DockerFailure."""
    docker = _sdk()
    lines: list[str] = []
    image_id = None
    deadline = time.monotonic() + timeout_s
    with open(log_path, "a") as log:
        log.write(f"+ build {tag} {args}\n")
        try:
            stream = client.api.build(
                path=str(context), tag=tag, buildargs=args, labels=labels, rm=True, forcerm=True,
                decode=True, pull=False, timeout=int(timeout_s),
            )
            for chunk in stream:
                text = chunk.get("stream") or chunk.get("status") or ""
                if "error" in chunk:
                    text = "ERROR: " + chunk["error"] + "\n"
                if "aux" in chunk and "ID" in chunk["aux"]:
                    image_id = chunk["aux"]["ID"]
                if text.startswith("Step "):  # elapsed seconds per step: where a slow build spends its time
                    text = f"[{time.monotonic() - deadline + timeout_s:7.1f}s] {text}"
                if text:
                    lines.append(text)
                    lines[:] = lines[-200:]
                    log.write(text)
                    log.flush()
                if "error" in chunk:
                    raise DockerFailure(BUILD_FAILED, one_line_cut(chunk["error"]), "".join(lines)[-2000:])
                if time.monotonic() > deadline:
                    raise DockerFailure(TIMEOUT, f"image build exceeded {timeout_s:g} s", "".join(lines)[-2000:])
        except docker.errors.DockerException as exc:
            log.write(str(exc) + "\n")
            raise DockerFailure(classify(str(exc), BUILD_FAILED), one_line_cut(str(exc)), "".join(lines)[-2000:]) from exc
        except OSError as exc:  # the HTTP read timed out (requests raises ConnectionError/ReadTimeout)
            raise DockerFailure(classify(str(exc), TIMEOUT), one_line_cut(str(exc)), "".join(lines)[-2000:]) from exc
    return client.images.get(image_id or tag)


@dataclasses.dataclass(frozen=True)
class Exited:
    status_code: int | None  # None when the container was killed for the timeout
    timed_out: bool
    oom_killed: bool
    duration_s: float
    log_tail: str


@contextlib.contextmanager
def output_volume(client) -> Iterator[str]:
    """A fresh named volume for one case run's /out, removed afterwards."""
    volume = client.volumes.create(name=f"pcgkit-out-{uuid.uuid4().hex[:12]}", labels={"pcgkit": "out"})
    try:
        yield volume.name
    finally:
        with contextlib.suppress(Exception):
            volume.remove(force=True)


@contextlib.contextmanager
def running(client, create_kwargs: dict) -> Iterator[object]:
    """A created-and-started container that is always removed (failure and Ctrl-C included)."""
    docker = _sdk()
    container = None
    try:
        try:
            container = client.containers.create(**create_kwargs)
            container.start()
        except docker.errors.DockerException as exc:
            raise DockerFailure(classify(str(exc)), one_line_cut(str(exc))) from exc
        yield container
    finally:
        if container is not None:
            with contextlib.suppress(Exception):
                container.remove(force=True, v=True)  # force: kills it first if it still runs


def _stream_logs(container, log_path: Path, tail: list[str]) -> None:
    with open(log_path, "ab") as log:
        for chunk in container.logs(stream=True, follow=True):
            log.write(chunk)
            log.flush()
            tail.append(chunk.decode("utf-8", "replace"))
            tail[:] = tail[-400:]


def wait(container, timeout_s: float, log_path: Path) -> Exited:
    """Wait for the container; past timeout_s kill it (the SDK's wait timeout only ends the HTTP call)."""
    tail: list[str] = []
    streamer = threading.Thread(target=_stream_logs, args=(container, log_path, tail), daemon=True)
    streamer.start()
    start = time.monotonic()
    status_code = None
    timed_out = False
    try:
        status_code = container.wait(timeout=timeout_s)["StatusCode"]
    except Exception:  # noqa: BLE001 - requests' ReadTimeout/ConnectionError: the deadline passed
        timed_out = True
        with contextlib.suppress(Exception):
            container.kill()
        with contextlib.suppress(Exception):
            container.wait(timeout=60)
    streamer.join(timeout=10)
    container.reload()
    oom = bool(container.attrs.get("State", {}).get("OOMKilled"))
    return Exited(status_code, timed_out, oom, time.monotonic() - start, "".join(tail)[-2000:])


def copy_out(container, path: str, dest: Path) -> list[Path]:
    """The files under `path` in the (stopped) container, extracted into dest (flattened one level)."""
    docker = _sdk()
    try:
        stream, _ = container.get_archive(path)
        data = io.BytesIO(b"".join(stream))
    except docker.errors.DockerException as exc:
        raise DockerFailure(classify(str(exc)), f"copying {path} out: {one_line_cut(str(exc))}") from exc
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    with tarfile.open(fileobj=data) as tar:
        prefix = Path(path).name + "/"
        for member in tar.getmembers():
            if not member.isfile() or not member.name.startswith(prefix):
                continue
            rel = member.name[len(prefix):]
            if ".." in Path(rel).parts:
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            extracted = tar.extractfile(member)
            if extracted is None:  # a directory or link entry: nothing to copy
                continue
            target.write_bytes(extracted.read())
            written.append(target)
    return written
