"""Registered ops' fakes against their kernels, with real tensors on a real GPU (issue 40).

For every op the installed FlashInfer registers with torch.library (namespaces NAMESPACES, read from
torch's dispatcher after importing flashinfer and its first-level submodules), with inputs from
  - the kit's recipes (RECIPES: random, never zero, tensors of a shape the op documents), else
  - a trace-safety certificate's recorded call (`ops[].call` of a pcgkit.certificate/1 file, e.g. issue
    39's in fixtures/certificates/; the metadata rebuilt as random tensors on the device),
the op runs three ways: the real kernel on the device; its fake under FakeTensorMode with the same
inputs; and torch.library.opcheck with the real tensors (all of opcheck's default tests). Outputs are
compared field by field (shape, dtype, stride, device type). A kernel that raises is recorded with its
message (a kernel built for other GPUs says so there): no verdict on its fake, which was not checked.

    python3 benchmarks/fakes_vs_kernels.py --out DIR [--certificate CERT.json ...] [--device cuda]

writes DIR/fakes-vs-kernels.json (schema SCHEMA) and DIR/fakes-vs-kernels.md (the table). Pure:
describe (of tensors already made), compare_meta, classify, render. Runs on CPU too (--device cpu),
which the tests do with ops of their own.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import pkgutil
import sys
import time
from pathlib import Path
from typing import Any, Callable

SCHEMA = "pcgkit.fakes-vs-kernels/1"
NAMESPACES = ("flashinfer", "trtllm", "b12x")
AGREES = "agrees"
FAKE_DRIFT = "fake-drift"
OPCHECK_FAILS = "opcheck-fails"
KERNEL_RAISED = "kernel-raised"
FAKE_RAISED = "fake-raised"
NO_INPUTS = "no-inputs"


def _fp4_quantize_inputs(device: str):
    """flashinfer::fp4_quantize(input, global_scale): bf16 [128, 256] activations and ModelOpt's 448 * 6 / amax."""
    import torch

    x = torch.randn(128, 256, dtype=torch.bfloat16, device=device) * 3
    return (x, (448.0 * 6.0 / x.float().abs().amax()).reshape(1)), {}


def _fp4_quantize_pdl_false_inputs(device: str):
    """The same with enable_pdl=False: through 0.7.0.post1 the op's wrapper forwards by position, so the default
    None is a TypeError (FACTS.md, "Read from release wheels"); a bool gets past it (into another slot)."""
    args, _ = _fp4_quantize_inputs(device)
    return args, {"enable_pdl": False}


def _reswizzle_sf_inputs(device: str):
    """trtllm::reswizzle_sf(sf, rows, cols, 16): e4m3 scale bytes of a [128, 256] FP4 tensor (128 x 16 scales)."""
    import torch

    return (torch.randint(1, 255, (128, 256 // 16), dtype=torch.uint8, device=device), 128, 256, 16), {}


# qualname -> (variant, inputs) pairs: each variant is one row.
RECIPES: dict[str, tuple[tuple[str, Callable[[str], tuple[tuple, dict]]], ...]] = {
    "flashinfer::fp4_quantize": (("defaults", _fp4_quantize_inputs), ("enable_pdl=False", _fp4_quantize_pdl_false_inputs)),
    "trtllm::reswizzle_sf": (("defaults", _reswizzle_sf_inputs),),
}


def describe(value: Any) -> Any:
    """An output's metadata: shape, dtype, stride and device type per tensor (lists for tuples)."""
    import torch

    if isinstance(value, torch.Tensor):
        return {"shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch."),
                "stride": list(value.stride()), "device": value.device.type}
    if isinstance(value, (list, tuple)):
        return [describe(v) for v in value]
    return {"value_type": type(value).__name__}


def compare_meta(real: Any, fake: Any, where: str = "out") -> list[str]:
    """Every field in which the fake's output metadata differs from the real kernel's. Pure."""
    if isinstance(real, list) or isinstance(fake, list):
        if not (isinstance(real, list) and isinstance(fake, list)) or len(real) != len(fake):
            return [f"{where}: real {real!r}, fake {fake!r}"]
        return [d for i, (r, f) in enumerate(zip(real, fake)) for d in compare_meta(r, f, f"{where}[{i}]")]
    return [f"{where}.{key}: real {real.get(key)}, fake {fake.get(key)}"
            for key in sorted(set(real) | set(fake)) if real.get(key) != fake.get(key)]


def classify(row: dict) -> str:
    """The row's class, first that applies: no inputs, kernel raised, fake raised, drift, opcheck fails, agrees. Pure."""
    if row.get("inputs_from") is None:
        return NO_INPUTS
    if row.get("kernel_error"):
        return KERNEL_RAISED
    if row.get("fake_error"):
        return FAKE_RAISED
    if row.get("differences"):
        return FAKE_DRIFT
    if any(v != "SUCCESS" for v in (row.get("opcheck") or {}).values()):
        return OPCHECK_FAILS
    return AGREES


def materialize(value: Any, device: str) -> Any:
    """A certificate's recorded argument (its tensor metadata) as a random tensor on `device`."""
    import torch

    if isinstance(value, dict) and "tensor" in value:
        dtype = getattr(torch, value["dtype"])
        if dtype.is_floating_point:
            return (torch.randn(value["tensor"], device=device) * 2).to(dtype)
        if dtype == torch.bool:
            return torch.randint(0, 2, value["tensor"], device=device).bool()
        return torch.randint(1, 100, value["tensor"], device=device).to(dtype)
    if isinstance(value, dict) and "dtype_value" in value:
        return getattr(torch, value["dtype_value"])
    if isinstance(value, list):
        return [materialize(v, device) for v in value]
    return value


def _error(exc: BaseException, limit: int = 300) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:limit]}"


def _error_chain(exc: BaseException, limit: int = 1500) -> str:
    """The error and what caused it (opcheck's OpCheckError names the failing test; its cause says what differed:
    the 2026-12-05 H200 run kept only the first 300 characters of the first and lost the second)."""
    parts, seen, cur = [], set(), exc
    while cur is not None and id(cur) not in seen and len(parts) < 4:
        seen.add(id(cur))
        parts.append(_error(cur, limit))
        cur = cur.__cause__ or cur.__context__
    return " <- caused by: ".join(parts)


def judge(qualname: str, args: tuple, kwargs: dict, inputs_from: str, device: str,
          opcheck_tests: tuple[str, ...] | None = None) -> dict:
    """One op with real inputs: the kernel's outputs, the fake's, their differences, opcheck's results
    (opcheck_tests None: all of opcheck's default tests, as on the device)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    namespace, _, name = qualname.partition("::")
    packet = getattr(getattr(torch.ops, namespace), name)
    row: dict = {"op": qualname, "inputs_from": inputs_from, "inputs": describe(list(args)),
                 "kwargs": {k: describe(v) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}}
    try:
        real = packet(*args, **kwargs)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        row["real"] = describe(real)
    except Exception as exc:  # noqa: BLE001 - a kernel for another GPU raises; that is the record
        row["kernel_error"] = _error(exc)
        row["class"] = classify(row)
        return row
    try:
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            fake = packet(*(mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args), **kwargs)
            row["fake"] = describe(fake)
    except Exception as exc:  # noqa: BLE001
        row["fake_error"] = _error(exc)
    if "fake" in row:
        row["differences"] = compare_meta(row["real"], row["fake"])
    try:
        overload = packet.default if hasattr(packet, "default") else packet
        chosen = {"test_utils": opcheck_tests} if opcheck_tests else {}
        row["opcheck"] = {k: str(v) for k, v in torch.library.opcheck(overload, args, kwargs, **chosen).items()}
    except Exception as exc:  # noqa: BLE001
        row["opcheck"] = {"opcheck": _error_chain(exc)}
    row["class"] = classify(row)
    return row


def registered_ops(namespaces: tuple[str, ...] = NAMESPACES) -> list[str]:
    """`ns::name` of every op torch's dispatcher knows in those namespaces (overloads folded)."""
    import torch

    names = {n.split(".", 1)[0] for n in torch._C._dispatch_get_all_op_names()}
    return sorted(n for n in names if n.split("::", 1)[0] in namespaces)


def import_package(name: str) -> dict[str, str]:
    """Import a package and its first-level submodules (ops register at import); failures by module."""
    failed = {}
    try:
        package = importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001
        return {name: _error(exc)}
    for info in pkgutil.iter_modules(getattr(package, "__path__", []), prefix=f"{name}."):
        try:
            importlib.import_module(info.name)
        except Exception as exc:  # noqa: BLE001 - a submodule for other hardware or a missing extra
            failed[info.name] = _error(exc)
    return failed


def certificate_calls(paths: list[Path]) -> dict[str, tuple[dict, str]]:
    """qualname -> (recorded call, which certificate) from certificates' op entries that carry a call."""
    calls: dict[str, tuple[dict, str]] = {}
    for path in paths:
        data = json.loads(path.read_text())
        if data.get("schema") != "pcgkit.certificate/1":
            raise SystemExit(f"fakes_vs_kernels: {path}: not a pcgkit.certificate/1 file")
        for op in data.get("ops", ()):
            if op.get("call") and op["qualname"] not in calls:
                calls[op["qualname"]] = (op["call"], f"{path.name} ({op['call'].get('caller', '?')})")
    return calls


def run(device: str, certificates: list[Path], namespaces: tuple[str, ...], package: str | None = "flashinfer",
        opcheck_tests: tuple[str, ...] | None = None) -> dict:
    import torch

    started = time.monotonic()
    import_errors = import_package(package) if package else {}
    calls = certificate_calls(certificates)
    rows = []
    for qualname in registered_ops(namespaces):
        if qualname in RECIPES:
            for variant, inputs in RECIPES[qualname]:
                args, kwargs = inputs(device)
                rows.append(judge(qualname, args, kwargs, f"the kit's recipe ({variant})", device, opcheck_tests))
        elif qualname in calls:
            call, source = calls[qualname]
            args = tuple(materialize(a, device) for a in call["args"])
            kwargs = {k: materialize(v, device) for k, v in call.get("kwargs", {}).items()}
            rows.append(judge(qualname, args, kwargs, f"certificate {source}", device, opcheck_tests))
        else:
            rows.append({"op": qualname, "inputs_from": None, "class": NO_INPUTS})
    gpu = None
    if device.startswith("cuda") and torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        gpu = {"name": torch.cuda.get_device_name(), "compute_capability": f"{major}.{minor}", "arch": f"SM{major}{minor}"}
    versions = {"torch": torch.__version__, "cuda": torch.version.cuda}
    if package:
        versions[package] = getattr(sys.modules.get(package), "__version__", None)
    return {"schema": SCHEMA, "date": datetime.date.today().isoformat(), "device": device, "gpu": gpu, "simulated": False,
            "versions": versions, "namespaces": list(namespaces), "certificates": [p.name for p in certificates],
            "import_errors": import_errors, "wall_s": round(time.monotonic() - started, 1), "rows": rows}


def render(doc: dict) -> str:
    """The table people read: one row per op, its class and the evidence. Pure."""
    gpu = doc.get("gpu") or {}
    head = (f"# Registered ops: fakes against kernels ({gpu.get('name', doc['device'])}"
            f"{', ' + gpu['arch'] if gpu.get('arch') else ''}; {', '.join(f'{k} {v}' for k, v in doc['versions'].items())}; "
            f"{doc['date']})\n\n")
    counts: dict[str, int] = {}
    for row in doc["rows"]:
        counts[row["class"]] = counts.get(row["class"], 0) + 1
    lines = [head + "; ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + "\n",
             "| op | class | inputs from | real outputs | fake vs real | opcheck |", "|---|---|---|---|---|---|"]
    for row in doc["rows"]:
        real = row.get("kernel_error") or json.dumps(row.get("real", ""))
        versus = row.get("fake_error") or ("; ".join(row["differences"]) if row.get("differences") else
                                            ("same shape, dtype, stride, device" if "differences" in row else ""))
        opcheck = ", ".join(f"{k}: {v}" for k, v in (row.get("opcheck") or {}).items())
        lines.append(f"| `{row['op']}` | {row['class']} | {row.get('inputs_from') or ''} | {real} | {versus} | {opcheck} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--certificate", action="append", default=[], help="a pcgkit.certificate/1 file (repeatable)")
    parser.add_argument("--namespaces", default=",".join(NAMESPACES))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    doc = run(args.device, [Path(p) for p in args.certificate], tuple(args.namespaces.split(",")))
    (out / "fakes-vs-kernels.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "fakes-vs-kernels.md").write_text(render(doc))
    print(render(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
