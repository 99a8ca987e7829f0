"""The SGLang payload for a GPU machine with no network (issue 13): plan it, build it here, chunk it.

`bin/pcgkit lab payload build --out DIR [--spec A.toml --spec B.toml]` (lab.commands.payload) reads the
wheel list and trims of each SGLang release's spec (fixtures/e2e_payload.toml is 0.5.12's; a spec may be
`based_on` another and replace a few pins, as fixtures/e2e_payload_sglang-0.5.11.toml does), downloads with
pip (--no-deps, binary only, for the device's python and platform tags), trims sglang-kernel while
streaming it out of its wheel (no 1.17 GB unpack), fetches the Debian packages, packs all of it into one
tar (a wheel two releases share is stored once) and splits that into parts of `chunk_mib` so that each
part travels in one device call. DIR/MANIFEST.json names every part with its sha256 and, per release,
its wheels; `python3 -m lab.e2e.devicerun install --release X` checks and installs them there.

pip: the kit's own .venv is made by uv and has no pip, so downloads run with a pip found
deliberately (`pip_command`: the running interpreter's pip if it has one, else `python3 -m pip` from
PATH; uv has no `pip download`), else a one-line error saying what to install.

Pure: load_spec's merge (merge_spec), download_argv, is_trimmed, split_sizes. The rest does I/O
(pip and apt-get through pcgkit.util.proc, the one subprocess chokepoint).
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
MANIFEST_SCHEMA = "pcgkit.e2e-payload-manifest/2"  # /2: several releases, wheels stored once
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


def _name(pin: str) -> str:
    return pin.split("==")[0].strip().lower().replace("_", "-")


def merge_spec(base: dict, derived: dict) -> dict:
    """A derived spec's data: the base's, with `sglang`, `[replace]`d wheel pins and `[trimmed]` pins
    taken from the derived file. Pure. A replaced name the base does not list is an error (a typo
    would otherwise add nothing and go unnoticed)."""
    merged = {**base, "schema": derived.get("schema"), "sglang": derived["sglang"]}
    replace = {_name(pin): pin for pin in derived.get("replace", {}).values()}
    known = {_name(pin) for pin in base["wheels"]}
    unknown = sorted(set(replace) - known)
    if unknown:
        raise UsageError(f"spec for sglang {derived['sglang']}: [replace] names wheels the base does not list: {unknown}")
    merged["wheels"] = [replace.get(_name(pin), pin) for pin in base["wheels"]]
    trimmed = {name: dict(t) for name, t in base["trimmed"].items()}
    for name, t in derived.get("trimmed", {}).items():
        if name not in trimmed:
            raise UsageError(f"spec for sglang {derived['sglang']}: trimmed {name!r} is not in the base")
        trimmed[name].update(t)
    merged["trimmed"] = trimmed
    return merged


def load_spec(path: Path = SPEC_PATH) -> PayloadSpec:
    data = tomllib.loads(path.read_text())
    if data.get("schema") != SPEC_SCHEMA:
        raise UsageError(f"{path}: schema {data.get('schema')!r}, expected {SPEC_SCHEMA}")
    if "based_on" in data:
        base = tomllib.loads((path.parent / data["based_on"]).read_text())
        data = merge_spec(base, data)
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


def pip_command(candidates: tuple[str, ...] | None = None) -> list[str]:
    """The pip that downloads: the running interpreter's if it has one, else the first `python3` on
    PATH that has one. uv-made venvs (the kit's .venv) have no pip and uv has no `pip download`."""
    import shutil

    for python in candidates or (sys.executable, shutil.which("python3") or "", shutil.which("python") or ""):
        if python and proc.run([python, "-m", "pip", "--version"]).ok:
            return [python, "-m", "pip"]
    raise EnvironmentSetupError("no pip found for `pip download` (the kit's uv-made .venv has none): install one "
                                "with `python3 -m ensurepip` or your system's python3-pip, then run this again")


def download_argv(spec: PayloadSpec, pins: tuple[str, ...], dest: Path, pip: list[str] | None = None) -> list[str]:
    """pip download for the device's interpreter and platform, whatever this machine is."""
    argv = [*(pip or [sys.executable, "-m", "pip"]), "download", "--no-deps", "--only-binary=:all:", "--python-version",
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


def _download_release(spec: PayloadSpec, work: Path, staging: Path, pip: list[str]) -> dict:
    """One release's wheels and trims into the shared staging folder; what belongs to the release."""
    fetched = work / "fetched" / spec.sglang
    fetched.mkdir(parents=True, exist_ok=True)
    _checked(proc.run(download_argv(spec, spec.all_wheel_pins, fetched, pip)), f"pip download of sglang {spec.sglang}'s wheels")
    wheels = sorted(p.name for p in fetched.glob("*.whl"))
    for name in wheels:  # a wheel two releases share is stored once
        target = staging / WHEELS_DIR / name
        if not target.exists():
            (fetched / name).replace(target)
    trims = []
    for trim in spec.trimmed:
        tarball = staging / TRIMMED_DIR / f"{trim.name}-{trim.pin.split('==')[-1]}.tar.gz"
        if not tarball.exists():
            raw = work / "raw" / trim.pin
            raw.mkdir(parents=True, exist_ok=True)
            _checked(proc.run(download_argv(spec, (trim.pin,), raw, pip)), f"pip download of {trim.pin}")
            (wheel,) = raw.glob("*.whl")
            trims.append(_trim_wheel(wheel, trim, tarball))
            wheel.unlink()  # 300+ MB: do not keep it in the work folder
        else:
            trims.append({"name": trim.name, "pin": trim.pin, "tarball": tarball.name})
    return {"wheels": wheels, "trimmed": trims, "server_args": list(spec.server_args)}


def build(specs: PayloadSpec | list[PayloadSpec], out: Path, work: Path, pip: list[str] | None = None) -> dict:
    """Download, trim and chunk the payload of one or several releases into `out`; returns (and writes) the manifest."""
    specs = [specs] if isinstance(specs, PayloadSpec) else list(specs)
    if len({s.sglang for s in specs}) != len(specs):
        raise UsageError("two payload specs for the same SGLang release")
    pip = pip or pip_command()
    staging = work / "staging"
    for sub in (WHEELS_DIR, TRIMMED_DIR, DEBS_DIR):
        (staging / sub).mkdir(parents=True, exist_ok=True)
    releases = {spec.sglang: _download_release(spec, work, staging, pip) for spec in specs}
    debs = {d.name: d for spec in specs for d in spec.debs}
    for deb in debs.values():
        _checked(proc.run(["apt-get", "download", deb.name], cwd=staging / DEBS_DIR), f"apt-get download {deb.name}")
    out.mkdir(parents=True, exist_ok=True)
    bundle = work / "payload.tar"
    files = sorted(str(p.relative_to(staging)) for p in staging.rglob("*") if p.is_file())
    with tarfile.open(bundle, "w") as tar:
        for name in files:
            tar.add(staging / name, arcname=name)
    parts = []
    with open(bundle, "rb") as source:
        for index, size in enumerate(split_sizes(bundle.stat().st_size, specs[0].chunk_mib << 20)):
            part = out / f"{PART_PREFIX}{index:02d}"
            part.write_bytes(source.read(size))
            parts.append({"name": part.name, "bytes": size, "sha256": _sha256(part)})
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "sglang": [spec.sglang for spec in specs],
        "bundle_sha256": _sha256(bundle),
        "bundle_bytes": bundle.stat().st_size,
        "parts": parts,
        "files": files,
        "releases": releases,
        "debs": [dataclasses.asdict(d) for d in debs.values()],
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
