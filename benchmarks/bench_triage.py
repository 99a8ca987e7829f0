"""pcgkit triage on logs it was tuned to, logs it was not, and both damaged: recall, false known-bug, speed.

    PYTHONPATH=. python benchmarks/bench_triage.py [--mb 10]

Prints, separately:
- the tuning corpus (tests/data/triage_logs/: real logs public + device; the kit's own apart): confusion
  matrix, accuracy, mode and piecewise agreement, known-bug recall and false known-bug rate;
- the HELD-OUT set (tests/data/triage_heldout/: real logs collected after the rules, never tuned to);
- the degraded sets (lab.triage.degrade: every real log under every degradation): recall over the
  degraded positives that still name the family, false known-bug over degraded negatives, per degradation;
- the time to triage two generated logs of --mb megabytes each (issue 36: linear whatever the content):
  "sparse", healthy INFO-level server logs repeated with the known-bug paste last, and "dense", real tracebacks
  printed over and over (a multi-rank crash looks like this); CPU seconds (median of --runs), wall, the ratio
  dense/sparse, and the load average (this machine is shared: CPU time is the fair figure). Targets: each under
  1 s CPU, dense within 2x of sparse.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import defaultdict
from pathlib import Path

from lab.triage.corpus import (
    degraded_set,
    false_known_bug,
    load_texts,
    rates_of_degraded,
    rates_of_scored,
    render_confusion,
    score,
)
from pcgkit.commands.triage import catalog_view, triage_text
from pcgkit.triage.advice import load_data
from pcgkit.triage.steps import load_source

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
CORPUS, HELDOUT = DATA / "triage_logs", DATA / "triage_heldout"


def big_log(megabytes: float) -> str:
    """Healthy real server logs repeated to the size asked, the known-bug paste last (the sparse log)."""
    filler = "".join((CORPUS / name).read_text() for name in (
        "30_h200_sglang0512_control_bf16_healthy.log", "24_sglang11830_no_pcg_uvicorn_running.log",
        "25_sglang20758_musa_pcg_begin_compiling.log"))
    target = int(megabytes * 1024 * 1024)
    return filler * (target // len(filler) + 1) + (CORPUS / "04_dgxarley_glm47_spark_posix_stat.log").read_text()


def dense_log(megabytes: float) -> str:
    """Real tracebacks (this bug's, a piecewise capture failure, the public issue's) printed over and over to the
    size asked: every line is a frame, a source line or a message (the dense log)."""
    block = "".join((CORPUS / name).read_text() for name in (
        "04_dgxarley_glm47_spark_posix_stat.log", "05_flashinfer2999_fp4_quantize_fullgraph_skipped.log",
        "11_sglang23351_pcg_nsa_tensor_match_failed.log", "32_h200_sglang0511_hybrid_nvfp4_mode5_capture_crash.log"))
    target = int(megabytes * 1024 * 1024)
    return block * (target // len(block) + 1)


def _timed(text: str, name: str, data, view, runs: int) -> tuple[float, float, object]:
    """(median CPU s, median wall s, the triage) over `runs` runs."""
    cpus, walls, result = [], [], None
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        result = triage_text(text, name, data, view)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(cpus), statistics.median(walls), result


def _report(title: str, scored: list) -> None:
    right = sum(s.label == str(s.got.kind) for s in scored)
    print(f"== {title}: {len(scored)} logs, {sum(s.label != 'known-bug' for s in scored)} not this bug")
    print(render_confusion(scored))
    print(f"diagnosis accuracy: {right}/{len(scored)} = {right / len(scored):.0%}")
    modes = [s for s in scored if s.label == "known-bug"]
    mode_right = sum((s.got.mode or "") == s.mode for s in modes if str(s.got.kind) == "known-bug")
    print(f"mode right on known-bug logs: {mode_right}/{len(modes)}")
    print(f"piecewise state right: {sum(str(s.got.piecewise) == s.piecewise for s in scored)}/{len(scored)}")
    print(rates_of_scored(scored).line())
    for s in scored:
        if s.label != str(s.got.kind) or (s.label == "known-bug" and (s.got.mode or "") != s.mode):
            print(f"  miss: {s.file}: label {s.label} {s.mode}, triage {s.got.kind} {s.got.mode} ({s.got.summary[:90]})")
    print()


def _report_degraded(title: str, degraded: list) -> None:
    print(f"== degraded {title}: {len(degraded)} texts ({rates_of_degraded(degraded).line()})")
    by_name: dict[str, list] = defaultdict(list)
    for d in degraded:
        by_name[d.degradation].append(d)
    for name, items in sorted(by_name.items()):
        print(f"  {name:20} {rates_of_degraded(items).line()}")
    for d in degraded:
        if d.required and str(d.got.kind) != "known-bug":
            print(f"  miss: {d.file} {d.degradation}: {d.got.kind} ({d.got.summary[:80]})")
        if d.label != "known-bug" and str(d.got.kind) == "known-bug":
            print(f"  FALSE known-bug: {d.file} {d.degradation}")
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per generated log (the median is printed)")
    args = parser.parse_args()
    view = catalog_view()
    corpus, heldout = load_texts(CORPUS), load_texts(HELDOUT)
    source = load_source()
    scored = score(corpus, view.modes, source)
    held = score(heldout, view.modes, source)
    _report("tuning corpus, real logs (public + device)", [s for s in scored if s.origin != "kit"])
    _report("tuning corpus, the kit's own logs", [s for s in scored if s.origin == "kit"])
    _report("HELD-OUT real logs (not tuned to)", held)
    _report_degraded("tuning corpus real logs", degraded_set(corpus, view.modes, source))
    _report_degraded("held-out logs", degraded_set(heldout, view.modes, source))
    data = load_data()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    figures = {}
    for name, text in (("sparse", big_log(args.mb)), ("dense", dense_log(args.mb))):
        cpu, wall, result = _timed(text, name, data, view, args.runs)
        figures[name] = cpu
        print(f"{name} log: {len(text) / 1024 / 1024:.1f} MB, {result.lines} lines: {result.diagnosis.kind} "
              f"{result.diagnosis.mode} in {cpu:.2f} s CPU, {wall:.2f} s wall (median of {args.runs})")
    print(f"dense / sparse CPU: {figures['dense'] / figures['sparse']:.2f}x (target <= 2x; each < 1 s CPU) "
          f"(load average {load:.1f} on {os.cpu_count()} cores)")
    return 1 if false_known_bug(scored) or false_known_bug(held) else 0


if __name__ == "__main__":
    raise SystemExit(main())
