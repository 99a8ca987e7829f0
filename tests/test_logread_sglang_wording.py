"""SGLang's capture-failure wording per release, as each release's wheel writes it, is read as a capture failure.

Every line below is copied from the PyPI wheel named beside it (`pip download --no-deps sglang==X`, 0.5.10 and later
with `--platform manylinux_2_34_x86_64`; read 2026-12-07; file:line in the comment above `_PCG_FAILED_RE` in
pcgkit/values/logread.py). Issue 44: the reader had 0.5.8-0.5.9 as "Piecewise CUDA Graph failed with error" (that is
0.5.10-0.5.13.post1), 0.5.15's "Fail when using backend" as 0.5.16 and tc_piecewise only, and no
"Capture prefill CUDA graph failed:" at all.
"""

from __future__ import annotations

import pytest

from pcgkit.values.logread import CaptureEvent, read_log

ERROR = "Attempted to call function marked as skipped"
# (release, the lines SGLang prints when piecewise / prefill capture fails)
WORDINGS = [
    ("0.5.8", [f"Exception: Capture cuda graph failed: {ERROR}", "Possible solutions:",
               "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
               "2. set --piecewise-cuda-graph-max-tokens to a smaller value (e.g., 512)",
               "3. disable Piecewise CUDA graph by unset --enable-piecewise-cuda-graph"]),
    ("0.5.9", [f"Exception: Capture cuda graph failed: {ERROR}", "Possible solutions:",
               "3. disable Piecewise CUDA graph by unset --enable-piecewise-cuda-graph"]),
    ("0.5.10", [f"Piecewise CUDA Graph failed with error: {ERROR}"]),
    ("0.5.13.post1", [f"Piecewise CUDA Graph failed with error: {ERROR}"]),
    ("0.5.14", ["Piecewise CUDA graph failed."]),
    ("0.5.14-prefill", [f"Exception: Capture prefill CUDA graph failed: {ERROR}"]),
    ("0.5.15", [f"Exception: Capture prefill CUDA graph failed: {ERROR}",
                "Fail when using backend: tc_piecewise for prefill runner.", "Possible suggestions:"]),
    ("0.5.15-breakable", [f"Exception: Capture prefill CUDA graph failed: {ERROR}",
                          "Fail when using backend: breakable for prefill runner."]),
]


@pytest.mark.parametrize(("release", "lines"), WORDINGS, ids=[w[0] for w in WORDINGS])
def test_each_releases_capture_failure_wording_is_a_capture_failure(release, lines):
    """The release's own failure lines give a FAILED capture event (and nothing reads them as 'piecewise disabled')."""
    reading = read_log("\n".join(["[2026-12-07 10:00:00 TP0] Capture piecewise CUDA graph begin", *lines]))
    assert reading.events(CaptureEvent.FAILED), release
    assert not reading.events(CaptureEvent.DISABLED), release


def test_the_decode_runners_capture_failure_is_not_a_piecewise_one():
    """'Capture cuda graph failed:' alone is also the decode runner's wording (cuda_graph_runner.py in every release):
    without 0.5.8-0.5.9's piecewise hint it is a failure, but no piecewise capture event."""
    reading = read_log("Exception: Capture cuda graph failed: CUDA out of memory.\nPossible solutions:\n"
                       "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
                       "3. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)")
    assert not reading.events(CaptureEvent.FAILED)
    assert reading.failures and reading.failures[0].exception_type == "Exception"
