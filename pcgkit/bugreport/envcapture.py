"""`pcgkit env`: what a maintainer needs to know about one cell, built on torch.utils.collect_env.

torch's collect_env already gathers OS, compilers, driver, CUDA runtime, cuDNN and pip packages;
we keep its fields as they are and add what this bug family turns on: the sglang / FlashInfer
distributions, the CUDA toolkit FlashInfer's JIT would shell out to, the GPUs (or the simulated
SM120), the container, and the relevant environment variables. Every probe is guarded, so a
broken torch or FlashInfer is *recorded*, not fatal. Secrets are redacted before anything leaves
`capture()` (pcgkit.util.redact).
"""

from __future__ import annotations

import datetime as _dt
import importlib.util
import os
import platform
import re
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

from pcgkit.harness.versions import DISTRIBUTIONS, installed_version
from pcgkit.util import proc
from pcgkit.util.redact import redact_env_var, redact_tree, secret_values

ENV_SCHEMA = "pcgkit.env/1"
# Variables that steer torch.compile, CUDA, FlashInfer's JIT, SGLang and NCCL (matched by prefix).
ENV_VAR_PREFIXES: tuple[str, ...] = (
    "TORCH", "PYTORCH", "CUDA", "FLASHINFER", "SGLANG", "SGL_", "NCCL", "TRITON", "NVIDIA_", "PCGKIT",
)
ENV_VAR_NAMES: tuple[str, ...] = ("LD_LIBRARY_PATH", "container")
CONTAINER_IMAGE_VAR = "PCGKIT_IMAGE"  # set by whoever starts the container: `docker run -e PCGKIT_IMAGE=...`


def _guarded(probe: Callable[[], dict]) -> dict:
    """Run one probe; a failure becomes {"error": ...} so the rest of the capture survives."""
    try:
        return probe()
    except Exception as exc:  # a broken install is exactly what a capture must describe
        return {"error": f"{type(exc).__name__}: {exc}"}


def _load_collect_env():
    """torch/utils/collect_env.py loaded from its file, not through `import torch`: collect_env guards its own
    import, so a torch that fails to import still yields the OS / compiler / driver half of the report."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("torch is not installed: no torch/utils/collect_env.py to build on")
    path = Path(list(spec.submodule_search_locations)[0]) / "utils" / "collect_env.py"
    module_spec = importlib.util.spec_from_file_location("_pcgkit_torch_collect_env", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def probe_torch_collect_env() -> dict:
    collect_env = _load_collect_env()
    info = collect_env.get_env_info()
    return {
        "torch_available": bool(getattr(collect_env, "TORCH_AVAILABLE", False)),
        "fields": dict(info._asdict()),
        "text": collect_env.pretty_str(info),
    }


def probe_torch() -> dict:
    import torch

    return {
        "import_ok": True,
        "version": torch.__version__,
        "cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
    }


def probe_flashinfer() -> dict:
    import flashinfer

    return {"import_ok": True, "version": getattr(flashinfer, "__version__", None)}


def _import_probe(probe: Callable[[], dict]) -> dict:
    result = _guarded(probe)
    if "error" in result:
        result["import_ok"] = False
    return result


def flashinfer_cuda_home(environ: Mapping[str, str]) -> tuple[str | None, str]:
    """(toolkit root, why) by FlashInfer's own rule (jit/cpp_ext.py:get_cuda_path), without importing it."""
    for name in ("CUDA_HOME", "CUDA_PATH"):
        if environ.get(name):
            return environ[name], f"${name}"
    nvcc = shutil.which("nvcc", path=environ.get("PATH"))
    if nvcc:
        return str(Path(nvcc).parent.parent), "nvcc on PATH"
    if os.path.exists("/usr/local/cuda"):
        return "/usr/local/cuda", "FlashInfer's default /usr/local/cuda"
    return None, "none: FlashInfer's JIT would raise 'Could not find nvcc'"


def probe_cuda_toolkit(environ: Mapping[str, str]) -> dict:
    cuda_home, source = flashinfer_cuda_home(environ)
    result: dict[str, Any] = {"cuda_home": cuda_home, "source": source, "nvcc": None, "nvcc_version": None}
    if cuda_home is None:
        return result
    nvcc = Path(cuda_home) / "bin" / "nvcc"
    if not nvcc.exists():
        result["error"] = f"{nvcc} does not exist"
        return result
    result["nvcc"] = str(nvcc)
    completed = proc.run([str(nvcc), "--version"], timeout=60, echo=False)
    release = re.findall(r"release (\d+\.\d+),", completed.output_tail)  # the same parse FlashInfer does
    result["nvcc_version"] = release[0] if release else None
    if not completed.ok:
        result["error"] = f"nvcc --version: {completed.describe_failure()}"
    return result


def probe_devices() -> dict:
    from pcgkit.harness.hardware import SIMULATED_SM120, detect_cuda_devices

    devices = detect_cuda_devices()
    if devices:
        return {"mode": "real", "gpus": [d.to_dict() for d in devices]}
    # No GPU: the kit's cases run here only as the simulation, so say so in the capture itself.
    return {"mode": "simulated SM120", "gpus": [], "label": SIMULATED_SM120.label}


def probe_container(environ: Mapping[str, str], root: Path = Path("/")) -> dict:
    evidence = []
    image = environ.get(CONTAINER_IMAGE_VAR) or None
    if (root / ".dockerenv").exists():
        evidence.append("/.dockerenv")
    containerenv = root / "run" / ".containerenv"
    if containerenv.exists():
        evidence.append("/run/.containerenv")
        match = re.search(r'^image="?([^"\n]+)"?$', containerenv.read_text(errors="replace"), re.MULTILINE)
        image = image or (match.group(1) if match else None)
    if environ.get("container"):
        evidence.append(f"$container={environ['container']}")
    cgroup = root / "proc" / "1" / "cgroup"
    if cgroup.exists():
        text = cgroup.read_text(errors="replace")
        for runtime in ("docker", "kubepods", "containerd", "lxc", "libpod"):
            if runtime in text:
                evidence.append(f"/proc/1/cgroup mentions {runtime}")
    return {
        "inside": bool(evidence),
        "evidence": evidence,
        "image": image or (f"unknown (set ${CONTAINER_IMAGE_VAR} when starting it)" if evidence else None),
    }


def relevant_env_vars(environ: Mapping[str, str]) -> dict[str, str]:
    secrets = secret_values(environ)
    return {
        name: redact_env_var(name, value, secrets)
        for name, value in sorted(environ.items())
        if name.startswith(ENV_VAR_PREFIXES) or name in ENV_VAR_NAMES
    }


def capture(environ: Mapping[str, str] | None = None) -> dict:
    """The whole capture, redacted. The edge: imports, subprocesses, files."""
    environ = dict(os.environ if environ is None else environ)
    data = {
        "schema": ENV_SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": {"version": platform.python_version(), "executable": sys.executable},
        "platform": {"system": platform.system(), "machine": platform.machine(), "release": platform.release()},
        "packages": {name: installed_version(name) for name in DISTRIBUTIONS},
        "torch_collect_env": _guarded(probe_torch_collect_env),
        "torch": _import_probe(probe_torch),
        "flashinfer": _import_probe(probe_flashinfer),
        "cuda_toolkit": _guarded(lambda: probe_cuda_toolkit(environ)),
        "devices": _guarded(probe_devices),
        "container": _guarded(lambda: probe_container(environ)),
        "env_vars": relevant_env_vars(environ),
    }
    return redact_tree(data, secret_values(environ))


def render_text(data: dict) -> str:
    """A capture as the text a maintainer reads. Pure."""
    lines = [f"pcgkit env ({data.get('schema')}, captured {data.get('created')})", ""]
    python = data.get("python", {})
    lines.append(f"Python: {python.get('version')} ({python.get('executable')})")
    lines.append("Packages:")
    lines += [f"  {name}: {version or 'not installed'}" for name, version in data.get("packages", {}).items()]
    for probe in ("torch", "flashinfer"):
        result = data.get(probe, {})
        state = (f"imports, version {result.get('version')}" if result.get("import_ok")
                 else f"FAILS: {result.get('error')}")
        lines.append(f"import {probe}: {state}")
    toolkit = data.get("cuda_toolkit", {})
    lines.append(
        f"CUDA toolkit for FlashInfer's JIT: {toolkit.get('cuda_home')} (from {toolkit.get('source')}), "
        f"nvcc {toolkit.get('nvcc_version')}" + (f" -- {toolkit['error']}" if toolkit.get("error") else "")
    )
    devices = data.get("devices", {})
    if devices.get("gpus"):
        lines.append("GPUs: " + "; ".join(g.get("label", "?") for g in devices["gpus"]))
    else:
        lines.append(f"GPUs: none -> {devices.get('label') or devices.get('error')}")
    container = data.get("container", {})
    if container.get("inside"):
        evidence = ", ".join(container.get("evidence", []))
        lines.append(f"Container: yes, image {container.get('image')} ({evidence})")
    else:
        lines.append("Container: no" + (f" ({container['error']})" if container.get("error") else ""))
    lines.append("Environment variables:")
    lines += [f"  {k}={v}" for k, v in data.get("env_vars", {}).items()] or ["  (none set)"]
    collect_env = data.get("torch_collect_env", {})
    lines += ["", "torch.utils.collect_env:"]
    lines.append(collect_env.get("text") or f"  unavailable: {collect_env.get('error')}")
    return "\n".join(lines) + "\n"


def _main(argv: list[str]) -> int:
    """`python -m pcgkit.bugreport.envcapture OUT`: the capture of *this* interpreter, as JSON in OUT.

    `pcgkit env --python ENV` runs this with ENV and only the pcgkit package on PYTHONPATH (every
    module the capture imports is standard library only), so ENV needs nothing of the kit installed."""
    import json

    Path(argv[0]).write_text(json.dumps(capture(), indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
