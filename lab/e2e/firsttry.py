"""Runs ON the GPU machine (issue 48): the advice's first try for SGLang 0.5.11-0.5.13 on the crashing NVFP4 server,
on the hybrid target (pcgkit.e2e.hybrid: the real GPU, architecture queries of SGLang, FlashInfer and dynamo
answered as SM120). One launch per try, through the e2e case's own launcher and checkpoint:

  default    piecewise on as the e2e case launches it (the crash: the control)
  breakable  the same + the release's breakable flag, read from its parser (0.5.11: --enable-breakable-cuda-graph)
  off        piecewise turned off (0.5.11: --disable-piecewise-cuda-graph; --enforce-... would override it)

  python3 -m lab.e2e.firsttry run --site /tmp/site-0.5.11 --try breakable --out DIR
  python3 -m lab.e2e.firsttry table DIR [DIR ...]          (anywhere: the Markdown table of the records)
  python3 -m lab.e2e.firsttry fixture DIR [DIR ...] --out fixtures/measurements/first-try.json
                                                           (anywhere: the records the advice reads, with their source)

Each run writes DIR/firsttry-<try>.json (schema pcgkit.first-try/1), its server log and the shim's evidence.
The reading (pure: `reading`) says whether the run got past the point of the crash (no dynamo failure, and the
model's forward ran: capture began, a kernel was launched, or it served) and where it stopped next. A hybrid run
never says `fixed`: an SM90 GPU cannot run the sm_120 kernels FlashInfer builds for the answered arch, so a
stop there is the hybrid's limit, named as such.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Mapping

from pcgkit.e2e.logclass import Classification
from pcgkit.values.logread import read_log
from pcgkit.values.verdict import Verdict

SCHEMA = "pcgkit.first-try/1"
TRIES = ("default", "breakable", "off")


def hybrid_label(device_name: str, capability: str) -> str:
    """The label every hybrid row carries. Pure."""
    return f"hybrid: real {device_name} (SM{capability.replace('.', '')}) with architecture queries answered as SM120"


def reading(log: str, c: Classification, served: bool, hybrid_problem: str | None) -> dict:
    """What one first-try launch showed, from its log and classification. Pure.

    crash_reproduced: the known dynamo failure (the e2e case's `reproduced`);
    past_crash_point: no dynamo failure and the model's forward ran (capture began, a kernel built for the
    answered arch was launched, or the server served); stopped_next: the first failure the log announces."""
    from pcgkit.e2e.hybrid import wrong_arch_kernel

    parsed = read_log(log)
    failure = parsed.failure
    dynamo = bool(failure and failure.signature and (failure.signature.exception_type.startswith("torch._dynamo.")
                                                      or failure.signature.exception_type.endswith("Unsupported")))
    wrong_arch = wrong_arch_kernel(log)
    crash = c.verdict is Verdict.REPRODUCED
    forward_ran = c.capture_began or bool(wrong_arch) or served
    past = not crash and not dynamo and forward_ran and hybrid_problem is None
    stopped = None
    if failure is not None:
        inner = failure.signature.innermost_library_frame if failure.signature else None
        stopped = {"exception": failure.exception_type, "head": failure.head[:240], "line": failure.line.number,
                   "innermost_library_frame": str(inner) if inner else None}
    if hybrid_problem:
        outcome = f"not judged: the hybrid did not take ({hybrid_problem})"
    elif crash:
        outcome = "stopped at the crash: the known dynamo failure in piecewise capture"
    elif past and wrong_arch:
        outcome = (f"got past the point of the crash (no dynamo failure); stopped next launching a kernel built for "
                   f"sm_120 that this SM90 GPU cannot run ({wrong_arch}): the hybrid's limit, not a result about SM120")
    elif past and served:
        outcome = "got past the point of the crash and served on the hybrid (not `fixed`: no SM120 GPU ran it)"
    elif past:
        outcome = f"got past the point of the crash; stopped next at {stopped['exception'] if stopped else 'no announced failure'}"
    elif dynamo:
        outcome = f"stopped at a dynamo failure other than the known one: {failure.head[:160] if failure else ''}"
    else:
        outcome = f"did not reach the model's forward: {c.reason[:200]}"
    return {"crash_reproduced": crash, "dynamo_failure": dynamo, "capture_began": c.capture_began,
            "capture_ended": c.capture_ended, "wrong_arch_kernel": wrong_arch, "served": served,
            "past_crash_point": past, "stopped_next": stopped, "outcome": outcome}


def run(site: Path, tried: str, out: Path, ready_timeout_s: float) -> dict:
    """One hybrid launch of the tiny NVFP4 server with the try's flags; the record (written as JSON too)."""
    from lab.e2e.devicerun import _site_env

    os.environ.update(_site_env(site, os.environ))
    sys.path[:0] = [str(site)]
    from lab.sglang_facts import breakable_argv
    from pcgkit.e2e import hybrid
    from pcgkit.e2e.case import broken_install_reason, launch_and_classify, launch_port, plan_for_checkpoint
    from pcgkit.e2e.checkpoint import NVFP4, write_checkpoint
    from pcgkit.harness import hardware
    from pcgkit.harness.casekit import cuda_toolkit_root
    from pcgkit.harness.versions import collect_versions
    from pcgkit.sglang import facts as sglang_facts

    out.mkdir(parents=True, exist_ok=True)
    real = hardware.detect_cuda_devices()[0]
    capability = f"{real.capability[0]}.{real.capability[1]}"
    flags = sglang_facts.piecewise_flags()
    broken = broken_install_reason(flags)
    record: dict = {"schema": SCHEMA, "try": tried, "label": hybrid_label(real.name, capability),
                    "device": hybrid.hybrid_device(real).to_dict(), "versions": collect_versions(), "simulated": False}
    extra: tuple[str, ...] = ()
    if tried == "breakable":
        extra = breakable_argv() or ()
        if not extra:
            broken = broken or f"sglang {flags.sglang} has no breakable CUDA graph in its parser"
    if broken:
        record["not_run"] = broken
        (out / f"firsttry-{tried}.json").write_text(json.dumps(record, indent=1, default=str) + "\n")
        return record
    checkpoint = out / "tiny-nvfp4"
    if not (checkpoint / "config.json").exists():
        write_checkpoint(checkpoint, fmt=NVFP4)
    env = dict(os.environ)
    toolkit = cuda_toolkit_root()
    if toolkit and not env.get("CUDA_HOME"):
        env["CUDA_HOME"] = toolkit
    port, port_evidence = launch_port()
    plan = plan_for_checkpoint(flags, python=sys.executable, fmt=NVFP4, model_path=str(checkpoint), port=port, env=env,
                               target_args=(*hybrid.HYBRID_SM120.server_args, *extra), piecewise=tried != "off")
    log_path = out / f"firsttry-{tried}.log"
    shim_dir = hybrid.write_shim(out / f"firsttry-{tried}.hybrid")
    evidence_dir = shim_dir / "evidence"
    evidence_dir.mkdir(exist_ok=True)
    env = hybrid.server_env(hybrid.HYBRID_SM120, env, shim_dir, evidence_dir)
    started = time.monotonic()
    outcome = launch_and_classify(plan.argv, port=port, log_path=log_path, env=env, ready_timeout_s=ready_timeout_s)
    seen = hybrid.read_evidence(evidence_dir)
    problem = hybrid.took(hybrid.HYBRID_SM120, seen)
    served = bool(outcome.run.generation and outcome.run.generation.ok)
    record.update({
        "launch": list(plan.argv), "piecewise_how": plan.how, "try_args": list(extra), **port_evidence,
        "server": outcome.run.to_dict(), "timings": outcome.timings, "wall_s": round(time.monotonic() - started, 1),
        "case_classification": {"verdict": outcome.classification.verdict.value, "reason": outcome.classification.reason},
        "hybrid": {**hybrid.plan_evidence(hybrid.HYBRID_SM120), "seen": seen.to_dict(), "took": problem is None},
        "reading": reading(log_path.read_text(errors="replace"), outcome.classification, served, problem),
    })
    (out / f"firsttry-{tried}.json").write_text(json.dumps(record, indent=1, default=str) + "\n")
    print(f"pcgkit: first try {tried}: {record['reading']['outcome']}", flush=True)
    return record


def table(records: list[Mapping]) -> str:
    """The Markdown rows of first-try records. Pure."""
    lines = ["| SGLang | try | flags the try adds | past the point of the crash? | where it stopped next | label |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in records:
        sglang = r.get("versions", {}).get("sglang")
        if r.get("not_run"):
            lines.append(f"| {sglang} | {r['try']} | - | not run | {r['not_run']} | {r['label']} |")
            continue
        read = r["reading"]
        past = "**yes**" if read["past_crash_point"] else ("no (the crash)" if read["crash_reproduced"] else "no")
        flags = " ".join(r.get("try_args") or []) or r.get("piecewise_how", "")
        lines.append(f"| {sglang} | {r['try']} | `{flags}` | {past} | {read['outcome']} | {r['label']} |")
    return "\n".join(lines)


FIXTURE_SCHEMA = "pcgkit.first-try-results/1"  # what pcgkit.advice.load reads: one row per launch, its sample named


def fixture(records: list[Mapping], source: str) -> dict:
    """The committed first-try results (fixtures/measurements/first-try.json) from the records of one device run: per
    launch the release, the try, the flags it added, whether it got past the point of the crash, where it stopped
    next and the hybrid's label; the date is the run's (the records' device clock), the source the sample. Pure."""
    runs = []
    for r in records:
        read = r.get("reading") or {}
        runs.append({"sglang": r.get("versions", {}).get("sglang"), "try": r["try"], "label": r["label"],
                     "flags": list(r.get("try_args") or []),
                     "piecewise": r.get("piecewise_how"), "not_run": r.get("not_run"),
                     "past_crash_point": bool(read.get("past_crash_point")),
                     "crash_reproduced": bool(read.get("crash_reproduced")),
                     "wrong_arch_kernel": read.get("wrong_arch_kernel"), "outcome": read.get("outcome"),
                     "stopped_next": (read.get("stopped_next") or {}).get("head")})
    devices = {r["device"]["name"] for r in records if r.get("device")}
    if len(devices) != 1:
        raise ValueError(f"the records come from {sorted(devices) or 'no device'}: one device run per fixture")
    return {"schema": FIXTURE_SCHEMA, "device": devices.pop(), "simulated": False, "source": source,
            "how": "python3 -m lab.e2e.firsttry run (lab/e2e/firsttry.py) on the lent GPU, hybrid: the real GPU with "
                   "SGLang/FlashInfer/dynamo architecture queries answered as SM120", "runs": runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m lab.e2e.firsttry")
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run")
    p_run.add_argument("--site", required=True)
    p_run.add_argument("--try", dest="tried", required=True, choices=TRIES)
    p_run.add_argument("--out", required=True)
    p_run.add_argument("--ready-timeout", type=float, default=240.0)
    p_table = sub.add_parser("table")
    p_table.add_argument("dirs", nargs="+")
    p_fixture = sub.add_parser("fixture")
    p_fixture.add_argument("dirs", nargs="+")
    p_fixture.add_argument("--out", required=True)
    p_fixture.add_argument("--date", required=True, help="the run's date (ISO), as the device clock gave it")
    args = parser.parse_args(argv)
    if args.command == "fixture":
        records = [json.loads(p.read_text()) for d in args.dirs for p in sorted(Path(d).glob("firsttry-*.json"))]
        doc = {**fixture(records, ", ".join(args.dirs)), "date": args.date}
        Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
        print(table(records))
        return 0
    if args.command == "table":
        records = [json.loads(p.read_text()) for d in args.dirs for p in sorted(Path(d).glob("firsttry-*.json"))]
        print(table(records))
        return 0
    run(Path(args.site), args.tried, Path(args.out), args.ready_timeout)
    return 0


if __name__ == "__main__":
    from pcgkit.util import signals

    with signals.stop_policy():
        raise SystemExit(main())
