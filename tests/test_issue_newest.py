"""`pcgkit issue` with no flags drafts from the newest matrix it finds (the last run's report or a committed
sample), quotes and pins the newest release that still fails, and lists only the target library's cases."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from pcgkit.bugreport.evidence import newest_failing_release, newest_matrix, read_junit, results_from_junit
from pcgkit.bugreport.repro import Pins, install_size
from pcgkit.commands.issue import _cmd_issue
from pcgkit.values.verdict import Verdict

REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE = REPO_ROOT / "reports" / "samples" / "matrix-2026-12-01"


def test_no_flags_draft_names_and_pins_the_newest_failing_flashinfer_release(tmp_path, capsys, monkeypatch):
    """With no last run under --reports, the committed matrix sample is the evidence: FlashInfer 0.7.4 is pinned."""
    monkeypatch.chdir(REPO_ROOT)
    args = argparse.Namespace(target="flashinfer", results=None, compat=None, env=None, repro=None, out=None,
                              reports=str(tmp_path), pin=None, force=False)
    assert _cmd_issue(args) == 0
    text = capsys.readouterr().out
    assert "flashinfer-python==0.7.4" in text and "pcgkit repro mode1 --cell torch-2.15.0" in text
    assert "- Measured: mode1 fails on FlashInfer 0.5.0" in text and "(reports/samples/matrix-2026-12-01/compat.json" not in text
    assert "sglang-compile" not in text and "e2e-piecewise" not in text  # SGLang's cases are not FlashInfer's


def test_a_newer_last_run_wins_over_the_committed_sample(tmp_path):
    """A report under --reports created after the sample is the newest evidence; its failing release is pinned."""
    pairs = results_from_junit(read_junit(SAMPLE / "matrix-junit.xml.gz"))
    one = next(r for _, r in pairs if r.mode == "mode1" and r.verdict is Verdict.REPRODUCED)
    newer = dataclasses.replace(one, versions={**one.versions, "flashinfer-python": "0.8.0"})
    (tmp_path / "compat.json").write_text(json.dumps({"created": "2027-01-01T00:00:00+00:00"}))
    system_out = "pcgkit.result=" + json.dumps(newer.to_dict())
    (tmp_path / "matrix-junit.xml").write_text(
        '<testsuites><testsuite name="s"><properties><property name="pcgkit.cell.id" value="fi-0.8.0"/></properties>'
        f"<testcase name='t'><system-out>{system_out.replace('&', '&amp;').replace('<', '&lt;')}</system-out></testcase>"
        "</testsuite></testsuites>")
    found = newest_matrix([SAMPLE / "compat.json", tmp_path / "compat.json", tmp_path / "missing" / "compat.json"])
    assert found is not None and found.compat == tmp_path / "compat.json"
    fresh = results_from_junit(read_junit(found.junit))
    assert fresh[0][0] == "fi-0.8.0" and newest_failing_release([r for _, r in fresh], "flashinfer") == "0.8.0"
    assert newest_failing_release([r for _, r in pairs], "sglang") == "0.5.11"  # sglang-compile-sm120 is SGLang's case


def test_repro_readme_size_is_the_measured_one_or_says_not_measured():
    """The size a repro README states is the measurement of exactly its pins, never another set's."""
    record = {"requirements": ["torch==2.15.0", "flashinfer-python==0.7.4"], "python": "3.12"}
    data = {"measurements": [record]}
    assert install_size(Pins(("flashinfer-python==0.7.4", "torch==2.15.0"), "3.12", "x"), data) is record
    assert install_size(Pins(("torch==2.9.1", "flashinfer-python==0.6.1"), "3.12", "x"), data) is None
    assert install_size(Pins(("torch==2.15.0", "flashinfer-python==0.7.4"), "3.11", "x"), data) is None


def test_repro_readme_states_the_nvcc_point_and_the_size_or_that_it_was_not_measured():
    """The README says nvcc is not needed (get_cuda_path without CUDA_HOME) and gives the measured size of its pins."""
    from pcgkit.bugreport.repro import plan_export, render_readme

    pins = Pins(("torch==2.15.0", "flashinfer-python==0.7.4"), "3.12", "test")
    measured = {"measurements": [{"requirements": list(pins.requirements), "python": "3.12", "download_bytes": 3.4e9,
                                  "wheels": 56, "installed_bytes": 7.3e9, "date": "2026-12-05", "how": "pip download"}]}
    readme = render_readme(plan_export("mode1", True, pins, None), measured)
    assert "downloads 3.4 GB of wheels (56 files" in readme and "7.3 GB on disk" in readme
    assert "No `nvcc` and no CUDA toolkit are needed" in readme and "`get_cuda_path` (`which nvcc`)" in readme
    other = render_readme(plan_export("mode1", True, Pins(("torch==2.9.0", "flashinfer-python==0.6.0"), "3.12", "t"),
                                      None), measured)
    assert "not measured for these pins" in other
