"""The launch-command builder and the flag reader (pure), and the committed per-version validation."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from pcgkit.e2e.flags import PiecewiseFlags, flags_from_parser
from pcgkit.e2e.launch import LaunchPlanError, build_launch
from pcgkit.e2e.validate import DEFAULT_OUT, default_matrix_versions, parse_probe_output, result_status, summarize


def _parser(*switches: str, valued: tuple[str, ...] = ()) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    for flag in switches:
        parser.add_argument(flag, action="store_true")
    for flag in valued:
        parser.add_argument(flag, type=int)
    return parser


def test_opt_in_release_is_read_as_opt_in():
    """A parser with only --enable-piecewise-cuda-graph (as 0.5.3-0.5.8) reads as opt-in, default off."""
    parser = _parser("--enable-piecewise-cuda-graph", valued=("--piecewise-cuda-graph-max-tokens",))
    flags = flags_from_parser("0.5.8", parser, lambda dest: False)
    assert flags == PiecewiseFlags("0.5.8", "--enable-piecewise-cuda-graph", None, None, False,
                                   ("--piecewise-cuda-graph-max-tokens",))


def test_default_on_release_with_disable_and_enforce():
    """disable + enforce and no enable flag (as 0.5.16-0.5.19) reads as on by default, with a force flag."""
    parser = _parser("--disable-piecewise-cuda-graph", "--enforce-piecewise-cuda-graph")
    flags = flags_from_parser("0.5.16", parser, lambda dest: False)
    assert (flags.enable, flags.disable, flags.force, flags.default_on) == (
        None, "--disable-piecewise-cuda-graph", "--enforce-piecewise-cuda-graph", True)


def test_deprecated_no_op_enable_switch_is_not_the_way_on():
    """A deprecated --enable-... that only warns (0.5.10-0.5.12) is recorded as deprecated; enforce is used."""

    class DeprecatedAction(argparse.Action):  # SGLang's: prints a warning, stores nothing
        def __init__(self, option_strings, dest, nargs=0, **kwargs):
            super().__init__(option_strings, dest, nargs=nargs, **kwargs)

        def __call__(self, parser, namespace, values, option_string=None):
            print(f"{option_string} is deprecated")

    parser = _parser("--disable-piecewise-cuda-graph", "--enforce-piecewise-cuda-graph")
    parser.add_argument("--enable-piecewise-cuda-graph", action=DeprecatedAction)
    flags = flags_from_parser("0.5.10.post1", parser, lambda dest: False)
    assert flags.enable is None and flags.deprecated == ("--enable-piecewise-cuda-graph",)
    assert flags.default_on and flags.force == "--enforce-piecewise-cuda-graph"
    assert build_launch(flags, python="p", model_path="/m", port=1).piecewise_args == ("--enforce-piecewise-cuda-graph",)


def test_enable_flag_with_true_default_is_default_on():
    """When the enable field defaults to True the release is default-on even though the flag exists."""
    flags = flags_from_parser("x", _parser("--enable-piecewise-cuda-graph"), lambda dest: dest == "enable_piecewise_cuda_graph")
    assert flags.default_on


def test_opt_in_launch_passes_the_enable_flag_and_never_disable():
    """The opt-in plan carries --enable-piecewise-cuda-graph, the model, loopback port and modelopt_fp4."""
    flags = PiecewiseFlags("0.5.8", "--enable-piecewise-cuda-graph", None, None, False)
    plan = build_launch(flags, python="/v/bin/python", model_path="/m", port=31000)
    assert plan.argv[:3] == ("/v/bin/python", "-m", "sglang.launch_server")
    assert plan.piecewise_args == ("--enable-piecewise-cuda-graph",)
    args = plan.server_args
    assert args[args.index("--model-path") + 1] == "/m" and args[args.index("--port") + 1] == "31000"
    assert args[args.index("--host") + 1] == "127.0.0.1"
    assert args[args.index("--quantization") + 1] == "modelopt_fp4"
    assert "opt-in" in plan.how


def test_default_on_launch_forces_and_does_not_disable():
    """A default-on release gets its force flag and never its disable flag."""
    flags = PiecewiseFlags("0.5.16", None, "--disable-piecewise-cuda-graph", "--enforce-piecewise-cuda-graph", True)
    plan = build_launch(flags, python="python", model_path="/m", port=1)
    assert plan.piecewise_args == ("--enforce-piecewise-cuda-graph",)
    assert "--disable-piecewise-cuda-graph" not in plan.argv
    assert "on by default" in plan.how and "forced" in plan.how


def test_release_without_piecewise_switch_has_no_plan():
    """A release with no piecewise flag at all (tc_piecewise removed, 0.5.22+) cannot be launched: LaunchPlanError."""
    with pytest.raises(LaunchPlanError, match="no flag that turns piecewise CUDA graphs on"):
        build_launch(PiecewiseFlags("0.5.23", None, None, None, False), python="python", model_path="/m", port=1)


def test_result_status_three_ways():
    """A probe report is ok, not-applicable (no piecewise switch, all else fine) or failed (with the step)."""
    good_ckpt = {"ok": True, "problems": []}
    assert result_status({"flags": {}, "launch": {"ok": True}, "checkpoint": good_ckpt})[0] == "ok"
    assert result_status({"flags": {}, "launch": {"ok": False, "not_applicable": "no flag"}, "checkpoint": good_ckpt})[0] == "not-applicable"
    status, why = result_status({"flags": {}, "launch": {"ok": False, "error": "argparse exit 2: unrecognized arguments: --x"},
                                 "checkpoint": good_ckpt})
    assert status == "failed" and "unrecognized arguments" in why
    assert result_status(None) == ("failed", "the probe printed no result")
    assert summarize({"1": None}, {})["all_ok"] is False


def test_probe_output_is_read_from_its_marker_line():
    """The probe's JSON is the last PCGKIT-PROBE line; output without one gives None."""
    assert parse_probe_output('noise\nPCGKIT-PROBE {"a": 1}\nmore noise') == {"a": 1}
    assert parse_probe_output("Traceback ...\nImportError: x") is None


def test_committed_validation_covers_the_matrix_and_matches_the_builder():
    """fixtures/sglang_launch_validation.json has every matrix SGLang, none failed, and the argv the builder makes now."""
    data = json.loads(Path(DEFAULT_OUT).read_text())
    by_version = {r["sglang"]: r for r in data["results"]}
    assert set(default_matrix_versions()) <= set(by_version), "re-run `bin/pcgkit e2e validate-launch`"
    assert data["all_ok"], [r["summary"] for r in data["results"] if r["status"] == "failed"]
    for version, row in by_version.items():
        assert row["status"] in ("ok", "not-applicable"), (version, row["summary"])
        flags = PiecewiseFlags.from_dict(row["probe"]["flags"])
        assert flags.sglang_version == version
        if row["status"] == "ok":
            recorded = row["probe"]["launch"]["argv"]
            model = recorded[recorded.index("--model-path") + 1]
            rebuilt = build_launch(flags, python="python", model_path=model, port=30000)
            assert list(rebuilt.argv) == recorded, f"{version}: builder changed since validation; re-run it"
        else:
            with pytest.raises(LaunchPlanError):
                build_launch(flags, python="python", model_path="/m", port=1)


def test_declared_pins_reads_exact_pins_only():
    """Exact '==' pins of the named packages come out of a wheel's METADATA; ranges and others do not."""
    metadata = "\n".join([
        "Name: sglang",
        "Requires-Dist: transformers==4.57.1",
        "Requires-Dist: compressed-tensors",
        'Requires-Dist: tokenizers==0.23.2; extra == "srt"',
        "Requires-Dist: torch==2.9.1",
        "Requires-Dist: huggingface_hub>=0.30",
    ])
    from pcgkit.e2e.validate import declared_pins

    assert declared_pins(metadata, ("transformers", "tokenizers", "compressed-tensors")) == [
        "transformers==4.57.1", "tokenizers==0.23.2"]


def test_switches_in_effect_follow_the_real_destination():
    """Aliases that store a const elsewhere (0.5.16's --enforce-... -> cuda_graph_backend_prefill) are judged by value."""
    from pcgkit.e2e.flags import switches_in_effect

    parser = argparse.ArgumentParser()
    parser.add_argument("--cuda-graph-backend-prefill", dest="cuda_graph_backend_prefill", default=None)
    parser.add_argument("--enforce-piecewise-cuda-graph", action="store_const", dest="cuda_graph_backend_prefill", const="tc_piecewise")
    parser.add_argument("--disable-piecewise-cuda-graph", action="store_const", dest="cuda_graph_backend_prefill", const="disabled")
    options = ("--enforce-piecewise-cuda-graph", "--disable-piecewise-cuda-graph")
    forced = parser.parse_args(["--enforce-piecewise-cuda-graph"])
    assert switches_in_effect(parser, forced, options) == {options[0]: True, options[1]: False}
    overridden = parser.parse_args(["--enforce-piecewise-cuda-graph", "--cuda-graph-backend-prefill", "breakable"])
    assert switches_in_effect(parser, overridden, options) == {options[0]: False, options[1]: False}
