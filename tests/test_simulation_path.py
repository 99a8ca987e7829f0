"""The simulation proves itself: recorded queries and arch path, judged against the per-release data.

The traced tests run mode 1's own reproduce() on the installed flashinfer 0.6.1 (CPU, a few
seconds each); the end-to-end test runs the case through pytest with the issue's mutation (the
simulated device properties report 9.0) and asserts the result is an error, not a verdict.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import pytest

from pcgkit.harness import archpaths, pathevidence
from pcgkit.harness.archpaths import (
    ArchPathRow,
    capability_answer,
    capability_of,
    judge_path,
    load_rows,
    parse_rows,
    row_for,
)
from pcgkit.harness.hardware import SIMULATED_SM90, SIMULATED_SM120
from pcgkit.util import proc

REPO_ROOT = Path(__file__).resolve().parent.parent
ROW = ArchPathRow(
    "0.5.0", "fp4_quantize", "get_fp4_quantization_module", "{major}{minor}",
    (("120", "gen_fp4_quantization_sm120_module"), ("90", "gen_fp4_quantization_sm90_module")), "test row",
)


def _mode1_reproduce():
    spec = importlib.util.spec_from_file_location("case_mode1", REPO_ROOT / "cases" / "test_mode1_nvcc_subprocess.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reproduce


def _traced_path(device, monkeypatch):
    """Mode 1 traced under the simulation of `device`, with the plugin's recorder and judge."""
    from pcgkit import plugin
    from pcgkit.harness.casekit import CaseContext, cuda_toolkit_root
    from pcgkit.harness.versions import collect_versions
    from pcgkit.values.targets import SIMULATED_BY_ARCH

    if cuda_toolkit_root():
        monkeypatch.setenv("CUDA_HOME", cuda_toolkit_root())
    ctx = CaseContext(SIMULATED_BY_ARCH["sm120"], device, "cpu", {})
    outcome, recorded = plugin._run_reproduce(ctx, _mode1_reproduce())
    return plugin._path_evidence(device, recorded, outcome.signature, collect_versions())


def test_sm90_and_sm120_simulations_take_their_own_generators(monkeypatch):
    """In one environment, simulated SM90 traces gen_..._sm90_module and SM120 gen_..._sm120_module."""
    sm120 = _traced_path(SIMULATED_SM120, monkeypatch)
    sm90 = _traced_path(SIMULATED_SM90, monkeypatch)
    assert sm120.problem is None and sm90.problem is None
    assert sm120.evidence["simulation"]["arch_path"] == ["gen_fp4_quantization_sm120_module"]
    assert sm90.evidence["simulation"]["arch_path"] == ["gen_fp4_quantization_sm90_module"]
    assert ["torch.cuda.get_device_properties", [9, 0]] in sm90.evidence["simulation"]["queries"]
    assert sm120.device.label == "simulated SM120 (no GPU; hardware queries answered as 12.0)"
    assert sm90.device.name == "simulated SM90"


def test_wrong_arch_answers_do_not_take(monkeypatch):
    """The simulation answering 9.0 while SM120 is claimed is caught from the answers and the path."""
    from pcgkit.harness import simulate

    real_answers = simulate._answers
    monkeypatch.setattr(simulate, "_answers", lambda capability, told: real_answers((9, 0), told))
    checked = _traced_path(SIMULATED_SM120, monkeypatch)
    assert checked.problem is not None and checked.problem.startswith("simulation did not take: claimed sm120")
    assert "answered 9.0" in checked.problem
    assert "chose gen_fp4_quantization_sm90_module" in checked.problem
    assert checked.evidence["simulation"]["took"] is False


MUTATION_PLUGIN = textwrap.dedent('''
    """The issue's mutation: the simulated device properties report compute capability 9.0, not 12.0."""
    from pcgkit.harness import simulate

    _real = simulate.SimulatedDeviceProperties

    def _reports_9_0(name, major, minor, *rest):
        return _real(name, 9, 0, *rest)

    simulate.SimulatedDeviceProperties = _reports_9_0
''')


@pytest.mark.slow  # a mutated checkout's real run: tens of seconds
def test_issue_mutation_turns_the_verdict_into_an_error(tmp_path):
    """Properties mutated to 9.0: mode 1 under pytest is `error` ("simulation did not take"), never reproduced."""
    (tmp_path / "mutate_props.py").write_text(MUTATION_PLUGIN)
    results = tmp_path / "results.json"
    argv = [sys.executable, "-m", "pytest", str(REPO_ROOT / "cases" / "test_mode1_nvcc_subprocess.py"),
            "-c", str(REPO_ROOT / "cases" / "pytest.ini"), "--rootdir", str(REPO_ROOT / "cases"),
            "-p", "mutate_props", "-p", "pcgkit.plugin", "-p", "no:cacheprovider", "-q",
            "-m", "cpu_sim", f"--pcgkit-json={results}"]
    env = {"PYTHONPATH": f"{tmp_path}:{REPO_ROOT}", "PATH": "/usr/local/bin:/usr/bin:/bin"}
    completed = proc.run(argv, cwd=tmp_path, env=env, timeout=300, echo=False)
    assert not completed.ok, completed.output_tail
    [result] = json.loads(results.read_text())["results"]
    assert result["verdict"] == "error", result["reason"]
    assert result["reason"].startswith("simulation did not take: claimed sm120")
    assert "gen_fp4_quantization_sm90_module" in result["reason"]
    assert result["device"]["simulated"] and "did not take" in result["device"]["label"]


def test_capability_comes_from_the_arch_id():
    """sm120 -> 12.0, sm90 -> 9.0, sm121 -> 12.1; a bad id is a clear error."""
    assert [capability_of(a) for a in ("sm120", "sm90", "sm100", "sm121")] == [(12, 0), (9, 0), (10, 0), (12, 1)]
    with pytest.raises(ValueError, match="not an arch id"):
        capability_of("blackwell")


def test_judge_accepts_the_claimed_arch_path():
    """Answers of the claimed arch and its generator: the simulation took."""
    queries = [("q:get_compute_capability", (12, 0)), ("q:device_support_pdl", True)]
    assert judge_path((12, 0), queries, ["fp4_quantize", "gen_fp4_quantization_sm120_module"], ROW) is None


@pytest.mark.parametrize("queries, reached, says", [
    ([("q:get_compute_capability", (9, 0))], [], "q:get_compute_capability answered 9.0"),
    ([("q:device_support_pdl", False)], [], "q:device_support_pdl answered False"),
    ([], ["gen_fp4_quantization_sm90_module"], "chose gen_fp4_quantization_sm90_module (the 90 path)"),
    ([], ["get_fp4_quantization_module"], "reached none of the row's generators"),
])
def test_judge_names_what_did_not_take(queries, reached, says):
    """Each wrong answer or path is named in the error."""
    problem = judge_path((12, 0), queries, reached, ROW)
    assert problem is not None and problem.startswith("simulation did not take: claimed sm120; ") and says in problem


def test_judge_without_dispatch_or_queries_is_not_an_error():
    """A trace that stopped before any arch choice (mode 4) is no evidence against the simulation."""
    assert judge_path((12, 0), [], ["fp4_quantize"], ROW) is None
    assert judge_path((12, 0), [], [], None) is None


def test_rows_follow_releases_and_say_when_assumed():
    """The shipped data: 0.6.1 uses the 0.5.0 row, 0.6.12 the moved module's, 0.7.4 the newest (assumed)."""
    rows = archpaths.load_rows()
    assert row_for("0.6.1", rows)[0].since == "0.5.0"
    assert row_for("0.6.12", rows)[0].since == "0.6.7"
    row, note = row_for("0.7.4", rows)
    assert row.since == "0.6.16" and "not read" in note
    assert row_for("0.4.0", rows)[0] is None and row_for(None, rows)[0] is None
    assert all(r.generator_for((12, 0)) == "gen_fp4_quantization_sm120_module" for r in rows)
    assert all(r.generator_for((9, 0)) == "gen_fp4_quantization_sm90_module" for r in rows)


def test_malformed_arch_paths_are_a_clear_error():
    """Wrong schema or a row without its table: one-line ArchPathsError."""
    with pytest.raises(archpaths.ArchPathsError, match="schema"):
        parse_rows({"schema": "x"})
    with pytest.raises(archpaths.ArchPathsError, match="lacks 'generators'"):
        parse_rows({"schema": archpaths.ARCH_PATHS_SCHEMA, "flashinfer": [
            {"since": "0.1", "entry_point": "e", "dispatcher": "d", "dispatch_key": "k", "read_from": "r"}]})


def test_real_device_evidence_is_recorded_not_judged():
    """On a real GPU the path is recorded (device_path) and never voids the verdict."""
    from pcgkit.harness.hardware import Device
    from pcgkit.harness.pathrecord import InlinedCall

    calls = [InlinedCall("get_compute_capability", "/x/site-packages/flashinfer/utils.py", 1, True, (9, 0)),
             InlinedCall("gen_fp4_quantization_sm90_module", "/x/site-packages/flashinfer/fp4_quantization.py", 2, False)]
    built = pathevidence.build(claimed=Device("NVIDIA H200", (9, 0)), calls=calls, recorder="r", told=(),
                               frames=(), row=ROW, row_note="n")
    assert built.problem is None and built.device is None
    assert built.evidence["device_path"]["arch_path"] == ["gen_fp4_quantization_sm90_module"]
    assert built.evidence["device_path"]["queries"] == [["flashinfer/utils.py:get_compute_capability", [9, 0]]]


def _sim_calls(answer):
    from pcgkit.harness.pathrecord import InlinedCall

    return [InlinedCall("get_compute_capability", "/x/site-packages/flashinfer/utils.py", 1, True, answer),
            InlinedCall("fp4_quantize", "/x/site-packages/flashinfer/fp4_quantization.py", 5, False),
            InlinedCall("gen_fp4_quantization_sm120_module", "/x/site-packages/flashinfer/fp4_quantization.py", 9, False,
                        object())]  # a generator's return value is no hardware answer


def test_build_names_the_simulated_device_from_its_answers():
    """A simulation that took: the device is named from the answers (12.0 -> 'simulated SM120'), evidence says took."""
    built = pathevidence.build(claimed=SIMULATED_SM120, calls=_sim_calls((12, 0)), recorder="r",
                               told=[("torch.cuda.get_device_capability", (12, 0))], frames=(), row=ROW, row_note="n")
    assert built.problem is None
    assert (built.device.name, built.device.capability, built.device.simulated) == ("simulated SM120", (12, 0), True)
    sim = built.evidence["simulation"]
    assert sim["claimed"] == "sm120" and sim["took"] is True
    assert sim["expected_arch_path"] == "gen_fp4_quantization_sm120_module"
    assert sim["arch_path"] == ["gen_fp4_quantization_sm120_module"]
    assert sim["queries"] == [["flashinfer/utils.py:get_compute_capability", [12, 0]],
                              ["torch.cuda.get_device_capability", [12, 0]]]
    assert "device_path" not in built.evidence


def test_build_turns_a_wrong_answer_into_the_problem_and_the_device_note():
    """A 9.0 answer under a claimed SM120: the problem voids the verdict and the device label says why."""
    built = pathevidence.build(claimed=SIMULATED_SM120, calls=_sim_calls((9, 0)), recorder="r", told=(),
                               frames=(), row=ROW, row_note="n")
    assert built.problem is not None and built.problem.startswith("simulation did not take: claimed sm120")
    assert built.device.note == built.problem and built.evidence["simulation"]["took"] is False


def test_build_without_queries_says_none_was_reached():
    """A trace that reached no hardware query keeps the claimed device, with a note saying so."""
    built = pathevidence.build(claimed=SIMULATED_SM90, calls=(), recorder="r", told=(), frames=(), row=None,
                               row_note="n")
    assert built.problem is None and built.device.capability == (9, 0)
    assert built.device.note == "no GPU; no hardware query was reached on the traced path"
    assert built.evidence["simulation"]["expected_arch_path"] is None


def test_build_reached_functions_keep_order_and_include_the_failure_frames():
    """The traced path is every inlined call then the failure's frames, each once, in order."""
    from pcgkit.harness.pathrecord import InlinedCall
    from pcgkit.values.signature import Frame

    calls = [InlinedCall("a", "f.py", 1, True), InlinedCall("b", "f.py", 2, True), InlinedCall("a", "f.py", 3, True)]
    assert pathevidence.reached_functions(calls, [Frame("g.py", 1, "c"), Frame("g.py", 2, "b")]) == ["a", "b", "c"]


def test_build_evidence_answers_are_json_ready():
    """Tuples become lists, plain scalars stay, anything else is its repr: the evidence always serialises."""
    assert pathevidence._jsonable(((12, 0), None, True, 1.5, "s")) == [[12, 0], None, True, 1.5, "s"]
    assert pathevidence._jsonable(object).startswith("<class")
    answers = [(12, 0), [12, 1], (1, 2, 3), ("12", "0"), True, (12,)]
    assert [capability_answer(a) for a in answers] == [(12, 0), (12, 1), None, None, None, None]


@pytest.mark.parametrize("claimed, pdl, took", [((9, 0), True, True), ((12, 0), True, True), ((8, 0), False, True),
                                                ((9, 0), False, False), ((8, 0), True, False)])
def test_judge_pdl_answer_follows_flashinfers_sm90_rule(claimed, pdl, took):
    """device_support_pdl must answer True exactly from SM90 on: SM90 itself included, SM8x excluded."""
    assert (judge_path(claimed, [("q:device_support_pdl", pdl)], [], None) is None) is took


def test_judge_flags_a_newer_answer_too():
    """An answer above the claimed arch (13.0 under sm120) is as wrong as one below it."""
    problem = judge_path((12, 0), [("q:get_compute_capability", (13, 0))], [], ROW)
    assert problem is not None and "answered 13.0" in problem


def test_rows_between_since_and_newest_read_are_not_assumed():
    """A release inside a row's read range (0.6.17 <= newest read 0.6.18) gets no 'assumed unchanged' note."""
    row, note = row_for("0.6.17", archpaths.load_rows())
    assert row.since == "0.6.16" and "not read" not in note


def test_judge_names_the_expected_generator_and_the_chosen_ones_arch():
    """The error names the generator the claimed arch takes, and the chosen one's arch, whatever the row's order."""
    reversed_row = ArchPathRow(ROW.since, ROW.entry_point, ROW.dispatcher, ROW.dispatch_key,
                               tuple(reversed(ROW.generators)), ROW.read_from)
    problem = judge_path((9, 0), [], ["gen_fp4_quantization_sm120_module"], reversed_row)
    assert problem is not None
    assert "chose gen_fp4_quantization_sm120_module (the 120 path), not gen_fp4_quantization_sm90_module" in problem


def test_judge_ignores_answers_that_are_no_capability_pair():
    """Only an (int, int) pair is a capability: a 1-tuple or strings are recorded, never judged."""
    assert judge_path((12, 0), [("q", (12,)), ("q", ("9", "0")), ("q", (9, 0, 0))], [], None) is None


def test_rows_at_the_newest_read_release_are_not_assumed():
    """The newest release read (0.6.18) itself is read, not assumed."""
    assert "not read" not in row_for("0.6.18", archpaths.load_rows())[1]


@pytest.mark.parametrize("arch", ["sm9", "sm", "smx0"])
def test_capability_of_needs_two_digits(arch):
    """An arch id is 'sm' and at least two digits (major, minor): sm9 is a clear error, not 0.9."""
    with pytest.raises(ValueError, match="not an arch id"):
        capability_of(arch)


@pytest.mark.parametrize("schema", ["pcgkit.arch_paths/0", "a", "x"])
def test_malformed_schema_of_either_side_is_an_error(schema):
    """Any schema other than pcgkit.arch_paths/1 is refused."""
    with pytest.raises(archpaths.ArchPathsError, match="schema"):
        parse_rows({"schema": schema})


def test_rows_apply_from_their_own_since_and_ignore_local_labels():
    """0.6.16 itself uses the 0.6.16 row; a local label (+cu128) does not hide the release."""
    rows = archpaths.load_rows()
    assert row_for("0.6.16", rows)[0].since == "0.6.16"
    assert row_for("0.6.1+cu128", rows)[0].since == "0.5.0"


@pytest.mark.parametrize("value", [ROW, pathevidence.PathEvidence({}, None, None)], ids=type)
def test_build_evidence_and_rows_are_frozen(value):
    """Arch-path rows and path evidence are records: they cannot be edited after they are made."""
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, dataclasses.fields(value)[0].name, "edited")


def test_family_remap_follows_torchs_cuda_version():
    """From FlashInfer 0.6.6 the dispatcher maps 120/121 to 120f when torch.version.cuda >= 12.9 (read in the
    0.6.6 wheel): a simulated SM120 trace on torch cu13 reaching sm120f took; on cu12.8 sm120 is expected."""
    rows = load_rows()
    row, note = row_for("0.7.4", rows, torch_cuda="13.0")
    assert row.generator_for((12, 0)) == "gen_fp4_quantization_sm120f_module" and "dispatch to 120f" in note
    queries = [("q:get_compute_capability", (12, 0))]
    assert judge_path((12, 0), queries, ["gen_fp4_quantization_sm120f_module"], row) is None
    old_cuda, _ = row_for("0.7.4", rows, torch_cuda="12.8")
    assert old_cuda.generator_for((12, 0)) == "gen_fp4_quantization_sm120_module"
    assert judge_path((12, 0), queries, ["gen_fp4_quantization_sm120f_module"], old_cuda) is not None
    before, _ = row_for("0.6.3", rows, torch_cuda="13.0")
    assert before.generator_for((12, 0)) == "gen_fp4_quantization_sm120_module"  # no 120f generator before 0.6.6
