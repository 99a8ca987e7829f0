"""`bin/pcgkit lab argaudit-gpu`: the argument audit of `torch.ops.flashinfer.fp4_quantize` against the real
compiled kernel, one FlashInfer release per process, on this machine's GPU (issue 48).

The simulated audit (pcgkit.fp4.argaudit, any machine) runs FlashInfer's own Python over a recording kernel that
computes nothing. Here nothing is simulated: each release builds and loads its own module for the real GPU, and
every call to it is recorded on its way in and passed through (recording_real_modules, below), so
a row says what reached the compiled kernel itself. Output bytes are never read (below SM100 the kernel writes
nothing). Each row is set beside the matrix's simulated SM120 verdict of the fix for the same FlashInfer
(fixtures/matrix_snapshot.json, the FlashInfer-only cell `fi-<version>`): they agree, disagree, or cannot be
compared here (the release refuses this GPU before its kernel, or the run failed).

    bin/pcgkit lab argaudit-gpu --site 0.7.1=/tmp/fi/fi-0.7.1 [--site V=DIR ...] [--also DIR] --out DIR
On the lent GPU, without the kit's environment: `python3 -m lab argaudit-gpu ...` (same arguments).
Each --site is a folder holding that FlashInfer release unpacked (a wheel's contents); --also folders follow it
on PYTHONPATH (a newer apache-tvm-ffi), then the kit. Writes DIR/fi-<version>.json (one record each),
DIR/argaudit-gpu.json (schema pcgkit.argaudit-gpu/1) and DIR/argaudit-gpu.md.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Mapping
from unittest import mock

from pcgkit import resources
from pcgkit.errors import UsageError
from pcgkit.fp4.argaudit import ArgumentAudit
from pcgkit.fp4.fake_shapes import KernelCall, call_site_argument_names
from pcgkit.util import proc
from pcgkit.util.ranges import version_order

ENTRY = "torch.ops.flashinfer.fp4_quantize"
SCHEMA = "pcgkit.argaudit-gpu/1"
MATRIX_MODE = "fix-upstream-op"  # the matrix's verdict for a caller that calls ENTRY
CHILD = "lab.commands.argaudit_gpu"
# status -> the matrix verdict it agrees with (the fix is judged by this audit on the simulated target)
AGREES_WITH = {"passed": "fixed", "fails": "traces-but-fails", "absent": "not-applicable"}


class PassThroughKernelModule:
    """Wraps a real JIT-built module: each kernel call is recorded as the recording module records it, then
    handed to the real kernel; a refusal of the real kernel is recorded too and raised on (pcgkit.fp4.argaudit
    on a GPU)."""

    def __init__(self, real: Any, spec_name: str, log: list[KernelCall]):
        self._real, self._spec_name, self._log = real, spec_name, log

    def __getattr__(self, name: str):
        target = getattr(self._real, name)
        if name.startswith("__") or not callable(target):
            return target

        def recorded_kernel(*args, **kwargs):
            names = call_site_argument_names(sys._getframe(1), name, len(args))
            try:
                result = target(*args, **kwargs)
            except Exception as exc:  # the kernel's own check: recorded, then the caller sees it as before
                self._log.append(KernelCall(f"{self._spec_name}.{name}", args, dict(kwargs), names,
                                            f"{type(exc).__name__}: {str(exc)[:200]}"))
                raise
            self._log.append(KernelCall(f"{self._spec_name}.{name}", args, dict(kwargs), names))
            return result

        return recorded_kernel


@contextlib.contextmanager
def recording_real_modules(log: list[KernelCall]) -> Iterator[None]:
    """Inside the block, every JitSpec.build_and_load builds and loads the real module (nvcc, on the GPU's
    arch) and returns it wrapped in a PassThroughKernelModule, so each kernel call lands in `log`."""
    from flashinfer.jit import core

    from pcgkit.fp4.fake_shapes import _fp4_quantization_module

    original = core.JitSpec.build_and_load

    def build_and_load(spec, *args, **kwargs):
        return PassThroughKernelModule(original(spec, *args, **kwargs), getattr(spec, "name", "?"), log)

    loader = _fp4_quantization_module().get_fp4_quantization_module
    loader.cache_clear()
    try:
        with mock.patch.object(core.JitSpec, "build_and_load", build_and_load):
            yield
    finally:
        loader.cache_clear()


def gpu_label(device_name: str, capability: tuple[int, int]) -> str:
    """The audit's label on a real GPU. Pure."""
    return (f"argument audit on a real GPU: {device_name} (SM{capability[0]}{capability[1]}, CC {capability[0]}."
            f"{capability[1]}), FlashInfer's own Python over its compiled kernel, each kernel call recorded and passed "
            "through; each parameter changed alone, checked at every Python call boundary and the kernel boundary")


def audit_flashinfer_entry_on_gpu(entry: Any, name: str) -> ArgumentAudit:
    """`audit` on the real GPU: nothing simulated, FlashInfer builds and loads its real module for this GPU and
    every call to it is recorded on its way in (recording_real_modules). Values written by
    the kernel are not read: below SM100 the kernel writes nothing."""
    import torch

    from pcgkit.fp4.argaudit import audit

    log: list[KernelCall] = []
    label = gpu_label(torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))
    with recording_real_modules(log):
        return audit(entry, name, log, device="cuda", label=label)


def child_record() -> dict:
    """In a process whose PYTHONPATH starts with one FlashInfer release: that release's audit on this GPU."""
    import flashinfer
    import torch

    started = time.monotonic()
    record: dict = {"flashinfer": flashinfer.__version__, "torch": torch.__version__, "torch_cuda": torch.version.cuda,
                    "entry": ENTRY}
    if not torch.cuda.is_available():
        return {**record, "error": "no CUDA GPU visible: the audit against real kernels needs one"}
    capability = torch.cuda.get_device_capability(0)
    record.update(device=torch.cuda.get_device_name(0), capability=f"{capability[0]}.{capability[1]}", simulated=False)
    try:
        entry = torch.ops.flashinfer.fp4_quantize
        entry.default  # noqa: B018  (an OpOverloadPacket resolves lazily: a missing op raises here)
    except (AttributeError, RuntimeError):
        return {**record, "absent": f"flashinfer {flashinfer.__version__} registers no {ENTRY}"}
    result = audit_flashinfer_entry_on_gpu(entry, ENTRY)
    return {**record, "audit": result.to_dict(), "seconds": round(time.monotonic() - started, 1)}


def status_of(record: Mapping) -> tuple[str, str]:
    """(status, one line) of one release's record. Pure.
    passed: every argument reaches its namesake down to the kernel; fails: findings; refused: the call raised before
    any kernel call (the release refuses this GPU); absent: no such op; error: the run itself failed."""
    if record.get("error"):
        return "error", record["error"]
    if record.get("absent"):
        return "absent", record["absent"]
    audit = record["audit"]
    reached = any(b.startswith("kernel ") for b in audit["boundaries"])
    if audit["passed"]:
        return "passed", "every argument reaches the parameter of the same name at every boundary down to the compiled kernel"
    if not reached:
        first = audit["findings"][0] if audit["findings"] else "the call never reached a kernel"
        return "refused", f"never reached the compiled kernel on this GPU: {first}"
    return "fails", "; ".join(audit["findings"][:3]) + (f" (+{len(audit['findings']) - 3} more)" if len(audit["findings"]) > 3 else "")


def matrix_verdicts(snapshot: Mapping) -> dict[str, str]:
    """FlashInfer version -> the matrix's simulated verdict of MATRIX_MODE in its FlashInfer-only cell. Pure."""
    return {c["flashinfer-python"]: c["verdicts"][MATRIX_MODE] for c in snapshot["cells"]
            if c.get("id") == f"fi-{c.get('flashinfer-python')}" and MATRIX_MODE in c.get("verdicts", {})}


def agreement(status: str, verdict: str | None) -> str:
    """How a GPU row stands against the matrix's simulated row. Pure."""
    if verdict is None:
        return "no matrix row for this release"
    if status not in AGREES_WITH:
        return f"not comparable on this GPU (the matrix's simulated SM120 verdict {verdict} stands)"
    return "agrees" if AGREES_WITH[status] == verdict else f"disagrees (matrix: {verdict})"


def _plain(values: Mapping) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


def document(records: list[dict], snapshot: Mapping, date: str) -> dict:
    """The rows, each labelled with the real device, beside the matrix. Pure."""
    verdicts = matrix_verdicts(snapshot)
    rows = []
    for record in sorted(records, key=lambda r: version_order(r.get("flashinfer", ""))):
        status, line = status_of(record)
        audit = record.get("audit") or {}
        device = (f"{record['device']} (SM{record['capability'].replace('.', '')}, CC {record['capability']}), real GPU"
                  if record.get("device") else "no GPU")
        rows.append({
            "flashinfer": record.get("flashinfer"), "entry": ENTRY, "device": device, "simulated": False,
            "status": status, "summary": line, "findings": audit.get("findings", []),
            "kernel_refusals": audit.get("kernel_refusals", []),
            "kernel_args": [{"call": call, "values": values} for call, values in audit.get("kernel_args", [])],
            "boundaries": audit.get("boundaries", []), "label": audit.get("label"), "seconds": record.get("seconds"),
            "matrix": {"cell": f"fi-{record.get('flashinfer')}", "mode": MATRIX_MODE,
                       "verdict": verdicts.get(record.get("flashinfer", "")), "simulated": True},
            "against_matrix": agreement(status, verdicts.get(record.get("flashinfer", ""))),
            "torch": record.get("torch"),
        })
    return {"schema": SCHEMA, "date": date, "entry": ENTRY, "simulated": False, "rows": rows,
            "how": "bin/pcgkit lab argaudit-gpu (lab/commands/argaudit_gpu.py): each release in its own process, "
                   "its real module built for this GPU, every kernel call recorded and passed through"}


def render(doc: Mapping) -> str:
    lines = [f"Argument audit of `{doc['entry']}` against the real kernel ({doc['date']}; not simulated)", "",
             "| FlashInfer | device | status | what reached the kernel | kernel refusals | matrix (simulated SM120) | against the matrix |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in doc["rows"]:
        seen = "<br>".join(f"{a['call']}: {_plain(a['values'])}" for a in row["kernel_args"]) or "-"
        lines.append(f"| {row['flashinfer']} | {row['device']} | **{row['status']}**: {row['summary']} | {seen} | "
                     f"{len(row['kernel_refusals'])} | {row['matrix']['verdict'] or '-'} | {row['against_matrix']} |")
    return "\n".join(lines)


def parse_sites(values: list[str]) -> dict[str, Path]:
    """--site V=DIR values -> {V: DIR}. Pure (no file is touched)."""
    sites: dict[str, Path] = {}
    for value in values:
        version, sep, folder = value.partition("=")
        if not sep or not version or not folder:
            raise UsageError(f"--site takes VERSION=FOLDER, not {value!r}")
        sites[version] = Path(folder)
    return sites


def _run_one(version: str, site: Path, also: list[Path], out: Path, timeout_s: float) -> dict:
    record_path = out / f"fi-{version}.json"
    path = [str(site), *map(str, also), str(resources.workspace_root()), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "PYTHONUNBUFFERED": "1"}
    completed = proc.run([sys.executable, "-m", CHILD, "--child", str(record_path)], env=env, timeout=timeout_s,
                         log_path=out / f"fi-{version}.log", echo=False)
    if record_path.exists():
        record = json.loads(record_path.read_text())
    else:
        record = {"error": f"the audit process failed ({completed.describe_failure()}): {completed.output_tail[-300:]}"}
    record.setdefault("flashinfer", version)
    if record.get("flashinfer") != version:
        record["error"] = f"--site {version} imported flashinfer {record['flashinfer']}: the folder holds another release"
    return record


def _argaudit_gpu(args: argparse.Namespace) -> int:
    import datetime

    sites = parse_sites(args.site)
    missing = [str(p) for p in sites.values() if not (p / "flashinfer" / "__init__.py").exists()]
    if missing:
        raise UsageError(f"no flashinfer package in {', '.join(missing)} (each --site is an unpacked FlashInfer release)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    also = [Path(p) for p in args.also]
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        records = list(pool.map(lambda item: _run_one(item[0], item[1], also, out, args.timeout), sites.items()))
    snapshot = json.loads((resources.fixtures_dir() / "matrix_snapshot.json").read_text())
    doc = document(records, snapshot, datetime.date.today().isoformat())
    (out / "argaudit-gpu.json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
    (out / "argaudit-gpu.md").write_text(render(doc) + "\n")
    print(render(doc))
    return 0 if all(r["status"] != "error" for r in doc["rows"]) else 1


def register(subparsers) -> None:
    cmd = subparsers.add_parser("argaudit-gpu", help="the argument audit of FlashInfer's fp4_quantize op against its real kernel, on this GPU",
                                description="Audit torch.ops.flashinfer.fp4_quantize's arguments against its real compiled kernel, one FlashInfer release per process, on this GPU.",
                                epilog="example:\n  %(prog)s --site 0.7.1=/tmp/fi/fi-0.7.1 --also /tmp/fi/tvm --out /tmp/argaudit")
    cmd.add_argument("--site", action="append", required=True, help="VERSION=FOLDER: an unpacked FlashInfer release (repeat)")
    cmd.add_argument("--also", action="append", default=[], help="a folder put after each site on PYTHONPATH (repeat)")
    cmd.add_argument("--out", required=True)
    cmd.add_argument("--jobs", type=int, default=4, help="releases audited at once (each JIT-builds its module)")
    cmd.add_argument("--timeout", type=float, default=400.0, help="seconds per release")
    cmd.set_defaults(func=_argaudit_gpu)


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    Path(sys.argv[2]).write_text(json.dumps(child_record(), indent=1, default=str) + "\n")
