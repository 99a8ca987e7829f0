"""The SGLang payload for a GPU machine with no network (issue 13): plan it, build it here, chunk it.

`bin/pcgkit e2e payload build --out DIR` (pcgkit.commands.e2e) reads the
wheel list and trims from fixtures/e2e_payload.toml, downloads with pip (--no-deps, binary only, for
the device's python and platform tags), trims sglang-kernel while streaming it out of its wheel
(no 1.17 GB unpack), fetches the Debian packages, packs all of it into one tar and splits that into
parts of `chunk_mib` so that each part travels in one device call. DIR/MANIFEST.json names every
part with its sha256; `python3 -m pcgkit.e2e.devicerun install` checks them there.

Pure: load_spec, download_argv, is_trimmed, split_sizes. The rest does I/O (pip and apt-get through
pcgkit.util.proc, the one subprocess chokepoint).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import json
import sys
import tarfile
import zipfile
from pathlib import Path

import tomllib

from pcgkit import resources
from pcgkit.errors import EnvironmentSetupError, UsageError
from pcgkit.util import proc

SPEC_PATH = resources.fixture("e2e_payload.toml")
SPEC_SCHEMA = "pcgkit.e2e-payload/1"
MANIFEST_SCHEMA = "pcgkit.e2e-payload-manifest/1"
MANIFEST = "MANIFEST.json"
PART_PREFIX = "payload.tar.part"
# Inside the payload tar:
WHEELS_DIR = "wheels"
TRIMMED_DIR = "trimmed"  # <name>.tar.gz, unpacked straight into the site folder
DEBS_DIR = "debs"


@dataclasses.dataclass(frozen=True)
class Trim:
    name: str
    pin: str
    remove: tuple[str, ...]  # paths (files or folders) inside the wheel
    remove_suffixes: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Deb:
    name: str
    libdir: str  # relative to the unpacked root; goes on LD_LIBRARY_PATH


@dataclasses.dataclass(frozen=True)
class PayloadSpec:
    sglang: str
    python_version: str
    platforms: tuple[str, ...]
    chunk_mib: int
    wheels: tuple[str, ...]  # name==version, installed with --no-deps
    overrides: tuple[str, ...]  # pins of image packages at another version
    excluded: tuple[str, ...]  # names left out on purpose (the file says why)
    trimmed: tuple[Trim, ...]
    debs: tuple[Deb, ...]
    server_args: tuple[str, ...]

    @property
    def all_wheel_pins(self) -> tuple[str, ...]:
        return (*self.wheels, *self.overrides)


def load_spec(path: Path = SPEC_PATH) -> PayloadSpec:
    data = tomllib.loads(path.read_text())
    if data.get("schema") != SPEC_SCHEMA:
        raise UsageError(f"{path}: schema {data.get('schema')!r}, expected {SPEC_SCHEMA}")
    names = [p.split("==")[0].lower() for p in data["wheels"]]
    if len(set(names)) != len(names):
        raise UsageError(f"{path}: a wheel is listed twice (two versions stop the whole install)")
    clash = set(names) & {n.lower() for n in data["excluded"]}
    if clash:
        raise UsageError(f"{path}: listed and excluded at once: {sorted(clash)}")
    return PayloadSpec(
        sglang=data["sglang"],
        python_version=data["python_version"],
        platforms=tuple(data["platforms"]),
        chunk_mib=int(data["chunk_mib"]),
        wheels=tuple(data["wheels"]),
        overrides=tuple(o["pin"] for o in data["override"].values()),
        excluded=tuple(data["excluded"]),
        trimmed=tuple(
            Trim(name, t["pin"], tuple(t["remove"]), tuple(t.get("remove_suffixes", ())))
            for name, t in data["trimmed"].items()
        ),
        debs=tuple(Deb(d["name"], d["libdir"]) for d in data["deb"]),
        server_args=tuple(data["launch"]["server_args"]),
    )


def download_argv(spec: PayloadSpec, pins: tuple[str, ...], dest: Path, python: str = sys.executable) -> list[str]:
    """pip download for the device's interpreter and platform, whatever this machine is."""
    argv = [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
            spec.python_version, "--implementation", "cp", "-d", str(dest)]
    for platform in spec.platforms:
        argv += ["--platform", platform]
    return argv + list(pins)


def is_trimmed(member: str, trim: Trim) -> bool:
    """Whether a wheel member is left out of the trimmed tarball."""
    if trim.remove_suffixes and member.endswith(trim.remove_suffixes):
        return True
    return any(member == r or member.startswith(r.rstrip("/") + "/") or fnmatch.fnmatch(member, r) for r in trim.remove)


def split_sizes(total: int, chunk_bytes: int) -> list[int]:
    """Part sizes for a file of `total` bytes, each at most chunk_bytes."""
    if chunk_bytes <= 0:
        raise ValueError("chunk size must be positive")
    return [min(chunk_bytes, total - offset) for offset in range(0, total, chunk_bytes)] or [0]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _checked(completed: proc.Completed, what: str) -> None:
    if not completed.ok:
        raise EnvironmentSetupError(f"{what} failed ({completed.describe_failure()}): {completed.output_tail[-800:]}")


def _trim_wheel(wheel: Path, trim: Trim, out: Path) -> dict:
    kept = dropped = 0
    with zipfile.ZipFile(wheel) as archive, tarfile.open(out, "w:gz") as tar:
        for info in archive.infolist():
            if info.is_dir():
                continue
            if is_trimmed(info.filename, trim):
                dropped += info.file_size
                continue
            member = tarfile.TarInfo(info.filename)
            member.size = info.file_size
            member.mode = 0o755 if (info.external_attr >> 16) & 0o111 else 0o644
            with archive.open(info) as stream:
                tar.addfile(member, stream)
            kept += info.file_size
    return {"name": trim.name, "pin": trim.pin, "kept_bytes": kept, "dropped_bytes": dropped, "tarball": out.name}


def build(spec: PayloadSpec, out: Path, work: Path) -> dict:
    """Download, trim and chunk the payload into `out`; returns (and writes) the manifest."""
    staging = work / "staging"
    for sub in (WHEELS_DIR, TRIMMED_DIR, DEBS_DIR):
        (staging / sub).mkdir(parents=True, exist_ok=True)
    _checked(proc.run(download_argv(spec, spec.all_wheel_pins, staging / WHEELS_DIR)), "pip download of the wheels")
    trims = []
    for trim in spec.trimmed:
        raw = work / "raw" / trim.name
        raw.mkdir(parents=True, exist_ok=True)
        _checked(proc.run(download_argv(spec, (trim.pin,), raw)), f"pip download of {trim.pin}")
        (wheel,) = raw.glob("*.whl")
        trims.append(_trim_wheel(wheel, trim, staging / TRIMMED_DIR / f"{trim.name}.tar.gz"))
    for deb in spec.debs:
        _checked(proc.run(["apt-get", "download", deb.name], cwd=staging / DEBS_DIR), f"apt-get download {deb.name}")
    out.mkdir(parents=True, exist_ok=True)
    bundle = work / "payload.tar"
    with tarfile.open(bundle, "w") as tar:
        for path in sorted(p for p in staging.rglob("*") if p.is_file()):
            tar.add(path, arcname=str(path.relative_to(staging)))
    files = sorted(str(p.relative_to(staging)) for p in staging.rglob("*") if p.is_file())
    parts = []
    with open(bundle, "rb") as source:
        for index, size in enumerate(split_sizes(bundle.stat().st_size, spec.chunk_mib << 20)):
            part = out / f"{PART_PREFIX}{index:02d}"
            part.write_bytes(source.read(size))
            parts.append({"name": part.name, "bytes": size, "sha256": _sha256(part)})
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "sglang": spec.sglang,
        "bundle_sha256": _sha256(bundle),
        "bundle_bytes": bundle.stat().st_size,
        "parts": parts,
        "files": files,
        "trimmed": trims,
        "debs": [dataclasses.asdict(d) for d in spec.debs],
        "server_args": list(spec.server_args),
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
