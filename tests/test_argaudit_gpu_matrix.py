"""The GPU rows of the fp4_quantize argument audit (fixtures/measurements/argaudit-gpu.json, a lent H100 on
2026-12-07, issue 48) against the matrix sample's verdict of the fix for the same FlashInfer release
(reports/samples/matrix-2026-12-01/compat.json, the FlashInfer-only cell `fi-<version>`, mode fix-upstream-op,
simulated SM120). Read from the committed files only: no torch, no GPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
AUDIT = json.loads((ROOT / "fixtures" / "measurements" / "argaudit-gpu.json").read_text())
MATRIX = json.loads((ROOT / "reports" / "samples" / "matrix-2026-12-01" / "compat.json").read_text())
MODE = "fix-upstream-op"
# what a real-kernel status means for the fix's simulated verdict: a release whose op carries every argument to its
# kernel is one the fix (switching to the op) works on; one whose op misroutes an argument traces but fails
SAME = {"passed": "fixed", "fails": "traces-but-fails"}
ROWS = {row["flashinfer"]: row for row in AUDIT["rows"]}


def matrix_verdict(release: str) -> str:
    cell = next(c for c in MATRIX["cells"] if c["id"] == f"fi-{release}")
    assert cell["axes"]["flashinfer-python"] == release and cell["modes"][MODE]["simulated"]
    return cell["modes"][MODE]["verdict"]


def test_the_file_is_the_real_h100_run_of_the_four_releases_with_its_source():
    assert AUDIT["schema"] == "pcgkit.argaudit-gpu/1" and AUDIT["date"] == "2026-12-07" and not AUDIT["simulated"]
    assert "reports/samples/first-try-h100-2026-12-07/argaudit/argaudit-gpu.json" in AUDIT["source"]
    assert sorted(ROWS) == ["0.6.12", "0.7.0", "0.7.1", "0.7.4"]
    for row in ROWS.values():
        assert row["device"].startswith("NVIDIA H100 80GB HBM3 (SM90, CC 9.0), real GPU") and not row["simulated"]


@pytest.mark.parametrize("release", ["0.6.12", "0.7.0", "0.7.1", "0.7.4"])
def test_each_gpu_row_agrees_with_the_matrix_samples_verdict_of_the_fix(release):
    """0.6.12 and 0.7.0 fail on the kernel where the matrix says traces-but-fails; 0.7.1 passes where it says fixed;
    0.7.4 refuses SM90 before any kernel, so its row is not comparable there and the simulated verdict stands."""
    row, verdict = ROWS[release], matrix_verdict(release)
    assert row["matrix"]["verdict"] == verdict and row["matrix"]["mode"] == MODE  # the row quotes the sample's verdict
    if row["status"] in SAME:
        assert SAME[row["status"]] == verdict, (release, row["status"], verdict)
        assert row["against_matrix"] == "agrees"
    else:
        assert release == "0.7.4" and row["status"] == "refused", (release, row["status"])
        assert "requires SM100 or newer; got SM90" in row["summary"] and not row["kernel_args"]
        assert row["against_matrix"] == f"not comparable on this GPU (the matrix's simulated SM120 verdict {verdict} stands)"


def test_the_failing_releases_misroute_enable_pdl_down_to_the_kernel():
    """The finding behind 0.6.12's and 0.7.0's `fails`: enable_pdl changed alone changes is_global_scale_inversed at
    the compiled kernel (the SM90 module's fp4_quantize); 0.7.1's kernel receives enable_pdl=False as given."""
    for release in ("0.6.12", "0.7.0"):
        assert any("enable_pdl alone changed is_global_scale_inversed at kernel" in f for f in ROWS[release]["findings"])
    assert ROWS["0.7.1"]["findings"] == [] and ROWS["0.7.1"]["status"] == "passed"
