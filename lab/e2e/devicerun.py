"""Runs ON the GPU machine (issue 13): install the chunked payload, then run the e2e cases through the kit.

  python3 -m lab.e2e.devicerun install --parts /tmp/payload --site /tmp/site-0.5.11 --release 0.5.11
      checks every part against MANIFEST.json (sha256), joins them (once per parts folder), installs
      that release's wheels with pip --no-index --no-deps --target SITE, unpacks its trimmed tarballs
      into SITE and the Debian packages (dpkg -x) into SITE/_deb, and writes SITE/pcgkit-env.json
      (PYTHONPATH, LD_LIBRARY_PATH, PCGKIT_E2E_SERVER_ARGS from the manifest). One payload may hold
      several releases (shared wheels stored once): one site per release.
  eval "$(python3 -m lab.e2e.devicerun env --site /tmp/site)"
      the same variables in the calling shell (LD_LIBRARY_PATH must be set before a process starts).
  python3 -m lab.e2e.devicerun cases --site /tmp/site --out DIR [-- pytest args]
      pytest over the e2e control, the NVFP4 launch and the SGLang-level compile case, in that
      environment, JUnit + results JSON + server logs under DIR.
  python3 -m lab.e2e.devicerun observe --site /tmp/site --format nvfp4 --out DIR
      one launch through the same launcher on whatever GPU this is (the NVFP4 case itself only runs
      on SM120): DIR/observe-<format>.json holds the classification, lifecycle and timings.

Pure: device_env. Everything else does I/O; subprocesses go through pcgkit.util.proc.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shlex
import sys
import tarfile
import time
from pathlib import Path
from typing import Mapping

from lab.e2e import payload
from pcgkit import resources
from pcgkit.errors import EnvironmentSetupError, PcgkitError
from pcgkit.util import proc

ENV_FILE = "pcgkit-env.json"
KIT_ROOT = resources.package_dir().parent  # on PYTHONPATH beside the payload's site folder
CASE_FILES = ("test_e2e_piecewise_control.py", "test_e2e_piecewise_launch.py", "test_sglang_compile.py")  # in cases/


def release_of(manifest: Mapping, release: str | None) -> tuple[str, Mapping]:
    """(sglang version, its entry) of a payload manifest; `release` may be left out when it holds one. Pure."""
    releases = manifest["releases"]
    if release is None:
        if len(releases) != 1:
            raise EnvironmentSetupError(f"the payload holds {sorted(releases)}: name one with --release")
        release = next(iter(releases))
    if release not in releases:
        raise EnvironmentSetupError(f"the payload holds no sglang {release} (it holds {sorted(releases)})")
    return release, releases[release]


def device_env(site: Path, manifest: Mapping, base: Mapping[str, str], release: str | None = None) -> dict[str, str]:
    """The variables that put the installed payload in front of the image's packages. Pure."""
    libdirs = [str(site / "_deb" / d["libdir"]) for d in manifest["debs"]]
    _, entry = release_of(manifest, release)
    return {
        "PYTHONPATH": os.pathsep.join([str(site), str(KIT_ROOT), *filter(None, [base.get("PYTHONPATH")])]),
        "LD_LIBRARY_PATH": os.pathsep.join([*libdirs, *filter(None, [base.get("LD_LIBRARY_PATH")])]),
        "PCGKIT_E2E_SERVER_ARGS": shlex.join(entry["server_args"]),
        "PYTHONUNBUFFERED": "1",
    }


def _checked(completed: proc.Completed, what: str) -> None:
    if not completed.ok:
        raise EnvironmentSetupError(f"{what} failed ({completed.describe_failure()}): {completed.output_tail[-800:]}")


def join_parts(parts_dir: Path, bundle: Path) -> dict:
    """Check each part's sha256, join them into bundle, check the whole; returns the manifest."""
    manifest = json.loads((parts_dir / payload.MANIFEST).read_text())
    digest = hashlib.sha256()
    with open(bundle, "wb") as out:
        for part in manifest["parts"]:
            data = (parts_dir / part["name"]).read_bytes()
            if hashlib.sha256(data).hexdigest() != part["sha256"]:
                raise EnvironmentSetupError(f"{part['name']}: sha256 differs from the manifest (a broken transfer)")
            digest.update(data)
            out.write(data)
    if digest.hexdigest() != manifest["bundle_sha256"]:
        raise EnvironmentSetupError("the joined payload's sha256 differs from the manifest")
    return manifest


def install(parts_dir: Path, site: Path, release: str | None = None) -> dict:
    started = time.monotonic()
    site.mkdir(parents=True, exist_ok=True)
    staging = parts_dir / "unpacked"  # shared by the releases installed from these parts
    if not (staging / payload.MANIFEST).exists():
        staging.mkdir(parents=True, exist_ok=True)
        manifest = join_parts(parts_dir, staging / "payload.tar")
        with tarfile.open(staging / "payload.tar") as tar:
            tar.extractall(staging, filter="data")
        (staging / "payload.tar").unlink()
        (staging / payload.MANIFEST).write_text(json.dumps(manifest))
    manifest = json.loads((staging / payload.MANIFEST).read_text())
    release, entry = release_of(manifest, release)
    wheels = [staging / payload.WHEELS_DIR / name for name in entry["wheels"]]
    _checked(proc.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                       "--no-cache-dir", "--upgrade", "--target", str(site), *map(str, wheels)]), "pip install")
    for trimmed in entry["trimmed"]:
        with tarfile.open(staging / payload.TRIMMED_DIR / trimmed["tarball"]) as tar:
            tar.extractall(site, filter="data")
    for deb in sorted((staging / payload.DEBS_DIR).glob("*.deb")):
        _checked(proc.run(["dpkg", "-x", str(deb), str(site / "_deb")]), f"dpkg -x {deb.name}")
    env = device_env(site, manifest, {}, release)
    (site / ENV_FILE).write_text(json.dumps({"manifest": manifest, "release": release, "env": env}, indent=2) + "\n")
    print(f"pcgkit: installed sglang {release}: {len(wheels)} wheels + {len(entry['trimmed'])} trimmed + "
          f"{len(manifest['debs'])} deb into {site} in {time.monotonic() - started:.1f} s")
    return manifest


def _site_env(site: Path, base: Mapping[str, str]) -> dict[str, str]:
    record = json.loads((site / ENV_FILE).read_text())
    return device_env(site, record["manifest"], base, record.get("release"))


def environment(site: Path) -> dict[str, str]:
    return {**os.environ, **_site_env(site, os.environ)}


def run_cases(site: Path, out: Path, extra: list[str], timeout_s: float) -> int:
    out.mkdir(parents=True, exist_ok=True)
    env = {**environment(site), "PCGKIT_E2E_ARTIFACTS": str(out / "e2e")}
    cases = resources.cases_dir()
    argv = [sys.executable, "-m", "pytest", *(str(cases / name) for name in CASE_FILES), "-m", "e2e or gpu or cpu_sim",
            "-c", str(resources.cases_pytest_ini()), "--rootdir", str(cases), "-p", "pcgkit.plugin",
            "-p", "no:cacheprovider",
            "-rA", f"--junitxml={out / 'junit.xml'}", f"--pcgkit-json={out / 'results.json'}", *extra]
    completed = proc.run(argv, env=env, cwd=resources.workspace_root(), timeout=timeout_s, log_path=out / "pytest.log")
    print(completed.output_tail[-3000:])
    return 0 if completed.returncode in (0, 1) else 1  # failing cases are results, not a runner failure


def observe(site: Path, fmt: str, out: Path, ready_timeout_s: float) -> dict:
    """One launch on this GPU through the kit's launcher; the record of what happened (no verdict judging)."""
    os.environ.update(_site_env(site, os.environ))
    sys.path[:0] = [str(site)]
    from pcgkit.e2e.case import broken_install_reason, launch_and_classify, launch_port, plan_for_checkpoint
    from pcgkit.e2e.checkpoint import write_checkpoint
    from pcgkit.harness import hardware
    from pcgkit.harness.casekit import cuda_toolkit_root
    from pcgkit.harness.versions import collect_versions
    from pcgkit.sglang import facts as sglang_facts

    out.mkdir(parents=True, exist_ok=True)
    devices = hardware.detect_cuda_devices()
    flags = sglang_facts.piecewise_flags()
    broken = broken_install_reason(flags)
    if broken:
        raise EnvironmentSetupError(broken)
    checkpoint = write_checkpoint(out / f"tiny-{fmt}", fmt=fmt)
    env = dict(os.environ)
    toolkit = cuda_toolkit_root()
    if toolkit and not env.get("CUDA_HOME"):
        env["CUDA_HOME"] = toolkit
    port, _ = launch_port()
    plan = plan_for_checkpoint(flags, python=sys.executable, fmt=fmt, model_path=str(checkpoint), port=port, env=env)
    outcome = launch_and_classify(plan.argv, port=port, log_path=out / f"observe-{fmt}.log", env=env,
                                  ready_timeout_s=ready_timeout_s)
    c = outcome.classification
    record = {
        "schema": "pcgkit.e2e-observation/1",
        "format": fmt,
        "devices": [d.to_dict() for d in devices],
        "versions": collect_versions(),
        "launch": list(plan.argv),
        "verdict": c.verdict.value,
        "reason": c.reason,
        "signature": c.signature.to_dict() if c.signature and hasattr(c.signature, "to_dict") else (
            dataclasses.asdict(c.signature) if c.signature else None),
        "capture_began": c.capture_began,
        "capture_ended": c.capture_ended,
        "server": outcome.run.to_dict(),
        "timings": outcome.timings,
    }
    (out / f"observe-{fmt}.json").write_text(json.dumps(record, indent=2, default=str) + "\n")
    print(f"pcgkit: observe {fmt}: {c.verdict}: {c.reason}")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m lab.e2e.devicerun")
    sub = parser.add_subparsers(dest="command", required=True)
    p_install = sub.add_parser("install")
    p_install.add_argument("--parts", required=True)
    p_install.add_argument("--site", required=True)
    p_install.add_argument("--release", default=None, help="the SGLang release to install (a payload may hold several)")
    p_env = sub.add_parser("env", help="print the installed payload's variables as shell exports")
    p_env.add_argument("--site", required=True)
    p_cases = sub.add_parser("cases")
    p_cases.add_argument("--site", required=True)
    p_cases.add_argument("--out", required=True)
    p_cases.add_argument("--timeout", type=float, default=480.0)
    p_cases.add_argument("pytest_args", nargs="*")
    p_observe = sub.add_parser("observe")
    p_observe.add_argument("--site", required=True)
    p_observe.add_argument("--format", required=True, choices=("nvfp4", "bf16"))
    p_observe.add_argument("--out", required=True)
    p_observe.add_argument("--ready-timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            install(Path(args.parts), Path(args.site), args.release)
            return 0
        if args.command == "env":
            for name, value in _site_env(Path(args.site), os.environ).items():
                print(f"export {name}={shlex.quote(value)}")
            return 0
        if args.command == "cases":
            return run_cases(Path(args.site), Path(args.out), args.pytest_args, args.timeout)
        observe(Path(args.site), args.format, Path(args.out), args.ready_timeout)
        return 0
    except PcgkitError as exc:
        print(f"pcgkit: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    raise SystemExit(main())
