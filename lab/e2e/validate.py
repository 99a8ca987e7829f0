"""`bin/pcgkit lab validate-launch`: the launch command and checkpoint checked against every matrix SGLang.

For each SGLang release in the default matrix: install it without dependencies into its own
folder, next to one shared light environment (torch + the few packages `sglang.srt.server_args`
and `modelopt_quant` import; fixtures/e2e_probe_requirements.txt), run lab.e2e.probe there,
and record what it said in fixtures/sglang_launch_validation.json. Each release is parsed by its
OWN argument parser. The environments live under --workdir and are removed afterwards unless --keep.

`plan_versions` and `summarize` are pure; `run_validation` is the edge.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Iterable, Sequence

from lab.e2e.probe import MARKER
from pcgkit import resources
from pcgkit.errors import EnvironmentSetupError
from pcgkit.util import atomic, proc

DEFAULT_OUT = resources.fixture("sglang_launch_validation.json")
PROBE_REQUIREMENTS = resources.fixture("e2e_probe_requirements.txt")
KIT_IMPORT_ROOT = resources.package_dir().parent  # the checkout (pcgkit/ and lab/), on PYTHONPATH inside the probe env
SCHEMA = "pcgkit.sglang-launch-validation/1"
COMMAND = "bin/pcgkit lab validate-launch"


def plan_versions(cells: Iterable) -> list[str]:
    """The SGLang releases the matrix installs, oldest first, each once."""
    from packaging.version import Version

    return sorted({c.sglang for c in cells if getattr(c, "sglang", None)}, key=Version)


def version_key(version: str):
    from packaging.version import Version

    return Version(version)


def default_matrix_versions() -> list[str]:
    from pcgkit.matrix import pins as pins_mod
    from pcgkit.matrix.plan import DEFAULT_MATRIX_FILE, load_matrix, plan

    spec = load_matrix(DEFAULT_MATRIX_FILE)
    return plan_versions(plan(spec, pins_mod.load_pins(pins_mod.DEFAULT_PINS_FILE), base_dir=DEFAULT_MATRIX_FILE.parent))


# Packages whose release-declared pin each SGLang's own code depends on at import time (transformers
# registers model configs that clash across majors): installed per release beside it, from its
# wheel's Requires-Dist. compressed-tensors goes in without dependencies (it would pull torch).
OVERLAY_WITH_DEPS = ("transformers", "tokenizers")
OVERLAY_NO_DEPS = ("compressed-tensors",)


def declared_pins(metadata: str, names: Iterable[str]) -> list[str]:
    """'name==version' for each of names that a wheel's METADATA pins exactly (extras ignored). Pure."""
    wanted = {n.lower().replace("_", "-") for n in names}
    pins = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        requirement = line.split(":", 1)[1].split(";", 1)[0].strip()
        name, sep, version = requirement.partition("==")
        if sep and name.strip().lower().replace("_", "-") in wanted:
            pins.append(f"{name.strip()}=={version.strip()}")
    return pins


def parse_probe_output(text: str) -> dict | None:
    """The probe's JSON from its output (the last marker line), or None when it printed none."""
    for line in reversed(text.splitlines()):
        if line.startswith(MARKER):
            return json.loads(line[len(MARKER) :])
    return None


def result_status(report: dict | None) -> tuple[str, str]:
    """("ok" | "not-applicable" | "failed", one line saying why). Pure.

    not-applicable: the release has no flag that turns piecewise CUDA graphs on (nothing to launch),
    while everything else it was asked passed.
    """
    if report is None:
        return "failed", "the probe printed no result"
    flags = report.get("flags", {})
    if "error" in flags:
        return "failed", f"flags: {flags['error']}"[:800]
    launch, checkpoint = report.get("launch", {}), report.get("checkpoint", {})
    failed = []
    if not launch.get("ok") and not launch.get("not_applicable"):
        failed.append(f"launch: {launch.get('error', 'missing')}")
    if not checkpoint.get("ok"):
        failed.append(f"checkpoint: {checkpoint.get('error') or '; '.join(checkpoint.get('problems', [])[:3]) or 'missing'}")
    if failed:
        return "failed", " | ".join(failed)[:800]
    if launch.get("not_applicable"):
        return "not-applicable", f"{launch['not_applicable']}; checkpoint matches its ModelOpt FP4 layer"
    return "ok", "launch argv parsed by its own parser; checkpoint matches its ModelOpt FP4 layer"


def summarize(version_reports: dict[str, dict | None], environment: dict) -> dict:
    """The committed data file's content. Pure (the date is passed in through environment)."""
    results = []
    for version, report in version_reports.items():
        status, why = result_status(report)
        results.append({"sglang": version, "status": status, "summary": why, "probe": report})
    return {
        "schema": SCHEMA,
        "generated_by": COMMAND,
        **environment,
        "all_ok": bool(results) and all(r["status"] != "failed" for r in results),
        "results": results,
    }


def _uv(*args: str, log: Path) -> proc.Completed:
    return proc.run([*proc.uv_command(), *args], timeout=1800, log_path=log,
                    env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"})


def _probe_env(workdir: Path, python: str) -> Path:
    """The shared light environment (torch and server_args' imports), built once."""
    venv = workdir / "probe-venv"
    stamp = venv / ".pcgkit-probe-stamp"
    want = PROBE_REQUIREMENTS.read_text()
    if stamp.exists() and stamp.read_text() == want:
        return venv
    for args in (("venv", "--quiet", "--allow-existing", "-p", python, str(venv)),
                 ("pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), "-r", str(PROBE_REQUIREMENTS))):
        done = _uv(*args, log=workdir / "probe-venv.log")
        if not done.ok:
            raise EnvironmentSetupError(f"building {venv} failed ({done.describe_failure()}):\n{done.output_tail[-1500:]}")
    atomic.write_text(stamp, want, redact=False)  # compared byte for byte with the requirements on reuse
    return venv


def _install_release(venv: Path, target: Path, version: str, log: Path) -> str | None:
    """sglang==version without dependencies into target, plus its own pins of OVERLAY_*; None when ok."""
    python = str(venv / "bin" / "python")
    done = _uv("pip", "install", "--quiet", "--no-deps", "--python", python, "--target", str(target),
               f"sglang=={version}", log=log)
    if not done.ok:
        return f"install of sglang=={version} failed: {done.output_tail[-600:]}"
    metadata = next(target.glob("sglang-*.dist-info/METADATA")).read_text()
    for names, extra in ((OVERLAY_WITH_DEPS, ()), (OVERLAY_NO_DEPS, ("--no-deps",))):
        pins = declared_pins(metadata, names)
        if not pins:
            continue
        done = _uv("pip", "install", "--quiet", *extra, "--python", python, "--target", str(target), *pins, log=log)
        if not done.ok:
            return f"install of {pins} failed: {done.output_tail[-600:]}"
    atomic.write_text(target / ".pcgkit-installed", version)
    return None


def run_validation(versions: Sequence[str], workdir: Path, python: str) -> dict[str, dict | None]:
    from pcgkit.e2e.checkpoint import write_checkpoint

    workdir.mkdir(parents=True, exist_ok=True)
    venv = _probe_env(workdir, python)
    checkpoint = write_checkpoint(workdir / "tiny-nvfp4")
    reports: dict[str, dict | None] = {}
    for version in versions:
        target = workdir / f"sglang-{version}"
        log = workdir / f"sglang-{version}.log"
        if not (target / ".pcgkit-installed").exists():
            error = _install_release(venv, target, version, log)
            if error:
                reports[version] = {"flags": {"ok": False, "error": error}}
                continue
        done = proc.run(
            [str(venv / "bin" / "python"), "-m", "lab.e2e.probe", "--checkpoint", str(checkpoint)],
            env={**os.environ, "PYTHONPATH": f"{target}{os.pathsep}{KIT_IMPORT_ROOT}", "CUDA_VISIBLE_DEVICES": ""},
            timeout=600,
            log_path=workdir / f"probe-{version}.log",
        )
        report = parse_probe_output(done.output_tail) if done.ok else None
        if report is None:
            report = {"flags": {"ok": False, "error": f"probe {done.describe_failure()}: {done.output_tail[-800:]}"}}
        reports[version] = report
        status, why = result_status(report)
        print(f"pcgkit: sglang {version}: {status}: {why}", file=sys.stderr, flush=True)
    return reports
