"""`pcgkit sweep`: run the sweep in this interpreter (its installed flashinfer and torch), write
sweep.json (schema pcgkit.sweep/1) and sweep.md (readiness table) into --reports, print the table.

`--real`: on a CUDA host, trace on the real device (its own arch) with nothing simulated and no
guard, so wrappers' constructors and plan() run for real; without a GPU it refuses (exit 3)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from pathlib import Path
from unittest import mock

from pcgkit.errors import PcgkitError
from pcgkit.harness.hardware import SIMULATED_ARCHES
from pcgkit.util import atomic
from pcgkit.util.argtypes import deprecated_alias


class NoGpuError(PcgkitError):
    """`--real` on a host without a CUDA device."""

    exit_code = 3
    hint = "run --real on a CUDA host (torch.cuda.is_available()); without it, drop --real to simulate"


def register(subparsers) -> None:
    parser = subparsers.add_parser("sweep", help="trace every FlashInfer entry point under fullgraph, per simulated arch",
                                description="Trace every public FlashInfer entry point under torch.compile(fullgraph=True), per simulated arch, and write a readiness report.",
                                epilog="example:\n  %(prog)s --arch sm120 --reports reports/sweep")
    parser.add_argument("--reports", type=Path, default=Path("reports/sweep"), help="where sweep.json / sweep.md go (default reports/sweep)")
    parser.add_argument("--out", type=Path, dest="reports", action=deprecated_alias("--reports"), help=argparse.SUPPRESS)
    parser.add_argument("--arch", action="append", choices=sorted(SIMULATED_ARCHES), help="repeatable; default: all")
    parser.add_argument("-k", dest="only", action="append", help="entry id to run (repeatable); default: all")
    parser.add_argument("--real", action="store_true",
                        help="trace on the real GPU (its own arch), nothing simulated; plan() runs for real")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--discover", action="store_true",
                      help="print the discovery counts (public callables, registered ops, judged, not judged); write discovery.json")
    mode.add_argument("--certificate", action="store_true",
                      help="the trace-safety certificate: every discovered callable and op judged, stacks unrolled (slow: an explicit run)")
    parser.add_argument("--inputs", type=Path,
                        help="with --certificate: the derived inputs JSON (default fixtures/certificates/inputs/flashinfer-<installed>.json)")
    parser.add_argument("--unroll-budget", type=float, default=None,
                        help="with --certificate: seconds of full unrolling; later callables are traced once (default 240)")
    parser.add_argument("--ops-only", action="store_true",
                        help="with --certificate: judge the registered ops alone (the GPU run; no callable's module is built)")
    parser.add_argument("--op-inputs", type=Path,
                        help="with --certificate: a certificate JSON whose recorded op inputs are reused (the CPU one, for the GPU run)")
    parser.set_defaults(func=main)


def real_device():
    """The first CUDA device, or NoGpuError saying what was found."""
    from pcgkit.harness.hardware import detect_cuda_devices

    devices = detect_cuda_devices()
    if not devices:
        import torch

        raise NoGpuError(f"--real needs a CUDA GPU; found none (torch {torch.__version__}, "
                         f"torch.version.cuda {torch.version.cuda}, cuda available: {torch.cuda.is_available()})")
    return devices[0]


def _toolkit_env() -> dict[str, str]:
    from pcgkit.harness.casekit import cuda_toolkit_root

    toolkit = cuda_toolkit_root()
    # Like the plugin: FlashInfer finds nvcc through CUDA_HOME, as on a CUDA machine (recorded below).
    return {"CUDA_HOME": toolkit} if toolkit and not os.environ.get("CUDA_HOME") else {}


def discover_main(args: argparse.Namespace) -> int:
    from pcgkit.sweep.discover import discover
    from pcgkit.sweep.discovery import plan_judgement, render_counts, spec_targets_for
    from pcgkit.sweep.specs import load_specs

    found = discover()
    plan = plan_judgement(found, spec_targets_for(load_specs(), found.flashinfer))
    atomic.ensure_dir(args.reports, "--reports")
    atomic.write_text(args.reports / f"discovery-{found.flashinfer}.json", json.dumps(found.to_dict(), indent=1))
    print(render_counts(found, plan))
    return 0


INPUTS_DIR = ("certificates", "inputs")


def _inputs_for(path: Path | None) -> dict | None:
    from importlib import metadata

    from pcgkit import resources

    # The distribution's version, not flashinfer.__version__: importing flashinfer before discovery
    # would hide which dispatcher namespaces it adds (pcgkit.sweep.discover).
    explicit = path is not None
    path = path or resources.fixture(*INPUTS_DIR, f"flashinfer-{metadata.version('flashinfer-python')}.json")
    if not path.is_file():
        if explicit:  # the user named a file: judging without it would answer another question
            raise PcgkitError(f"--inputs {path}: no such file (write one with `bin/pcgkit lab certificate-inputs`)")
        print(f"pcgkit: no derived inputs at {path} (run `bin/pcgkit lab certificate-inputs`); hand specs only")
        return None
    try:
        return atomic.parse_json(atomic.read_user_bytes(path, "--inputs"), str(path))
    except (OSError, ValueError) as exc:
        raise PcgkitError(f"--inputs {path}: {exc}") from exc


def certificate_main(args: argparse.Namespace) -> int:
    from pcgkit.harness.hardware import SIMULATED_ARCHES
    from pcgkit.sweep.certificate import render_certificate
    from pcgkit.sweep.certify import certify
    from pcgkit.sweep.engine import arch_of

    device = real_device() if args.real else None
    arches = [arch_of(device)] if device else (args.arch or ["sm120"])
    atomic.ensure_dir(args.reports, "--reports")
    from pcgkit.sweep.certify import op_inputs_from

    try:
        op_inputs = (op_inputs_from(atomic.parse_json(atomic.read_user_bytes(args.op_inputs, "--op-inputs"),
                                                      str(args.op_inputs))) if args.op_inputs else {})
    except (OSError, ValueError) as exc:
        raise PcgkitError(f"--op-inputs {args.op_inputs}: {exc}") from exc
    inputs = _inputs_for(args.inputs)
    budget = {} if args.unroll_budget is None else {"unroll_budget_s": args.unroll_budget}
    with mock.patch.dict(os.environ, _toolkit_env()):
        for arch in arches:
            cert = certify(arch, device or SIMULATED_ARCHES[arch], real=device is not None, only=args.only or (),
                           ops_only=args.ops_only, op_inputs=op_inputs, inputs=inputs, **budget)
            stem = f"certificate-{cert['flashinfer']}-{arch}{'' if device is None else '-real'}{'-ops' if args.ops_only else ''}"
            atomic.write_text(args.reports / f"{stem}.json", json.dumps(cert, indent=1))
            atomic.write_text(args.reports / f"{stem}.md", render_certificate(cert))
            print(f"{stem}: " + ", ".join(f"{k} {v}" for k, v in cert["coverage"].items()))
    return 0


def main(args: argparse.Namespace) -> int:
    if args.discover:
        return discover_main(args)
    if args.certificate:
        return certificate_main(args)
    from pcgkit.harness.casekit import cuda_toolkit_root
    from pcgkit.sweep import report
    from pcgkit.sweep.engine import arch_of, installed_versions, run_sweep, run_sweep_real
    from pcgkit.sweep.specs import load_specs

    specs = [s for s in load_specs() if not args.only or s.id in args.only]
    if not specs:
        raise PcgkitError(f"no spec matches {args.only}")
    device = real_device() if args.real else None  # refuse before any work
    arches = [arch_of(device)] if device else (args.arch or list(SIMULATED_ARCHES))
    toolkit = cuda_toolkit_root()
    # Like the plugin: FlashInfer finds nvcc through CUDA_HOME, as on a CUDA machine (recorded below).
    env = {"CUDA_HOME": toolkit} if toolkit and not os.environ.get("CUDA_HOME") else {}
    start = time.perf_counter()
    with mock.patch.dict(os.environ, env) if env else contextlib.nullcontext():
        swept = run_sweep_real(specs, device) if device else run_sweep(specs, arches)
    results = [r.to_dict() for r in swept]
    flashinfer_version, torch_version = installed_versions()
    header = {
        "flashinfer": flashinfer_version, "torch": torch_version, "arches": ", ".join(arches),
        "device": f"real: {device.label}; nothing simulated, plan() ran for real" if device
        else "simulated (CPU; hardware queries answered per arch)",
        "CUDA_HOME": toolkit or "unset", "entry points": str(len(specs)), "wall_s": f"{time.perf_counter() - start:.1f}",
    }
    args.reports.mkdir(parents=True, exist_ok=True)
    # not write_json: it sorts keys, and the results keep the sweep's order
    atomic.write_text(args.reports / "sweep.json", json.dumps({"schema": report.SCHEMA, "header": header, "results": results}, indent=1))
    text = report.render(results, header)
    atomic.write_text(args.reports / "sweep.md", text)
    print(text)
    return 0
