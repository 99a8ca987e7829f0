"""`pcgkit sweep`: the sweep in this interpreter (its flashinfer and torch) into --reports (sweep.json, schema
pcgkit.sweep/1; sweep.md, the readiness table). `--real`: on the CUDA device, nothing simulated and no guard, so
plan() runs for real (no GPU: exit 3). The certificates are built in the workshop (`bin/pcgkit lab certify`)."""

from __future__ import annotations

import argparse
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


def toolkit_env() -> dict[str, str]:
    """CUDA_HOME for FlashInfer, as on a CUDA machine, like the plugin's: the toolkit the kit found, unless set."""
    from pcgkit.harness.casekit import cuda_toolkit_root

    toolkit = cuda_toolkit_root()
    return {"CUDA_HOME": toolkit} if toolkit and not os.environ.get("CUDA_HOME") else {}


def main(args: argparse.Namespace) -> int:
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
    start = time.perf_counter()
    with mock.patch.dict(os.environ, toolkit_env()):
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
