"""Measurement: how large one hosted CI job's uv cache is, before and after `uv cache prune --ci`.

What the generated workflow saves per cache key (pcgkit.ci.github): uv's cache after one cell's
install. One cell is installed by the kit's own path (`pcgkit matrix --cell ID`, venv backend) into a
FRESH cache folder (UV_CACHE_DIR), so the cache holds exactly what that cell downloaded; its size is
measured raw (bytes on disk, hard links once) and as actions/cache stores it (`tar --posix` piped
through `zstd -T0 --long=30`, actions/cache's own compression), then again after uv's documented CI
practice, `uv cache prune --ci` (it keeps only wheels built from source). The result is appended to
fixtures/measurements/uv-cache-size.json, which `pcgkit ci github` reads for its 10 GB budget check.

    .venv/bin/python benchmarks/uv_cache_size.py --matrix M.toml --cell ID [--torch-build cpu]
        [--torch-cpu-index DIR] [--label NAME] [--machine TEXT] [--out fixtures/measurements/uv-cache-size.json]

Heavy: the CUDA build downloads several GB from PyPI. The folder is removed afterwards.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from pcgkit.matrix.cells import TORCH_BUILD_CUDA, TORCH_BUILDS
from pcgkit.util import proc

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "measurements" / "uv-cache-size.json"
SCHEMA = "pcgkit.uv-cache-size/1"


def raw_bytes(folder: Path) -> int:
    """Bytes on disk under folder, each hard-linked file once (uv links its cache into environments)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            stat = os.lstat(os.path.join(dirpath, name))
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_size
    return total


def archived_bytes(folder: Path) -> int:
    """The folder's size as actions/cache uploads it: a POSIX tar through zstd --long=30."""
    done = proc.run(["sh", "-c", f"tar --posix -cf - -C {shlex.quote(str(folder))} . | zstd -T0 --long=30 -q -c | wc -c"],
                    timeout=3600, echo=False)
    if not done.ok:
        raise SystemExit(f"tar | zstd failed: {done.describe_failure()}: {done.output_tail[-500:]}")
    return int(done.output_tail.strip().splitlines()[-1])


def sizes(folder: Path) -> dict[str, int]:
    return {"raw_bytes": raw_bytes(folder), "archived_bytes": archived_bytes(folder)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrix", required=True, help="matrix file holding the cell")
    parser.add_argument("--cell", required=True)
    parser.add_argument("--torch-build", choices=TORCH_BUILDS, default=TORCH_BUILD_CUDA)
    parser.add_argument("--torch-cpu-index", help="passed to pcgkit matrix (a folder holding the CPU wheel offline)")
    parser.add_argument("--label", help="what this measurement stands for (default: cell/build)")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--machine", default="this machine", help="how the record names the machine, e.g. 'the shared dev machine'")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="pcgkit-uv-cache-"))
    cache = work / "uv-cache"
    env = {**{k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")},
           "UV_CACHE_DIR": str(cache), "UV_PYTHON_DOWNLOADS": "never"}
    matrix = [sys.executable, "-m", "pcgkit.cli", "matrix", "--matrix", args.matrix, "--cell", args.cell,
              "--envs", str(work / "envs"), "--reports", str(work / "reports"), "--jobs", "1", "-m", "cpu_sim",
              "--torch-build", args.torch_build]
    if args.torch_cpu_index:
        matrix += ["--torch-cpu-index", args.torch_cpu_index]
    try:
        ran = proc.run(matrix, cwd=ROOT, env=env, timeout=3600)
        cell = json.loads((work / "reports" / "matrix" / "cells" / args.cell / "cell.json").read_text())
        if cell.get("status") != "ran" and cell.get("stage") == "install":
            raise SystemExit(f"the cell did not install ({cell.get('reason')}); nothing recorded")
        before = sizes(cache)
        pruned = proc.run([*proc.uv_command(), "cache", "prune", "--ci"], env=env, timeout=600)
        if not pruned.ok:
            raise SystemExit(f"uv cache prune --ci failed: {pruned.describe_failure()}")
        after = sizes(cache)
        uv_version = proc.run([*proc.uv_command(), "--version"], env=env, timeout=60, echo=False).output_tail.strip()
        record: dict = {
            "label": args.label or f"{args.cell} ({args.torch_build} torch)",
            "cell": args.cell, "torch_build": args.torch_build,
            "torch": cell.get("versions", {}).get("torch"), "python": cell.get("cell", {}).get("python"),
            "distributions": len(cell.get("installed") or {}),
            "install_s": round(ran.duration_s, 1),
            # what the cell answered with this build (the cases ran after the install): the builds compared
            "status": cell.get("status"), "reason": cell.get("reason") or "",
            "verdicts": {r["mode"]: r["verdict"] for r in cell.get("results") or ()},
            "before_prune": before, "after_prune_ci": after,
            "command": "UV_CACHE_DIR=<fresh folder> python " + " ".join(
                shlex.quote(a.replace(str(work), "<work>")) for a in matrix[1:]) + " && uv cache prune --ci",
            "date": datetime.date.today().isoformat(),
            "machine": f"{args.machine} ({platform.platform()}, {os.cpu_count()} cores), {uv_version}",
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = Path(args.out)
    data = json.loads(out.read_text()) if out.is_file() else {"schema": SCHEMA, "measurements": []}
    data["measurements"] = [m for m in data["measurements"] if m["label"] != record["label"]] + [record]
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
