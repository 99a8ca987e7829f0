"""A first "break" that is the release's own check raising under the trace is not a verdict on compile safety.

The rows below are the committed 0.7.0 certificate's (fixtures/certificates/certificate-0.7.0-sm120.json, 2026-12-05):
`mxfp8_grouped_quantize` was counted `breaks` at gb0088 ("Dynamo found no exception handler ...") while its eager
fake run raised "ValueError: a must be a CUDA tensor": the CPU inputs were refused, under the trace and when run."""

from __future__ import annotations

import json

from lab.sweep.certificate_build import RAISED_UNDER_TRACE, judged_status
from pcgkit import resources


def test_a_check_raised_under_the_trace_and_when_run_is_not_judged():
    """gb0088 first + the eager run raised too -> not-judged with the run's error; the same run error after a
    real first break (the nvcc query, gb0007) keeps the break, and gb0088 with a run the kit stopped (a kernel
    the guard refused) stays a break."""
    status, where = judged_status("breaks-elsewhere", "gb0088", False, "ValueError", "ValueError: a must be a CUDA tensor",
                                  RAISED_UNDER_TRACE)
    assert (status, where) == ("not-judged", "the release's own check raised, under the trace and when run: "
                                             "ValueError: a must be a CUDA tensor")
    assert judged_status("breaks-elsewhere", "gb0088", False, "BackendSupportedError", "mm_fp8 does not support backend",
                         RAISED_UNDER_TRACE)[0] == "not-judged"
    assert judged_status("breaks-in-jit-loader", "gb0007 cpp_ext.py", False, "ValueError", "ValueError: x",
                         "gb0007")[0] == "breaks"
    assert judged_status("breaks-elsewhere", "gb0088", False, "RuntimeError",
                         "RuntimeError: packed KDA T=1 requires compute capability 10.0 or 10.3 in the SM100 family; got 12.0",
                         RAISED_UNDER_TRACE)[0] == "not-judged"
    assert judged_status("breaks-elsewhere", "gb0088", False, "KernelLoadRefused", "needs a kernel: refused",
                         RAISED_UNDER_TRACE)[0] == "breaks"


def test_the_committed_rows_this_rule_reclassifies_are_such_rejections():
    """Every committed 0.7.0 row whose first site is gb0088 (the release raised under the trace) is `not-judged`
    with the rejection its own run raised, and the rule re-applied to the row's own evidence gives that status
    back: the rule reads the row, nothing else (the certificates re-made 2026-12-05 with it have 7 such rows)."""
    cert = json.loads(resources.fixture("certificates", "certificate-0.7.0-sm120.json").read_text())
    rows = [r for r in cert["callables"] if r.get("sites") and r["sites"][0].get("graph_break_id") == RAISED_UNDER_TRACE]
    assert rows, "the committed certificate has such rows"
    for r in rows:
        assert r["status"] == "not-judged", r["target"]
        assert r["run"]["error"] in r["where"], r["target"]
        assert judged_status(r["first_class"], RAISED_UNDER_TRACE, r["run"]["runs"], r["run"]["error_type"],
                             r["run"]["error"], RAISED_UNDER_TRACE)[0] == "not-judged", r["target"]
    assert "must be a CUDA tensor" in {r["target"]: r["where"] for r in rows}["flashinfer.packed_kda_decode"]
