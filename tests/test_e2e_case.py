"""The end-to-end case's gating: selected by -m "sm120 and e2e", skipped here naming SM120, a failure
on a runner told it has SM120, a "not run here" row in the results, and never simulated."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from pcgkit.harness import hardware
from pcgkit.harness.hardware import Device

CASE = Path(__file__).resolve().parent.parent / "cases" / "test_e2e_piecewise_launch.py"
PLUGIN_ARGS = ("-p", "pcgkit.plugin", "-p", "no:cacheprovider")
ONLY_SM120 = "not gpu-as-sm120"  # the hybrid target's own runs: tests/test_e2e_hybrid.py


@pytest.fixture
def devices(monkeypatch):
    """The CUDA devices the plugin sees (default: none), whatever this machine has."""
    monkeypatch.delenv("PCGKIT_REQUIRE_HARDWARE", raising=False)

    def set_devices(*found: Device) -> None:
        monkeypatch.setattr(hardware, "detect_cuda_devices", lambda: tuple(found))

    set_devices()
    return set_devices


@pytest.fixture(scope="module", autouse=True)
def imported_stack():
    """Everything the in-process runs import, imported once before any of them: pytester restores
    sys.modules after each test, and torch (its dynamo backend registry above all) cannot be imported
    twice in one process; the pcgkit.e2e modules too, so that a monkeypatch on them is the one the
    case sees."""
    import importlib

    for name in ("torch", "torch._dynamo", "torch._dynamo.trace_rules", "flashinfer", "flashinfer.utils",
                 "flashinfer.jit.core", "flashinfer.jit.cpp_ext", "flashinfer.fp4_quantization", "pcgkit.harness.simulate",
                 "pcgkit.fp4.layer", "pcgkit.plugin", "pcgkit.harness.tracing", "safetensors.torch", "tokenizers",
                 "pcgkit.e2e.checkpoint", "pcgkit.fp4.reference", "pcgkit.sglang.facts", "pcgkit.e2e.launch",
                 "pcgkit.e2e.case", "pcgkit.e2e.server"):
        importlib.import_module(name)
    importlib.import_module("torch._dynamo").list_backends()  # registers "eager" & co. now, not inside a run


@pytest.fixture
def case(pytester):
    # Another module name than the real case's: under xdist the real one may be imported already.
    pytester.makepyfile(test_e2e_case_under_test=CASE.read_text())
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
    """On a runner told it has SM120 (--pcgkit-require-hardware=sm120) a missing SM120 is an error; the
    hybrid target (any GPU) still only skips: it is never SM120 hardware."""
    result = case.runpytest_inprocess(*PLUGIN_ARGS, "--pcgkit-require-hardware=sm120")
    result.assert_outcomes(errors=1, skipped=1)
    result.stdout.fnmatch_lines(["*requires SM120*found no CUDA device (this runner was told it has sm120*"])


def test_skip_leaves_a_not_run_here_row(case, devices, tmp_path):
    """The skipped case still appears in the results JSON, once per target: sm120 and gpu-as-sm120, skipped, not run."""
    out = tmp_path / "results.json"
    case.runpytest_inprocess(*PLUGIN_ARGS, f"--pcgkit-json={out}").assert_outcomes(skipped=2)
    rows = json.loads(out.read_text())["results"]
    assert sorted((r["mode"], r["variant"], r["verdict"]) for r in rows) == [
        ("e2e-piecewise-launch", "gpu-as-sm120", "skipped"), ("e2e-piecewise-launch", "sm120", "skipped")]
    by_variant = {r["variant"]: r for r in rows}
    assert by_variant["sm120"]["device"]["label"] == "not run here" and "requires SM120" in by_variant["sm120"]["reason"]
    assert "requires a real CUDA GPU" in by_variant["gpu-as-sm120"]["reason"]


def test_case_never_simulates():
    """The case imports nothing from pcgkit.harness.simulate, names its own targets (SM120 and the hybrid,
    no simulated one), and asserts a real device."""
    tree = ast.parse(CASE.read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any("simulate" in (m or "") for m in imported)
    assert "TARGETS = (targets.SM120, targets.GPU_AS_SM120)" in CASE.read_text()
    assert "assert not device.simulated" in CASE.read_text()


def _facts(version: str, state: str = "opt-in", source: str | None = None, **argv):
    """Stand-in facts of the one reader (pcgkit.sglang.facts), as read from a parser unless told otherwise."""
    from pcgkit.sglang import facts as sglang_facts

    return sglang_facts.PiecewiseFlags(version, state, None, None, None, (), source or sglang_facts.ARGPARSE_SOURCE, **argv)


DYING_SERVER = """
import sys, time
time.sleep(0.2)
sys.stdout.write(open(sys.argv[1]).read())
sys.exit(1)
"""


def test_case_end_to_end_with_a_stand_in_server(case, devices, monkeypatch, tmp_path):
    """With an SM120 device reported and a stand-in server that dies as seed 000's did, the case records
    `reproduced` with the signature, keeps the log, and xfails (the known bug) like the other cases."""
    import sys

    from pcgkit.e2e import launch as launch_mod
    from pcgkit.sglang import facts as flags_mod

    seed_log = CASE.parent.parent / "tests" / "data" / "e2e_logs" / "seed000_capture_nvcc_subprocess.log"
    script = tmp_path / "dying_server.py"
    script.write_text(DYING_SERVER)
    built = []

    def stand_in_plan(flags, *, python, model_path, port, **kwargs):
        built.append((flags, model_path, port))
        return launch_mod.LaunchPlan((sys.executable, str(script), str(seed_log)), "stand-in")

    devices(Device("stand-in SM120 (test)", (12, 0)))
    monkeypatch.setattr(flags_mod, "piecewise_flags", lambda: _facts("0.0.test", enable_argv=("--enable-piecewise-cuda-graph",)))
    monkeypatch.setattr(launch_mod, "build_launch", stand_in_plan)
    out = tmp_path / "results.json"
    result = case.runpytest_inprocess(*PLUGIN_ARGS, f"--pcgkit-json={out}", "-rx", "-k", ONLY_SM120)
    result.assert_outcomes(xfailed=1)
    (row,) = json.loads(out.read_text())["results"]
    assert (row["mode"], row["variant"], row["verdict"]) == ("e2e-piecewise-launch", "sm120", "reproduced")
    assert row["signature"]["innermost_library_frame"] == "flashinfer/jit/cpp_ext.py:69:get_cuda_version"
    assert row["simulated"] is False and row["device"]["compute_capability"] == "12.0"
    assert Path(row["evidence"]["server_log"]).read_text() == seed_log.read_text()
    assert row["evidence"]["server"]["readiness"] == "died" and row["evidence"]["server"]["exit_status"] == 1
    (flags, model_path, _port), = built
    assert (Path(model_path) / "model.safetensors").exists()  # the checkpoint was written before the launch


def test_case_without_a_piecewise_switch_is_not_applicable(case, devices, monkeypatch, tmp_path):
    """A release with no piecewise flag (0.5.22+) records not-applicable and launches nothing."""
    from pcgkit.sglang import facts as flags_mod

    devices(Device("stand-in SM120 (test)", (12, 0)))
    monkeypatch.setattr(flags_mod, "piecewise_flags", lambda: _facts("0.5.23", state=flags_mod.NOT_SHIPPED))
    out = tmp_path / "results.json"
    case.runpytest_inprocess(*PLUGIN_ARGS, f"--pcgkit-json={out}", "-k", ONLY_SM120).assert_outcomes(skipped=1)
    (row,) = json.loads(out.read_text())["results"]
    assert row["verdict"] == "not-applicable" and "no flag that turns piecewise CUDA graphs on" in row["reason"]


def test_case_with_flags_read_only_as_text_is_a_broken_install(case, devices, monkeypatch):
    """Facts from the source-text fallback (server_args does not import) fail the case as a broken install."""
    from pcgkit.sglang import facts as flags_mod

    devices(Device("stand-in SM120 (test)", (12, 0)))
    text_only = _facts("0.5.8", source="source text of x (import of sglang.srt.server_args failed: ImportError: y)",
                       enable_argv=("--enable-piecewise-cuda-graph",))
    monkeypatch.setattr(flags_mod, "piecewise_flags", lambda: text_only)
    result = case.runpytest_inprocess(*PLUGIN_ARGS, "-k", ONLY_SM120)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*pcgkit error: broken install: SGLang's server_args does not import*"])
