"""Runs INSIDE an environment that has one SGLang release: its launch command and checkpoint checks.

`python -m lab.e2e.probe --checkpoint DIR` prints one line `PCGKIT-PROBE {json}`:
  flags       the release's piecewise flags, read from its own parser (pcgkit.sglang.facts)
  launch      the argv pcgkit.e2e.launch builds for it, parsed by that same parser: an unknown
              flag or a bad choice makes argparse exit, and that is recorded as a failure
  checkpoint  the tiny checkpoint's quantization config through the release's own
              ModelOptFp4Config.from_config, and each quantized tensor's shape/dtype against the
              parameters its ModelOptFp4LinearMethod.create_weights registers
Nothing here launches a server or needs a GPU. SGLang's quantization package imports CUDA-only
kernel libraries at module level (`from sgl_kernel import silu_and_mul`); where such a library
cannot be imported here, it is replaced by a STUB whose attributes raise when called, and the
report lists it under "stubbed". Config parsing and create_weights call none of them.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import importlib.machinery
import io
import json
import sys
import traceback
import types
from pathlib import Path

MARKER = "PCGKIT-PROBE "
# CUDA-only kernel packages (hundreds of MB of GPU binaries) that SGLang imports unconditionally at
# module level. Only those: a stub for a package SGLang probes with find_spec (deep_gemm, ...)
# would change which code path it takes.
CUDA_ONLY_MODULES = ("sgl_kernel",)


class _Unavailable:
    """Stands in for a CUDA kernel: importable, but any call says it is a stub."""

    def __init__(self, name: str):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self._name} is a pcgkit probe stub (CUDA-only kernel not installed)")

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Unavailable(f"{self._name}.{attr}")


class _StubFinder:
    """A meta-path finder that serves stub modules for CUDA_ONLY_MODULES that do not import."""

    def __init__(self, roots: tuple[str, ...]):
        self.roots = roots

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in self.roots:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = functools.partial(_stub_attribute, spec.name)
        return module

    def exec_module(self, module):
        pass


def _stub_attribute(module_name: str, attr: str):
    if attr.startswith("__"):  # hasattr(mod, "__version__") etc. must say no, not hand out a stub
        raise AttributeError(attr)
    return _Unavailable(f"{module_name}.{attr}")


def stub_missing_cuda_modules() -> list[str]:
    """Install stubs for the CUDA-only modules that do not import here; returns their names."""
    missing = []
    for name in CUDA_ONLY_MODULES:
        try:
            importlib.import_module(name)
        except Exception:
            sys.modules.pop(name, None)
            missing.append(name)
    if missing:
        sys.meta_path.insert(0, _StubFinder(tuple(missing)))
    return missing


def _parse_with_sglang(server_args: tuple[str, ...], flags) -> dict:
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang.launch_server")
    ServerArgs.add_cli_args(parser)
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            namespace = parser.parse_args(list(server_args))
    except SystemExit as exc:  # argparse's way of saying no: unknown flag, bad choice, ...
        return {"ok": False, "error": f"argparse exit {exc.code}: {stderr.getvalue().strip()[-600:]}"}
    values = {k: getattr(namespace, k) for k in ("quantization", "model_path", "port") if hasattr(namespace, k)}
    # On, as this release decides it: each field the facts name holds its "on" value once parsed
    # (the enable/force switch in effect, the disable switch not, the prefill backend tc_piecewise).
    found, missing = check_on_values(flags.on_values, namespace)
    values["on_values"] = found
    if missing:
        why = "; ".join(missing)
        return {"ok": False, "error": f"parsed, but piecewise CUDA graphs are not on: {why}", "parsed": values}
    return {"ok": True, "parsed": values}


def check_on_values(on_values, namespace: argparse.Namespace) -> tuple[dict, list[str]]:
    """What the parsed namespace holds in each field the facts name, and the mismatches. Pure.

    No field to check is itself a mismatch: "on" would then be taken on trust."""
    found = {dest: _plain(getattr(namespace, dest, "<no such field>")) for dest, _ in on_values}
    missing = [f"{dest}={found[dest]!r} (want {want!r})" for dest, want in on_values if found[dest] != want]
    return found, missing or ([] if on_values else ["the facts name no field to check"])


def _plain(value: object) -> object:
    """A parsed value as the facts record it: SGLang's Backend enum members by their value."""
    return getattr(value, "value", value)


def _cuda_graph_options() -> list[str]:
    """Every --*cuda-graph* option of the release's parser: the record of what it offers instead."""
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    return sorted({o for a in parser._actions for o in a.option_strings if "cuda-graph" in o})


def _check_checkpoint(checkpoint: Path) -> dict:
    """The checkpoint through the release's own ModelOpt FP4 code (config parsing, create_weights)."""
    import torch
    from safetensors import safe_open
    from sglang.srt.layers.quantization import modelopt_quant

    config = json.loads((checkpoint / "config.json").read_text())
    hf_quant = json.loads((checkpoint / "hf_quant_config.json").read_text())
    parsed = {}
    quant_config = None
    for label, source in (("config.json", config["quantization_config"]), ("hf_quant_config.json", hf_quant)):
        qc = modelopt_quant.ModelOptFp4Config.from_config(source)
        parsed[label] = {
            "is_checkpoint_nvfp4_serialized": qc.is_checkpoint_nvfp4_serialized,
            "group_size": qc.group_size,
            "exclude_modules": list(qc.exclude_modules),
        }
        quant_config = quant_config or qc
    problems: list[str] = []
    checked = 0
    with safe_open(str(checkpoint / "model.safetensors"), framework="pt") as handle:
        names = set(handle.keys())
        prefixes = sorted({n.rsplit(".", 1)[0] for n in names if n.endswith(".weight_scale_2")})
        for prefix in prefixes:
            weight = handle.get_tensor(f"{prefix}.weight")
            out_features, in_features = weight.shape[0], weight.shape[1] * 2
            layer = torch.nn.Module()
            method = modelopt_quant.ModelOptFp4LinearMethod(quant_config)
            method.create_weights(
                layer, in_features, [out_features], in_features, out_features, torch.bfloat16,
                weight_loader=lambda *args, **kwargs: None,
            )
            for suffix in ("weight", "weight_scale", "weight_scale_2", "input_scale"):
                expected = getattr(layer, suffix)
                found = handle.get_tensor(f"{prefix}.{suffix}")
                # Per-tensor scales: SGLang keeps one per fused shard ([1] here); ModelOpt writes a
                # 0-d scalar, which SGLang's loader reshapes. Compare element counts for those.
                same_shape = (
                    tuple(found.shape) == tuple(expected.shape)
                    if suffix in ("weight", "weight_scale")
                    else found.numel() == expected.numel()
                )
                if not same_shape or found.dtype != expected.dtype:
                    problems.append(
                        f"{prefix}.{suffix}: checkpoint {tuple(found.shape)} {found.dtype}, "
                        f"SGLang expects {tuple(expected.shape)} {expected.dtype}"
                    )
                checked += 1
    return {"ok": not problems and checked > 0, "parsed": parsed, "tensors_checked": checked, "problems": problems}


def probe(checkpoint: Path) -> dict:
    import importlib.metadata

    from pcgkit.e2e.launch import LaunchPlanError, build_launch
    from pcgkit.sglang.facts import piecewise_flags

    report: dict = {"versions": {}}
    for dist in ("sglang", "torch", "transformers"):
        try:
            report["versions"][dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            report["versions"][dist] = None
    for step in ("flags", "launch", "checkpoint"):
        try:
            if step == "flags":
                flags = piecewise_flags()
                report["flags"] = flags.to_dict()
            elif step == "launch":
                try:
                    plan = build_launch(flags, python="python", model_path=str(checkpoint), port=30000)
                except LaunchPlanError as exc:
                    # Not a failure of the kit: this release has no switch for piecewise CUDA graphs.
                    report["launch"] = {"ok": False, "not_applicable": str(exc), "cuda_graph_options": _cuda_graph_options()}
                    continue
                report["launch"] = {"argv": list(plan.argv), "how": plan.how, **_parse_with_sglang(plan.server_args, flags)}
            else:
                report["stubbed"] = stub_missing_cuda_modules()
                report["checkpoint"] = _check_checkpoint(checkpoint)
        except Exception as exc:  # recorded per step: one broken step must not hide the others
            report[step] = {"ok": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-1500:]}
            if step == "flags":
                break
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.e2e.probe")
    parser.add_argument("--checkpoint", required=True, type=Path)
    args = parser.parse_args(argv)
    print(MARKER + json.dumps(probe(args.checkpoint), sort_keys=True, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
