"""pcgkit triage on its labelled corpus: confusion matrix, accuracy, false known-bug calls, and speed.

    PYTHONPATH=. python benchmarks/bench_triage.py [--mb 10]

Prints the confusion matrix over the real logs (public threads + the H200 device runs) and,
separately, over the kit's own logs; then mode and piecewise agreement; then the time to triage
a generated log of --mb megabytes (real corpus logs repeated, with the known-bug paste at the end).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pcgkit.commands.triage import triage_text
from pcgkit.triage.advice import load_data
from pcgkit.triage.corpus import false_known_bug, load_corpus, render_confusion

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "triage_logs"


def big_log(megabytes: float) -> str:
    """Healthy and failing real logs repeated to the size asked, the known-bug paste last."""
    filler = "".join((CORPUS / name).read_text() for name in (
        "30_h200_sglang0512_control_bf16_healthy.log", "24_sglang11830_no_pcg_uvicorn_running.log",
        "25_sglang20758_musa_pcg_begin_compiling.log"))
    target = int(megabytes * 1024 * 1024)
    return filler * (target // len(filler) + 1) + (CORPUS / "04_dgxarley_glm47_spark_posix_stat.log").read_text()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=10.0)
    args = parser.parse_args()
    scored = load_corpus(CORPUS)
    for title, subset in (("real logs (public + device)", [s for s in scored if s.origin != "kit"]),
                          ("kit's own logs", [s for s in scored if s.origin == "kit"])):
        right = sum(s.label == str(s.got.kind) for s in subset)
        print(f"== {title}: {len(subset)} logs, {sum(s.label != 'known-bug' for s in subset)} not this bug")
        print(render_confusion(subset))
        print(f"diagnosis accuracy: {right}/{len(subset)} = {right / len(subset):.0%}")
        modes = [s for s in subset if s.label == "known-bug"]
        mode_right = sum((s.got.mode or "") == s.mode for s in modes if str(s.got.kind) == "known-bug")
        print(f"mode right on known-bug logs: {mode_right}/{len(modes)}")
        pw = sum(str(s.got.piecewise) == s.piecewise for s in subset)
        print(f"piecewise state right: {pw}/{len(subset)}")
        for s in subset:
            if s.label != str(s.got.kind) or (s.label == "known-bug" and (s.got.mode or "") != s.mode):
                print(f"  miss: {s.file}: label {s.label} {s.mode}, triage {s.got.kind} {s.got.mode} ({s.got.summary[:90]})")
        wrong = false_known_bug(subset)
        print(f"known-bug given to a log that does not show this bug: {len(wrong)}" + "".join(f"\n  {s.file}" for s in wrong))
        print()
    data = load_data()
    text = big_log(args.mb)
    start = time.perf_counter()
    result = triage_text(text, "generated", data)
    elapsed = time.perf_counter() - start
    print(f"generated log: {len(text) / 1024 / 1024:.1f} MB, {result.lines} lines: {result.diagnosis.kind} "
          f"{result.diagnosis.mode} in {elapsed:.2f} s")
    return 1 if false_known_bug(scored) else 0


if __name__ == "__main__":
    raise SystemExit(main())
