"""`pcgkit sweep`: run the sweep in this interpreter (its installed flashinfer and torch), write
sweep.json (schema pcgkit.sweep/1) and sweep.md (readiness table) into --out, print the table."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from pathlib import Path
from unittest import mock

from pcgkit.harness.hardware import SIMULATED_ARCHES


def register(subparsers) -> None:
    parser = subparsers.add_parser("sweep", help="trace every FlashInfer entry point under fullgraph, per simulated arch",
                                description="Trace every public FlashInfer entry point under torch.compile(fullgraph=True), per simulated arch, and write a readiness report.",
                                epilog="example:\n  %(prog)s --arch sm120 --out reports/sweep")
    parser.add_argument("--out", type=Path, default=Path("reports/sweep"), help="where sweep.json / sweep.md go")
    parser.add_argument("--arch", action="append", choices=sorted(SIMULATED_ARCHES), help="repeatable; default: all")
    parser.add_argument("-k", dest="only", action="append", help="entry id to run (repeatable); default: all")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from pcgkit.errors import PcgkitError
    from pcgkit.harness.casekit import cuda_toolkit_root
    from pcgkit.sweep import report
    from pcgkit.sweep.engine import installed_versions, run_sweep
    from pcgkit.sweep.specs import load_specs

    specs = [s for s in load_specs() if not args.only or s.id in args.only]
    if not specs:
        raise PcgkitError(f"no spec matches {args.only}")
    arches = args.arch or list(SIMULATED_ARCHES)
    toolkit = cuda_toolkit_root()
    # Like the plugin: FlashInfer finds nvcc through CUDA_HOME, as on a CUDA machine (recorded below).
    env = {"CUDA_HOME": toolkit} if toolkit and not os.environ.get("CUDA_HOME") else {}
    start = time.perf_counter()
    with mock.patch.dict(os.environ, env) if env else contextlib.nullcontext():
        results = [r.to_dict() for r in run_sweep(specs, arches)]
    flashinfer_version, torch_version = installed_versions()
    header = {
        "flashinfer": flashinfer_version, "torch": torch_version, "arches": ", ".join(arches),
        "device": "simulated (CPU; hardware queries answered per arch)", "CUDA_HOME": toolkit or "unset",
        "entry points": str(len(specs)), "wall_s": f"{time.perf_counter() - start:.1f}",
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sweep.json").write_text(json.dumps({"schema": report.SCHEMA, "header": header, "results": results}, indent=1))
    text = report.render(results, header)
    (args.out / "sweep.md").write_text(text)
    print(text)
    return 0
