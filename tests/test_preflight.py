"""`pcgkit preflight`: the pure parts (piecewise state from each release's recorded flags, model shape, the answer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.sglang_facts import validated_flags
from pcgkit.commands.preflight import ANSWER_EXIT, _launch_arguments, advice_for, failure_modes
from pcgkit.errors import ExitCode
from pcgkit.preflight.answer import Answer, decide, matching_mode
from pcgkit.preflight.resolve import capability_refusal, model_shape, piecewise_state, tiny_features

DATA = Path(__file__).parent / "data" / "preflight"
FLAGS = {f.sglang: f.to_dict() for f in validated_flags()}


def _probe(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def test_opt_in_releases_are_off_unless_the_enable_switch_is_given():
    """0.5.8 (opt-in, read from its parser): off by default, on with --enable-piecewise-cuda-graph."""
    flags = FLAGS["0.5.8"]
    assert piecewise_state(flags, {"enable_piecewise_cuda_graph": False}).on is False
    on = piecewise_state(flags, {"enable_piecewise_cuda_graph": True})
    assert on.on is True and "--enable-piecewise-cuda-graph" in on.why


def test_default_on_releases_are_on_unless_disabled_and_enforce_wins():
    """0.5.12 (on by default): on; off with --disable-...; --enforce-... keeps it on past the auto-disable."""
    flags = FLAGS["0.5.12"]
    assert piecewise_state(flags, {}).on is True
    assert piecewise_state(flags, {"disable_piecewise_cuda_graph": True}).on is False
    auto = "ServerArgs._handle_piecewise_cuda_graph sets disable_piecewise_cuda_graph for this launch"
    assert piecewise_state(flags, {}, auto_disabled=auto).on is False
    assert piecewise_state(flags, {"enforce_piecewise_cuda_graph": True}, auto_disabled=None).on is True


def test_prefill_backend_releases_follow_the_backend_choice():
    """0.5.16-0.5.19: on only with --cuda-graph-backend-prefill=tc_piecewise (their CUDA default is another backend)."""
    flags = FLAGS["0.5.16"]
    assert piecewise_state(flags, {"cuda_graph_backend_prefill": "tc_piecewise"}).on is True
    assert piecewise_state(flags, {"cuda_graph_backend_prefill": "disabled"}).on is False
    assert piecewise_state(flags, {"cuda_graph_backend_prefill": None}).on is False


def test_releases_without_the_backend_are_off_whatever_is_passed():
    """0.5.22+ ship no torch.compile piecewise backend: off, and the reason says so."""
    state = piecewise_state(FLAGS["0.5.23"], {"cuda_graph_backend_prefill": "tc_piecewise"})
    assert state.on is False and "no torch.compile piecewise" in state.why


def test_an_unread_default_is_unknown_not_a_guess():
    """A release whose default state was not read answers None (-> `unknown`), never on or off."""
    flags = {**FLAGS["0.5.12"], "default_state": "unknown"}
    assert piecewise_state(flags, {}).on is None


def test_every_recorded_release_gets_an_answer_for_its_default_command_line():
    """Each release in the validation file resolves its plain launch to on/off (none left unknown)."""
    for release, flags in FLAGS.items():
        assert piecewise_state(flags, {}).on in (True, False), release


@pytest.mark.parametrize("config, moe, hidden", [
    ({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096}, (), 4096),
    ({"architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048, "num_experts": 128}, ("num_experts",), 2048),
    ({"architectures": ["X"], "text_config": {"hidden_size": 5120, "num_local_experts": 16}}, ("num_local_experts",), 5120),
    ({"architectures": ["X"], "hidden_size": 7168, "n_routed_experts": 1}, (), 7168),
])
def test_model_shape_reads_hidden_size_and_experts_from_config(config, moe, hidden):
    """Experts (any MoE key > 1, text_config included) and the hidden size come from config.json alone."""
    shape = model_shape(config)
    assert shape.moe_keys == moe and shape.hidden_size == hidden


@pytest.mark.parametrize("hidden, width", [(4096, 128), (2880, 64), (256, 128), (48, 16), (None, 128), (40, 40)])
def test_tiny_features_keep_the_group_multiple(hidden, width):
    """The traced width divides the model's hidden size and is a multiple of the NVFP4 group (16) where possible."""
    assert tiny_features(hidden) == width


@pytest.mark.parametrize("quantization, minimum, current, refused", [
    ("modelopt_fp4", 100, (9, 0), "Minimum capability: 100. Current capability: 90."),  # SGLang's words on the H200
    ("modelopt_fp4", 100, (12, 0), None),
    ("modelopt_fp4", 100, (10, 3), None),
    ("modelopt_fp4", 80, (9, 0), None),  # 0.5.22 lowered NVFP4's minimum to 80 (its own get_min_capability)
    ("modelopt_fp4", 100, (None, None), None),  # the loader checks nothing when it reads no capability
    (None, 100, (9, 0), None),
])
def test_capability_refusal_is_the_loaders_comparison(quantization, minimum, current, refused):
    """A GPU older than the method's own minimum is refused at model load with the loader's message; otherwise none."""
    message = capability_refusal(quantization, minimum, current)
    assert (message is None) is (refused is None)
    if refused:
        assert message.endswith(refused) and quantization in message


def test_a_launch_refused_at_model_load_gets_no_piecewise_advice():
    """The H200's NVFP4 answer (refused: Minimum capability 100) carries no switch/upgrade advice; another unknown does."""
    probe = {**_probe("probe-sglang-0.5.8-nvfp4-piecewise-sm120.json"), "unresolved": "sglang 0.5.8 refuses this launch"}
    refused = {**probe, "load_check": {"ran": True, "min_capability": 100, "device_capability": [9, 0],
                                       "refusal": "Minimum capability: 100. Current capability: 90."}}
    assert decide(refused, failure_modes()).answer is Answer.UNKNOWN
    assert advice_for(decide(refused, failure_modes())) is None
    assert advice_for(decide(probe, failure_modes())) is not None


def test_a_probe_that_never_reached_the_trace_still_labels_a_simulation_beside_a_real_gpu(monkeypatch):
    """The probe's simulated device on a machine with a GPU names that GPU and never says "no GPU" (the H200 run)."""
    from pcgkit.harness import hardware
    from pcgkit.preflight import probe

    monkeypatch.setattr(hardware, "detect_cuda_devices", lambda: (hardware.Device("NVIDIA H200", (9, 0)),))
    monkeypatch.setattr("pcgkit.harness.versions.installed_version", lambda name: None)  # stops before any import
    doc = probe.probe("sm120", ["--model-path", "x"])
    assert "not installed" in doc["unresolved"]
    assert doc["simulated"] and doc["device"]["simulated"] and doc["device"]["compute_capability"] == "12.0"
    assert "no GPU" not in doc["device"]["label"]
    assert "NVIDIA H200 (CC 9.0)" in doc["device"]["label"] and "answered as 12.0" in doc["device"]["label"]


def test_the_recorded_058_probe_is_a_crash_with_mode_1():
    """The real 0.5.8 NVFP4 probe document: will crash, named mode1 by the catalog's rules, exit 10."""
    result = decide(_probe("probe-sglang-0.5.8-nvfp4-piecewise-sm120.json"), failure_modes())
    assert result.answer is Answer.WILL_CRASH and result.mode == "mode1"
    assert result.signature is not None and result.signature.innermost_library_frame.function == "get_cuda_version"
    assert ANSWER_EXIT[result.answer] == ExitCode.PREFLIGHT_WILL_CRASH == 10
    data = result.to_dict()
    assert data["device"]["simulated"] and data["versions"]["sglang"] == "0.5.8"


def test_the_same_probe_with_piecewise_off_is_ok():
    """Piecewise off for the launch: ok, whatever the dense trace would do (nothing compiles under fullgraph)."""
    probe = _probe("probe-sglang-0.5.8-nvfp4-piecewise-sm120.json")
    probe["piecewise"] = {"on": False, "why": "opt-in and not given"}
    assert decide(probe, failure_modes()).answer is Answer.OK


def test_a_new_mode_is_named_with_no_preflight_change():
    """The modes are values handed in: a mode placed first that accepts the signature names the crash."""
    probe = _probe("probe-sglang-0.5.8-nvfp4-piecewise-sm120.json")

    class AcceptsAll:
        matches = staticmethod(lambda sig: None)

    assert decide(probe, {"mode-new": AcceptsAll(), **failure_modes()}).mode == "mode-new"


def test_an_unmatched_dynamo_refusal_still_crashes_but_names_no_mode():
    """Unsupported that no mode accepts: still `will crash` (fullgraph fails), mode None, said so."""
    result = decide(_probe("probe-sglang-0.5.8-nvfp4-piecewise-sm120.json"), {})
    assert result.answer is Answer.WILL_CRASH and result.mode is None and "new shape" in result.reason


@pytest.mark.parametrize("change, needle", [
    ({"unresolved": "--model-path 'x' is not a local folder here"}, "not a local folder"),
    ({"piecewise": {"on": None, "why": "not read"}}, "could not be read"),
    ({"dense": {"observation": {"class": "needs-gpu", "where": "apply calls sgl_kernel.x"}}}, "needs-gpu"),
    ({"dense": {"linear_method": "M", "observation": {"class": "traces-through"}}, "model": {"moe": ["num_experts"]}},
     "experts"),
])
def test_what_cannot_be_judged_is_unknown_with_the_reason(change, needle):
    """Unresolved launches, unread states, GPU-only methods and untraced MoE are `unknown`, each saying why."""
    result = decide({**_probe("probe-sglang-0.5.8-nvfp4-piecewise-sm120.json"), **change}, failure_modes())
    assert result.answer is Answer.UNKNOWN and needle in result.reason
    assert ANSWER_EXIT[result.answer] == 11


def test_a_traced_dense_layer_is_ok():
    """A dense apply that traces (no experts) is `ok`."""
    probe = {**_probe("probe-sglang-0.5.8-nvfp4-piecewise-sm120.json"),
             "dense": {"linear_method": "UnquantizedLinearMethod", "observation": {"class": "traces-through"}}}
    assert decide(probe, failure_modes()).answer is Answer.OK


def test_matching_mode_follows_catalog_order():
    """mode1 and mode3 rules both accept an lru-cache-warned nvcc failure: the first in catalog order wins."""
    sig = decide(_probe("probe-sglang-0.5.8-nvfp4-piecewise-sm120.json"), failure_modes()).signature
    modes = failure_modes()
    assert matching_mode(sig, modes) == "mode1"
    assert matching_mode(sig, dict(reversed(list(modes.items())))) == "mode3"


def test_launch_arguments_are_required_after_the_separator():
    """No launch arguments is a one-line usage error; a leading `--` is dropped."""
    import argparse

    from pcgkit.errors import UsageError

    with pytest.raises(UsageError, match="no launch arguments"):
        _launch_arguments(argparse.Namespace(launch=[]))
    assert _launch_arguments(argparse.Namespace(launch=["--", "--model-path", "x"])) == ["--model-path", "x"]


def test_a_release_env_takes_the_pins_that_release_declares():
    """--sglang 0.5.8: torch 2.9.1 and flashinfer 0.6.1 as 0.5.8 declares them, then the import deps; hashed folder."""
    import tomllib

    from pcgkit import resources
    from pcgkit.preflight.envs import plan_env

    requires = tomllib.loads(resources.fixture("sglang_requires.toml").read_text())
    env = plan_env("0.5.8", requires, ["msgspec", "torch==2.9.1"], Path("/cache"))
    assert env.requirements[:3] == ("flashinfer_python==0.6.1", "flashinfer_cubin==0.6.1", "torch==2.9.1")
    assert env.requirements.count("torch==2.9.1") == 1 and env.requirements[-1] == "msgspec"
    assert env.folder.name.startswith("sglang-0.5.8-") and env.python == env.folder / "bin" / "python"
    assert plan_env("0.5.8", requires, ["msgspec", "gguf"], Path("/cache")).folder != env.folder


def test_an_unknown_release_is_a_usage_error_naming_the_refresh():
    """A release the pins file does not know: one line naming `lab pins`, nothing built."""
    from pcgkit.errors import UsageError
    from pcgkit.preflight.envs import plan_env

    with pytest.raises(UsageError, match="lab pins"):
        plan_env("9.9.9", {"release": [{"version": "0.5.8", "requires": []}]}, [], Path("/cache"))


def _ctx():
    from pcgkit.harness.casekit import CaseContext
    from pcgkit.harness.hardware import SIMULATED_SM120
    from pcgkit.values.targets import SIM_SM120

    target = SIM_SM120
    return CaseContext(target=target, device=SIMULATED_SM120, torch_device="cpu")


@pytest.fixture
def launch_file(tmp_path, monkeypatch):
    from pcgkit.preflight.case import ENV_VAR

    path = tmp_path / "launch.toml"
    path.write_text('schema = "pcgkit.preflight-launch/1"\nname = "team"\n'
                    'launch = ["--model-path", "ckpt", "--quantization", "modelopt_fp4"]\n')
    monkeypatch.setenv(ENV_VAR, str(path))
    return path


def _case_with(monkeypatch, probe: dict):
    from pcgkit.preflight import case

    monkeypatch.setattr(case, "run_probe_here", lambda arch, launch: {**probe, "asked": [arch, list(launch)]})
    return case


def test_the_case_is_not_applicable_without_a_launch_file(monkeypatch):
    """No PCGKIT_PREFLIGHT: the case says how to ask for it, never a verdict."""
    from pcgkit.harness.casekit import NotApplicable
    from pcgkit.preflight import case
    from pcgkit.preflight.case import ENV_VAR

    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(NotApplicable, match="--preflight"):
        case.reproduce(_ctx(), failure_modes())


def test_a_crashing_launch_is_reproduced_with_the_failure_mode_in_evidence(monkeypatch, launch_file):
    """The recorded 0.5.8 crash document through the case: reproduced; mode1 and the launch in the evidence."""
    from pcgkit.verdicts.modes import classify

    case = _case_with(monkeypatch, _probe("probe-sglang-0.5.8-nvfp4-piecewise-sm120.json"))
    ctx = _ctx()
    outcome = case.reproduce(ctx, failure_modes())
    verdict, _why = classify(case.PREFLIGHT_LAUNCH, outcome)
    assert verdict.value == "reproduced" and ctx.evidence["preflight"]["mode"] == "mode1"
    launch = ctx.evidence["preflight_launch"]["launch"]
    assert launch[1] == str(launch_file.parent / "ckpt") and ctx.evidence["preflight_launch"]["arch"] == "sm120"


@pytest.mark.parametrize("change, error", [
    ({"piecewise": {"on": False, "why": "off"}}, "NotApplicable"),
    ({"unresolved": "not a local folder"}, "MissingDependency"),
])
def test_off_is_not_applicable_and_unknown_is_a_skip_with_the_reason(monkeypatch, launch_file, change, error):
    """Piecewise off for the launch: not-applicable; preflight unknown: skipped with its reason."""
    from pcgkit.harness import casekit

    case = _case_with(monkeypatch, {**_probe("probe-sglang-0.5.8-nvfp4-piecewise-sm120.json"), **change})
    with pytest.raises(getattr(casekit, error)):
        case.reproduce(_ctx(), failure_modes())


def test_a_traced_launch_is_skipped_as_traced_only_never_fixed(monkeypatch, launch_file):
    """Piecewise on and the dense apply traces, but nothing ran its call path: skipped, reason says traced only."""
    from pcgkit.harness.casekit import MissingDependency

    traced = {**_probe("probe-sglang-0.5.8-nvfp4-piecewise-sm120.json"),
              "dense": {"linear_method": "M", "observation": {"class": "opaque-op"}}}
    case = _case_with(monkeypatch, traced)
    ctx = _ctx()
    with pytest.raises(MissingDependency, match="traced only") as raised:
        case.reproduce(ctx, failure_modes())
    assert "call path not run" in str(raised.value) and "no statement that the launch works" in str(raised.value)
    assert ctx.evidence["preflight"]["answer"] == "ok"
    assert "whether its call path runs is not measured" in ctx.evidence["preflight"]["reason"]


@pytest.mark.parametrize("text, message", [
    ('schema = "x"\nlaunch = ["--model-path", "a"]', "schema"),
    ('schema = "pcgkit.preflight-launch/1"\nlaunch = []', "non-empty list"),
    ('schema = "pcgkit.preflight-launch/1"\nlaunch = ["a"]\narch = "sm75"', r"l\.toml:3: `arch`"),
    ('schema = "pcgkit.preflight-launch/1"\nlaunch = ["a"]\nextra = 1', r"l\.toml:3: unknown key 'extra'"),
    ("not toml [", "not TOML"),
])
def test_a_bad_launch_file_is_one_line_naming_the_field(tmp_path, text, message):
    """Malformed launch files are UsageErrors naming the file and what is wrong."""
    from pcgkit.errors import UsageError
    from pcgkit.preflight.case import load

    path = tmp_path / "l.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        load(path)


def test_a_refusal_with_no_library_frame_and_no_mode_is_unknown():
    """0.5.16's apply calling a binding left None (an import-time check not answered here): unknown, not a crash."""
    probe = _probe("probe-sglang-0.5.8-nvfp4-piecewise-sm120.json")
    probe["dense"] = {**probe["dense"], "signature": {
        "exception_type": "torch._dynamo.exc.Unsupported", "message_head": "Unsupported function call",
        "graph_break_id": "gb0147", "explanation": "Dynamo does not know how to trace the function `None`",
        "skipped_callable": None, "innermost_library_frame": None,
        "frame_chain": ["sglang/srt/layers/linear.py:281:forward", "sglang/srt/layers/quantization/modelopt_quant.py:1677:apply"],
        "lru_cache_warnings": []}}
    result = decide(probe, failure_modes())
    assert result.answer is Answer.UNKNOWN and "`None`" in result.reason


def test_preflight_without_an_environment_that_has_sglang_says_which_to_pass():
    """No --python, no --sglang and no SGLang here: one usage line naming both options, not a probe failure."""
    import argparse
    import importlib.util

    from pcgkit.commands.preflight import interpreter
    from pcgkit.errors import UsageError

    if importlib.util.find_spec("sglang") is not None:
        pytest.fail("the kit's test environment should not hold SGLang (releases run in their own environments)")
    with pytest.raises(UsageError, match="has no SGLang: pass --python ENV .* or --sglang VERSION"):
        interpreter(argparse.Namespace(python=None, sglang=None))


def test_release_env_size_forecast_uses_what_was_built_here_first():
    """Before a build: the median of the environments already built here, else the typical size."""
    from pcgkit.preflight.envs import size_forecast
    from pcgkit.util.diskuse import TYPICAL_STACK_ENV_GB as TYPICAL_GB

    assert size_forecast([]) == f"about {TYPICAL_GB} GB (torch's CUDA build and its NVIDIA libraries are most of it)"
    assert size_forecast([6 * 2**30, 7 * 2**30, 8 * 2**30]).startswith("about 7.0 GiB, like the 3 release")


def test_committed_preflight_table_and_answers_match_the_evidence():
    """docs/preflight.md's table never lists a release under "piecewise on" as `ok` when its probe found piecewise off
    (0.5.22 has no torch.compile backend), and no committed answer says the cost is "not measured" now that it is."""
    import importlib.util
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("preflight_releases_under_test", root / "benchmarks" / "preflight_releases.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    table = (root / "docs" / "preflight.md").read_text().split("generated:preflight-table -->")[1]
    row = next(line for line in table.splitlines() if line.startswith("| 0.5.22 |"))
    assert row.split("|")[2].strip().startswith("piecewise off: ")
    off = {"answer": "ok", "probe": {"piecewise": {"on": False, "why": "no backend"}}}
    assert bench.cell(off, asked_on=True) == "piecewise off: no backend" and bench.cell(off) == "ok"
    for path in (root / "reports" / "samples" / "preflight-2026-12-01").glob("sglang-*.json"):
        assert "does not exist yet" not in json.dumps(json.loads(path.read_text())["answer"]), path.name


def test_a_traced_ok_says_whether_its_call_path_runs():
    """`ok` for a traced launch keeps `ok` and says the call path runs only when the release's case measured it;
    a release measured failing to run is `unknown`; not measured says so; a launch with piecewise off is untouched."""
    from pcgkit.preflight.answer import Answer, Preflight, with_call_path

    traced = Preflight(Answer.OK, "M.apply traces", None, None, {"piecewise": {"on": True}})
    assert with_call_path(traced, True, "cell c").reason == "M.apply traces, and its call path runs (cell c)"
    failing = with_call_path(traced, False, "cell c: traces-but-fails")
    assert failing.answer is Answer.UNKNOWN and "failing when run" in failing.reason
    assert "whether its call path runs is not measured (x)" in with_call_path(traced, None, "x").reason
    off = Preflight(Answer.OK, "off", None, None, {"piecewise": {"on": False}})
    assert with_call_path(off, False, "cell c") == off
