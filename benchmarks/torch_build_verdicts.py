"""Measurement: does the CPU build of torch give the simulated cases the same verdicts as the CUDA build?

For each FlashInfer version given, one test-made cell (that flashinfer-python, one torch version, one
Python) runs twice through the kit's own path, `pcgkit matrix -m cpu_sim`: once with the locked CUDA
build of torch (`--torch-build cuda`) and once with its CPU build (`--torch-build cpu`), on this machine
(no GPU: simulated SM120 both times). The two cells' status and per-case verdicts are recorded side by
side in fixtures/measurements/torch-build-verdicts.json ("pairs"; other keys of the file are kept), which
docs/ci.md cites for why the generated workflow keeps the CUDA build by default.

    .venv/bin/python benchmarks/torch_build_verdicts.py --flashinfer 0.6.1 0.6.18.post1 \\
        [--torch 2.13.0] [--python 3.11] [--torch-cpu-index /opt/wheels] [--machine TEXT]

The torch/Python pair is whatever CPU wheel is at hand (this machine: 2.13.0, cp311); uv's cache is used
as it is. Each pair takes a few minutes when the wheels are cached.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from packaging.version import Version

from pcgkit.util import proc

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "measurements" / "torch-build-verdicts.json"
SCHEMA = "pcgkit.torch-build-verdicts/1"


def run_build(work: Path, matrix: Path, build: str, cpu_index: str) -> dict:
    """One `pcgkit matrix` run of the matrix's cell with this torch build: the cell's status and verdicts."""
    argv = [sys.executable, "-m", "pcgkit.cli", "matrix", "--matrix", str(matrix), "--envs", str(work / "envs"),
            "--reports", str(work / build), "--jobs", "1", "-m", "cpu_sim", "--torch-build", build]
    if build == "cpu":
        argv += ["--torch-cpu-index", cpu_index]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    proc.run(argv, cwd=ROOT, env=env, timeout=3600)
    cell_json = next((work / build / "matrix" / "cells").glob("*/cell.json"))
    cell = json.loads(cell_json.read_text())
    return {"status": cell.get("status"), "stage": cell.get("stage"), "reason": cell.get("reason") or "",
            "torch": (cell.get("versions") or {}).get("torch"), "torch_cuda": (cell.get("versions") or {}).get("torch_cuda"),
            "verdicts": {r["mode"]: r["verdict"] for r in cell.get("results") or ()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flashinfer", nargs="+", required=True, help="flashinfer-python versions, one pair each")
    parser.add_argument("--torch", default="2.13.0")
    parser.add_argument("--python", default="3.11")
    parser.add_argument("--torch-cpu-index", default="/opt/wheels", help="where the CPU wheel is (uv --find-links)")
    parser.add_argument("--machine", default="this machine")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    out = Path(args.out)
    data = json.loads(out.read_text()) if out.is_file() else {"schema": SCHEMA}
    pairs = [p for p in data.get("pairs", ()) if p["flashinfer-python"] not in args.flashinfer
             or p["torch"] != args.torch or p["python"] != args.python]
    for version in args.flashinfer:
        work = Path(tempfile.mkdtemp(prefix="pcgkit-torch-builds-"))
        try:
            matrix = work / "matrix.toml"
            cell_id = f"fi-{version}-torch{args.torch}-py{args.python}"
            matrix.write_text(f'schema = "pcgkit.matrix/1"\n[[cell]]\nid = "{cell_id}"\npython = "{args.python}"\n'
                              f'flashinfer-python = "{version}"\ntorch = "{args.torch}"\n')
            cuda, cpu = run_build(work, matrix, "cuda", args.torch_cpu_index), run_build(work, matrix, "cpu", args.torch_cpu_index)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        differ = sorted(m for m in cuda["verdicts"].keys() | cpu["verdicts"].keys()
                        if cuda["verdicts"].get(m) != cpu["verdicts"].get(m))
        pairs.append({"flashinfer-python": version, "torch": args.torch, "python": args.python,
                      "same": cuda["status"] == cpu["status"] and not differ, "differ": differ,
                      "cuda": cuda, "cpu": cpu, "date": datetime.date.today().isoformat(), "machine": args.machine,
                      "command": f"python benchmarks/torch_build_verdicts.py --flashinfer {version} --torch {args.torch} "
                                 f"--python {args.python} --torch-cpu-index {args.torch_cpu_index}"})
        print(f"flashinfer {version}: {'same' if pairs[-1]['same'] else 'DIFFERENT'} "
              f"(cuda {cuda['status']}, cpu {cpu['status']}{'; differ: ' + ', '.join(differ) if differ else ''})")
    data["pairs"] = sorted(pairs, key=lambda p: (Version(p["torch"]), Version(p["python"]), Version(p["flashinfer-python"])))
    out.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
