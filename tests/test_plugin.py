"""The pytest plugin end to end, through pytester: outcome policy, hardware gating, JSON, JUnit, isolation.

Most runs are in-process (pytester.runpytest_inprocess with -p pcgkit.plugin) with hand-built
TraceOutcomes, so no trace runs and torch/flashinfer are imported once for the whole module.

In-process runs restore sys.modules afterwards, dropping every module first imported *during*
the run; re-importing torch in one process is not possible. Hence `imported_stack` imports
what the simulated target touches before the first run, and the run that traces for real
(test_real_cases_restore_every_patch) stays the last in-process run of this module.
"""

from __future__ import annotations

import importlib
import json
import os
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pcgkit.harness import hardware
from pcgkit.harness.hardware import Device
from pcgkit.report.summary import SIMULATION_NOTE
from pcgkit.verdicts.result import RESULTS_SCHEMA, read_results

REPO_ROOT = Path(__file__).resolve().parent.parent
# Read before pytester points HOME at its temporary directory (see test_real_cases_under_xdist).
REAL_HOME = os.environ.get("HOME")
PLUGIN_ARGS = ("-p", "pcgkit.plugin", "-p", "no:cacheprovider")

CASE_MODULE = '''
import dataclasses
import time

import pcgkit.verdicts.modes
from pcgkit.harness.casekit import NotApplicable
from pcgkit.values.signature import Frame, Signature
from pcgkit.values.trace import TraceOutcome

MODE = {mode}

NVCC_FAILURE = Signature(
    exception_type="torch._dynamo.exc.Unsupported",
    message_head="Attempted to call function marked as skipped",
    graph_break_id="gb0007",
    skipped_callable="_thread.allocate_lock",
    innermost_library_frame=Frame("flashinfer/jit/cpp_ext.py", 69, "get_cuda_version"),
    frame_chain=(
        Frame("cap.py", 21, "fn"),
        Frame("flashinfer/jit/cpp_ext.py", 69, "get_cuda_version"),
        Frame("/usr/lib/python3.12/subprocess.py", 466, "check_output"),
    ),
)


def outcome(traced=False, signature=None):
    return TraceOutcome(
        traced=traced, executed=False, signature=signature, lru_cache_warnings=(),
        graph_breaks=0, graph_break_reasons=(), duration_s=0.01,
    )


def reproduce(ctx):
{body}


def test_case(pcgkit_case, target):
    """A hand-built case: reproduce() returns a chosen outcome."""
    pcgkit_case.run(MODE, reproduce)
'''

UNBASELINED_MODE = 'dataclasses.replace(pcgkit.verdicts.modes.MODE1, id="mode-unbaselined")'


@pytest.fixture(scope="module")
def imported_stack():
    """torch and the flashinfer modules the simulation patches, imported before any in-process run."""
    for name in (
        "torch",
        "torch._dynamo",
        "torch._dynamo.trace_rules",
        "flashinfer",
        "flashinfer.utils",
        "flashinfer.jit.core",
        "flashinfer.jit.cpp_ext",
        "flashinfer.fp4_quantization",
        "pcgkit.harness.simulate",
        "pcgkit.fp4.layer",
    ):
        importlib.import_module(name)
    # torch.compile imports and registers more modules on its first call (dynamo's backends, the
    # mega-cache artifact types). If that first call happened inside an in-process run, they would be
    # dropped with it and the next compile in this worker would register them again ("duplicate
    # name: eager", "already registered in mega-cache"): compile once here, outside every run.
    torch = importlib.import_module("torch")
    torch.compile(lambda x: x + 1, backend="eager", fullgraph=True)(torch.ones(1))
    torch._dynamo.reset()


@pytest.fixture
def plain_env(monkeypatch):
    """No hardware requirement or timeout leaks in from the outer environment."""
    monkeypatch.delenv("PCGKIT_REQUIRE_HARDWARE", raising=False)
    monkeypatch.delenv("PCGKIT_CASE_TIMEOUT", raising=False)


@pytest.fixture
def devices(monkeypatch, plain_env):
    """Sets the CUDA devices the plugin sees (default: none), whatever this machine has."""

    def set_devices(*found: Device) -> None:
        monkeypatch.setattr(hardware, "detect_cuda_devices", lambda: tuple(found))

    set_devices()
    return set_devices


@pytest.fixture
def run_case(pytester, imported_stack, devices):
    """Writes a case module whose reproduce() has the given body, runs it in-process."""

    def run(body: str, *args: str, mode: str = "pcgkit.verdicts.modes.MODE1"):
        source = CASE_MODULE.format(mode=mode, body=textwrap.indent(textwrap.dedent(body).strip(), "    "))
        pytester.makepyfile(test_hand_built_case=source)
        return pytester.runpytest_inprocess(*PLUGIN_ARGS, "-rA", *args)

    return run


def _failure_text(result) -> str:
    return "\n".join(result.outlines)


def test_known_signature_is_xfail(run_case):
    """A mode-1 signature under a 'reproduced' baseline is XFAIL; the real-hardware targets skip."""
    result = run_case("return outcome(signature=NVCC_FAILURE)")
    result.assert_outcomes(xfailed=1, skipped=2)
    result.stdout.fnmatch_lines(["XFAIL *test_case?sim-sm120? - known bug reproduced: *simulated SM120*"])


def test_clean_trace_against_reproduced_baseline_fails(run_case):
    """traced=True while the baseline says reproduced turns the run red: behaviour changed."""
    result = run_case("return outcome(traced=True)")
    result.assert_outcomes(failed=1, skipped=2)
    result.stdout.fnmatch_lines(["*behaviour changed against baseline: expected reproduced, got fixed*"])


def test_clean_trace_without_baseline_passes(run_case):
    """A fix on versions no baseline covers is a PASS (nothing to compare against)."""
    run_case("return outcome(traced=True)", mode=UNBASELINED_MODE).assert_outcomes(passed=1, skipped=2)


def test_import_error_is_a_broken_install(run_case):
    """An ImportError in reproduce() is the install's fault: FAIL with 'pcgkit error: broken install'."""
    result = run_case("raise ImportError('No module named flashinfer.jit')")
    result.assert_outcomes(failed=1, skipped=2)
    result.stdout.fnmatch_lines(["*pcgkit error: broken install: import failed: ImportError: No module named*"])


def test_unexpected_exception_is_a_kit_error(run_case):
    """Any other exception in reproduce() is a kit error, never a verdict about the bug."""
    result = run_case("raise RuntimeError('boom')", mode=UNBASELINED_MODE)
    result.assert_outcomes(failed=1, skipped=2)
    result.stdout.fnmatch_lines(["*pcgkit error: unexpected RuntimeError in case: boom*"])


def test_hung_case_is_stopped(run_case):
    """A reproduce() that hangs is stopped at --pcgkit-case-timeout and fails as 'hung'."""
    result = run_case("time.sleep(30)", "--pcgkit-case-timeout=1")
    result.assert_outcomes(failed=1, skipped=2)
    result.stdout.fnmatch_lines(["*pcgkit error: hung: case exceeded its 1 s deadline*"])
    assert result.duration < 20


def test_not_applicable_without_baseline_skips(run_case):
    """NotApplicable where no baseline applies is a SKIP that says 'not-applicable' and why."""
    result = run_case("raise NotApplicable('no fp4_quantize here')", mode=UNBASELINED_MODE)
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(["SKIPPED * not-applicable: no fp4_quantize here"])


def test_not_applicable_against_reproduced_baseline_fails(run_case):
    """NotApplicable where the baseline expects 'reproduced' is a behaviour change: FAIL."""
    result = run_case("raise NotApplicable('code path gone')")
    result.assert_outcomes(failed=1, skipped=2)
    result.stdout.fnmatch_lines(["*expected reproduced, got not-applicable: code path gone*"])


def test_drift_without_baseline_fails(run_case):
    """A failure with another signature and no baseline is still news: FAIL 'drifted'."""
    body = """
        moved = Frame("flashinfer/x.py", 1, "f")
        return outcome(signature=dataclasses.replace(NVCC_FAILURE, innermost_library_frame=moved))
    """
    result = run_case(body, mode=UNBASELINED_MODE)
    result.assert_outcomes(failed=1, skipped=2)
    result.stdout.fnmatch_lines(["*drifted: innermost FlashInfer frame is flashinfer/x.py:1:f*"])


def test_hardware_markers_skip_naming_what_was_found(pytester, devices):
    """sm120/gpu tests skip with a reason that says what this machine has."""
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.sm120
        def test_needs_sm120():
            pass

        @pytest.mark.gpu
        def test_needs_gpu():
            pass
        """
    )
    result = pytester.runpytest_inprocess(*PLUGIN_ARGS, "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED * requires SM120 (compute capability 12.x); found no CUDA device",
            "SKIPPED * requires a real CUDA GPU; found no CUDA device",
        ],
        consecutive=False,
    )
    devices(Device("NVIDIA H200", (9, 0)))
    result = pytester.runpytest_inprocess(*PLUGIN_ARGS, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * requires SM120 (compute capability 12.x); found NVIDIA H200, 9.0"])


def test_required_hardware_turns_skip_into_failure(pytester, devices):
    """--pcgkit-require-hardware=sm120 on a runner without SM120 FAILS instead of skipping."""
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.sm120
        def test_needs_sm120():
            pass

        @pytest.mark.gpu
        def test_needs_gpu():
            pass
        """
    )
    result = pytester.runpytest_inprocess(*PLUGIN_ARGS, "--pcgkit-require-hardware=sm120")
    result.assert_outcomes(errors=1, skipped=1)  # a failure in setup is reported as an error
    result.stdout.fnmatch_lines(["*found no CUDA device (this runner was told it has sm120*"])


def test_strict_markers_accepts_the_five_markers(pytester, devices):
    """With the plugin, --strict-markers accepts sm120, gpu, cpu_sim, e2e, docker; without it, it does not."""
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.sm120
        @pytest.mark.gpu
        @pytest.mark.cpu_sim
        @pytest.mark.e2e
        @pytest.mark.docker
        def test_all_markers():
            pass
        """
    )
    pytester.runpytest_inprocess(*PLUGIN_ARGS, "--strict-markers").assert_outcomes(skipped=1)
    # In a subprocess: pytest caches known marker names process-wide, so an in-process run would
    # still remember the plugin's markers from the run above.
    without = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers")
    without.assert_outcomes(errors=1)
    without.stdout.fnmatch_lines(["*'sm120' not found in `markers` configuration option*"])


@pytest.fixture
def reported(run_case, pytester):
    """One mode-1 run writing --pcgkit-json and --junitxml: (result, JSON dict, JUnit tree)."""
    json_path = pytester.path / "out" / "results.json"
    junit_path = pytester.path / "out" / "junit.xml"
    result = run_case(
        "return outcome(signature=NVCC_FAILURE)",
        f"--pcgkit-json={json_path}",
        f"--junitxml={junit_path}",
        "-o",
        "junit_family=xunit1",
    )
    result.assert_outcomes(xfailed=1, skipped=2)
    return result, json.loads(json_path.read_text()), ET.parse(junit_path), json_path


def test_results_json_has_one_result_per_target(reported):
    """The JSON is pcgkit.results/1 with one result per target, skipped ones carrying their reason."""
    _, data, _, json_path = reported
    assert data["schema"] == RESULTS_SCHEMA
    environment, results = read_results(json_path)
    assert set(environment) >= {"versions", "devices", "cuda_home", "pcgkit"}
    by_variant = {r.variant: r for r in results}
    assert set(by_variant) == {"sim-sm120", "gpu", "sm120"}
    simulated = by_variant["sim-sm120"]
    assert (simulated.mode, simulated.verdict.value, simulated.expected) == ("mode1", "reproduced", "reproduced")
    assert simulated.simulated and "simulated" in simulated.device["label"]
    assert str(simulated.signature.innermost_library_frame) == "flashinfer/jit/cpp_ext.py:69:get_cuda_version"
    assert simulated.evidence["simulated_queries"]  # the patched hardware queries are evidence too
    assert by_variant["gpu"].verdict.value == "skipped"
    assert by_variant["gpu"].reason == "requires a real CUDA GPU; found no CUDA device"
    assert by_variant["sm120"].reason == "requires SM120 (compute capability 12.x); found no CUDA device"
    assert not by_variant["sm120"].simulated
    assert by_variant["sm120"].device["label"] == "not run here"  # a skipped row never claims a device


def test_required_hardware_missing_is_an_error_row(run_case, pytester):
    """On a runner told it has SM120, a missing SM120 is recorded as an `error` row, not left out."""
    json_path = pytester.path / "out" / "results.json"
    result = run_case(
        "return outcome(signature=NVCC_FAILURE)", f"--pcgkit-json={json_path}", "--pcgkit-require-hardware=sm120"
    )
    result.assert_outcomes(xfailed=1, skipped=1, errors=1)
    by_variant = {r.variant: r for r in read_results(json_path)[1]}
    assert by_variant["sm120"].verdict.value == "error"
    assert "this runner was told it has sm120" in by_variant["sm120"].reason
    assert by_variant["sm120"].device["label"] == "not run here"
    assert by_variant["gpu"].verdict.value == "skipped"


def _properties(tree: ET.ElementTree, name: str) -> dict[str, str]:
    (case,) = [c for c in tree.iter("testcase") if c.get("name") == name]
    return {p.get("name"): p.get("value") for p in case.iter("property")}


def test_junit_properties_carry_the_verdict(reported):
    """Each JUnit testcase carries pcgkit.values.verdict / pcgkit.device / pcgkit.simulated properties."""
    _, _, tree, _ = reported
    simulated = _properties(tree, "test_case[sim-sm120]")
    assert simulated["pcgkit.verdict"] == "reproduced"
    assert simulated["pcgkit.simulated"] == "true"
    assert "simulated SM120" in simulated["pcgkit.device"]
    assert simulated["pcgkit.signature.graph_break_id"] == "gb0007"
    skipped = _properties(tree, "test_case[sm120]")
    assert skipped["pcgkit.verdict"] == "skipped"
    assert skipped["pcgkit.simulated"] == "false"


def test_terminal_summary_lists_verdicts_with_simulation_note(reported):
    """The 'pcgkit verdicts' section lists each result and says the SM120 run was simulated."""
    result, _, _, _ = reported
    result.stdout.fnmatch_lines(
        [
            "*= pcgkit verdicts =*",
            "case *sim-sm120 (simulated)*",
            "mode1 *reproduced gb0007 cpp_ext.py:69:get_cuda_version",
            SIMULATION_NOTE,
        ],
        consecutive=False,
    )
    result.stdout.fnmatch_lines(["skipped target sm120: all 1 cases, requires SM120*"])


def _copy_cases(pytester, *names: str) -> None:
    # Renamed: when the outer run also collected cases/, a module of the same name is already
    # imported in this process and the in-process run would refuse the copy (import file mismatch).
    for name in names:
        copy_name = f"test_copied_{name.removeprefix('test_')}"
        pytester.makepyfile(**{copy_name: (REPO_ROOT / "cases" / f"{name}.py").read_text()})


def _patched_objects() -> dict[str, object]:
    import flashinfer
    import flashinfer.fp4_quantization
    import flashinfer.jit.core
    import flashinfer.jit.cpp_ext
    import flashinfer.utils
    import torch

    return {
        "flashinfer.jit.cpp_ext.get_cuda_version": flashinfer.jit.cpp_ext.get_cuda_version,
        "flashinfer.fp4_quantize": flashinfer.fp4_quantize,
        "flashinfer.fp4_quantization.fp4_quantize": flashinfer.fp4_quantization.fp4_quantize,
        "flashinfer.utils.get_compute_capability": flashinfer.utils.get_compute_capability,
        "flashinfer.utils.device_support_pdl": flashinfer.utils.device_support_pdl,
        "flashinfer.jit.core.check_cuda_arch": flashinfer.jit.core.check_cuda_arch,
        "torch.cuda.get_device_capability": torch.cuda.get_device_capability,
        "torch.cuda.get_device_properties": torch.cuda.get_device_properties,
    }


# Keep this the last in-process run of the module (see the module docstring).
def test_real_cases_restore_every_patch(pytester, imported_stack, plain_env):
    """After the real mode 2/4 cases ran (simulated), every patched function is the original again."""
    _copy_cases(pytester, "test_mode2_jit_loader", "test_mode4_disable_vs_fullgraph")
    before = _patched_objects()
    cuda_home_before = os.environ.get("CUDA_HOME")
    json_path = pytester.path / "results.json"
    result = pytester.runpytest_inprocess(*PLUGIN_ARGS, "-m", "cpu_sim", f"--pcgkit-json={json_path}")
    result.assert_outcomes(xfailed=2, deselected=4)
    after = _patched_objects()
    assert {name: after[name] is obj for name, obj in before.items()} == {name: True for name in before}
    assert os.environ.get("CUDA_HOME") == cuda_home_before
    _, results = read_results(json_path)
    assert {(r.mode, r.variant, r.verdict.value) for r in results} == {
        ("mode2", "sim-sm120", "reproduced"),
        ("mode4", "sim-sm120", "reproduced"),
    }


@pytest.mark.slow  # the real cases in a pytest subprocess under xdist: minutes
def test_real_cases_under_xdist(pytester, monkeypatch):
    """Under xdist (2 workers) the controller's JSON holds all four simulated results, reproduced."""
    if REAL_HOME:
        # pytester's temporary HOME has cold caches: importing flashinfer would first build
        # tvm-ffi's torch addon into ~/.cache/tvm-ffi (about a minute on 2 cores).
        monkeypatch.setenv("HOME", REAL_HOME)
    _copy_cases(
        pytester,
        "test_mode1_nvcc_subprocess",
        "test_mode2_jit_loader",
        "test_mode3_lru_cache",
        "test_mode4_disable_vs_fullgraph",
    )
    json_path = pytester.path / "results.json"
    result = pytester.runpytest_subprocess(
        *PLUGIN_ARGS, "-p", "xdist", "-n", "2", "-m", "cpu_sim", f"--pcgkit-json={json_path}", timeout=300
    )
    result.assert_outcomes(xfailed=4)
    _, results = read_results(json_path)
    assert sorted((r.mode, r.variant, r.verdict.value, r.simulated) for r in results) == [
        (f"mode{n}", "sim-sm120", "reproduced", True) for n in range(1, 5)
    ]


def _judged(verdict: str, expected: str | None, why: str = "") -> tuple[str, str]:
    from pcgkit.harness.judging import judge_against_baseline
    from pcgkit.values.verdict import Verdict
    from pcgkit.verdicts.result import CaseResult

    result = CaseResult(mode="mode1", variant="sim-sm120", verdict=Verdict(verdict), reason="the reason",
                        device={"label": "simulated SM120"}, versions={}, duration_s=0.1, expected=expected)
    try:
        judge_against_baseline(result, why)
    except (pytest.fail.Exception, pytest.xfail.Exception, pytest.skip.Exception) as exc:
        return type(exc).__name__, str(exc)
    return "passed", ""


@pytest.mark.parametrize(("verdict", "expected", "outcome", "says"), [
    ("error", None, "Failed", "pcgkit error: the reason [simulated SM120]"),
    ("error", "error", "Failed", "pcgkit error"),  # an error is never excused by a baseline
    ("skipped", None, "Skipped", "the reason"),
    ("reproduced", "reproduced", "XFailed", "known bug reproduced: the reason [simulated SM120]"),
    ("reproduced", None, "XFailed", "known bug reproduced"),
    ("reproduced", "fixed", "Failed", "expected fixed, got reproduced: the reason [simulated SM120] (baseline: why)"),
    ("fixed", "reproduced", "Failed", "expected reproduced, got fixed"),
    ("fixed", "fixed", "passed", ""),
    ("fixed", None, "passed", ""),
    ("drifted", "drifted", "XFailed", "known drift (baseline: why)"),
    ("drifted", None, "Failed", "drifted: the reason [simulated SM120]"),
    ("not-applicable", None, "Skipped", "not-applicable: the reason"),
    ("not-applicable", "reproduced", "Failed", "expected reproduced, got not-applicable"),
])
def test_judge_against_baseline_maps_every_verdict(verdict, expected, outcome, says):
    """Each verdict x baseline maps onto its pytest outcome, and the message carries the reason and device."""
    got, message = _judged(verdict, expected, why="why")
    assert got == outcome
    assert says in message


def test_judge_against_baseline_omits_an_empty_why():
    """A changed behaviour without a baseline reason does not print an empty '(baseline: )'."""
    got, message = _judged("fixed", "reproduced")
    assert got == "Failed"
    assert "(baseline:" not in message


def test_scope_sglang_level_deselects_flashinfer_only_cases(run_case):
    """--pcgkit-scope=sglang-level (a cell for one SGLang release) leaves a FlashInfer-level case out, unrun;
    scope 'all' runs it; an unknown scope is a usage error naming the scopes."""
    body = "return outcome(signature=NVCC_FAILURE)"
    narrowed = run_case(body, "--pcgkit-scope=sglang-level")
    narrowed.assert_outcomes(deselected=3)
    everything = run_case(body, "--pcgkit-scope=all")
    assert everything.parseoutcomes().get("deselected") is None
    wrong = run_case(body, "--pcgkit-scope=nightly")
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR and "sglang-level" in "\n".join(wrong.errlines)
