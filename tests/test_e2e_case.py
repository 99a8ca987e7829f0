"""The end-to-end case's gating: selected by -m "sm120 and e2e", skipped here naming SM120, a failure
on a runner told it has SM120, a "not run here" row in the results, and never simulated."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from pcgkit import hardware
from pcgkit.hardware import Device

CASE = Path(__file__).resolve().parent.parent / "cases" / "test_e2e_piecewise_launch.py"
PLUGIN_ARGS = ("-p", "pcgkit.plugin", "-p", "no:cacheprovider")


@pytest.fixture
def devices(monkeypatch):
    """The CUDA devices the plugin sees (default: none), whatever this machine has."""
    monkeypatch.delenv("PCGKIT_REQUIRE_HARDWARE", raising=False)

    def set_devices(*found: Device) -> None:
        monkeypatch.setattr(hardware, "detect_cuda_devices", lambda: tuple(found))

    set_devices()
    return set_devices


@pytest.fixture
def case(pytester):
    pytester.makepyfile(test_e2e_piecewise_launch=CASE.read_text())
    return pytester


def test_selected_by_its_markers_and_skipped_naming_sm120(case, devices):
    """-m "sm120 and e2e" selects the case; without SM120 it skips with the hardware it needs and found."""
    result = case.runpytest_inprocess(*PLUGIN_ARGS, "-m", "sm120 and e2e", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * requires SM120 (compute capability 12.x); found no CUDA device"])
    devices(Device("NVIDIA H200", (9, 0)))
    result = case.runpytest_inprocess(*PLUGIN_ARGS, "-m", "sm120 and e2e", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * requires SM120 (compute capability 12.x); found NVIDIA H200, 9.0"])
    result = case.runpytest_inprocess(*PLUGIN_ARGS, "-m", "not e2e")
    result.assert_outcomes()  # deselected: nothing ran


def test_required_sm120_turns_the_skip_into_a_failure(case, devices):
    """On a runner told it has SM120 (--pcgkit-require-hardware=sm120) a missing SM120 is an error."""
    result = case.runpytest_inprocess(*PLUGIN_ARGS, "--pcgkit-require-hardware=sm120")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*requires SM120*found no CUDA device (this runner was told it has sm120*"])


def test_skip_leaves_a_not_run_here_row(case, devices, tmp_path):
    """The skipped case still appears in the results JSON: mode e2e-piecewise-launch, sm120, skipped, not run."""
    out = tmp_path / "results.json"
    case.runpytest_inprocess(*PLUGIN_ARGS, f"--pcgkit-json={out}").assert_outcomes(skipped=1)
    rows = json.loads(out.read_text())["results"]
    assert [(r["mode"], r["variant"], r["verdict"]) for r in rows] == [("e2e-piecewise-launch", "sm120", "skipped")]
    assert rows[0]["device"]["label"] == "not run here" and "requires SM120" in rows[0]["reason"]


def test_case_never_simulates():
    """The case imports nothing from pcgkit.simulate, asks for no simulated target, and asserts a real device."""
    tree = ast.parse(CASE.read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any("simulate" in (m or "") for m in imported)
    test = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_"))
    assert "target" not in [a.arg for a in test.args.args]  # the plugin would parametrize a simulated variant
    assert "assert not device.simulated" in CASE.read_text()
