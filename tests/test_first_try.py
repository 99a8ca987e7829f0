"""The first-try reader (lab/e2e/firsttry.py, issue 48) over real server logs of the kit's hybrid runs on the lent
H200 (tests/data/e2e_logs, 2026-12-01): the crash is read as the crash, a run that passed the dynamo trace and then
died launching an sm_120 kernel on SM90 as past the crash point and stopped by the hybrid's limit, never `fixed`."""

from __future__ import annotations

from pathlib import Path

from lab.e2e.firsttry import hybrid_label, reading, table
from pcgkit.e2e.logclass import classify_run
from pcgkit.e2e.server import Readiness, ServerRun

LOGS = Path(__file__).resolve().parent / "data" / "e2e_logs"


def _read(name: str, hybrid_problem: str | None = None) -> dict:
    log = (LOGS / name).read_text(errors="replace")
    run = ServerRun(argv=(), log_path=LOGS / name, readiness=Readiness.DIED, waited_s=50.0, exit_status=-9,
                    generation=None, group_left=())
    return reading(log, classify_run(run, log), served=False, hybrid_problem=hybrid_problem)


def test_the_crash_is_not_past_the_crash_point():
    r = _read("h200_sglang0511_hybrid_nvfp4_mode5_capture_crash.log")
    assert r["crash_reproduced"] and r["dynamo_failure"] and not r["past_crash_point"]
    assert r["outcome"] == "stopped at the crash: the known dynamo failure in piecewise capture"


def test_a_clean_trace_then_an_sm120_kernel_on_sm90_is_past_the_crash_and_the_hybrids_limit():
    r = _read("h200_sglang0512_hybrid_nvfp4_no_kernel_image.log")
    assert r["past_crash_point"] and not r["crash_reproduced"] and r["wrong_arch_kernel"] == "no kernel image is available"
    assert "got past the point of the crash" in r["outcome"] and "the hybrid's limit" in r["outcome"]
    assert "fixed" not in r["outcome"].replace("not `fixed`", "")


def test_a_hybrid_that_did_not_take_is_not_judged():
    r = _read("h200_sglang0512_hybrid_nvfp4_no_kernel_image.log", hybrid_problem="the hybrid shim loaded in no server process")
    assert not r["past_crash_point"] and r["outcome"].startswith("not judged: the hybrid did not take")


def test_rows_carry_the_hybrid_label_and_what_was_not_run():
    label = hybrid_label("NVIDIA H100 80GB HBM3", "9.0")
    assert label == "hybrid: real NVIDIA H100 80GB HBM3 (SM90) with architecture queries answered as SM120"
    past = _read("h200_sglang0512_hybrid_nvfp4_no_kernel_image.log")
    rows = table([
        {"try": "breakable", "label": label, "versions": {"sglang": "0.5.11"}, "try_args": ["--enable-breakable-cuda-graph"],
         "reading": past},
        {"try": "breakable", "label": label, "versions": {"sglang": "0.5.10"}, "not_run": "sglang 0.5.10 has no breakable CUDA graph in its parser"},
    ]).splitlines()
    assert rows[2].startswith("| 0.5.11 | breakable | `--enable-breakable-cuda-graph` | **yes** |") and rows[2].endswith(f"| {label} |")
    assert rows[3] == f"| 0.5.10 | breakable | - | not run | sglang 0.5.10 has no breakable CUDA graph in its parser | {label} |"


def test_the_committed_first_try_results_are_the_h100_samples_records():
    """fixtures/measurements/first-try.json is `firsttry fixture` over the sample's records (2026-12-07, a real H100
    answering SM120): regenerated here from those records, every row keeps the hybrid label and none says fixed."""
    import json

    from lab.e2e.firsttry import fixture

    sample = Path(__file__).resolve().parent.parent / "reports" / "samples" / "first-try-h100-2026-12-07" / "firsttry-0.5.11"
    committed = json.loads((sample.parents[2].parent / "fixtures" / "measurements" / "first-try.json").read_text())
    records = [json.loads(p.read_text()) for p in sorted(sample.glob("firsttry-*.json"))]
    assert {**fixture(records, "reports/samples/first-try-h100-2026-12-07/firsttry-0.5.11"), "date": "2026-12-07"} == committed
    by_try = {r["try"]: r for r in committed["runs"]}
    assert by_try["default"]["crash_reproduced"] and not by_try["default"]["past_crash_point"]
    assert by_try["breakable"]["past_crash_point"] and by_try["off"]["past_crash_point"]
    label = hybrid_label("NVIDIA H100 80GB HBM3", "9.0")
    assert all(r["label"] == label and "fixed" not in r["outcome"].replace("not `fixed`", "") for r in committed["runs"])
