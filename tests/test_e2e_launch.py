"""The launch-command builder and the flag reader (pure), and the committed per-version validation."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from lab.e2e.probe import check_on_values
from lab.e2e.validate import DEFAULT_OUT, default_matrix_versions, parse_probe_output, result_status, summarize
from pcgkit.e2e.launch import LaunchPlanError, build_launch
from pcgkit.sglang import facts as sglang_facts
from pcgkit.sglang.facts import PiecewiseFlags

SOURCES = Path(__file__).resolve().parent / "data" / "sglang_source"


def _facts(version: str) -> PiecewiseFlags:
    """The facts the one reader (pcgkit.sglang.facts) gives for a real sglang source excerpt."""
    config = SOURCES / version / "cuda_graph_config.py.txt"
    prefill = sglang_facts.prefill_default_from_source(config.read_text()) if config.exists() else None
    text = (SOURCES / version / "server_args.txt").read_text()
    return sglang_facts.flags_from_source({"server_args": text}, version, prefill, "test")


@pytest.mark.parametrize(
    "version, piecewise_args, how",
    [
        pytest.param("0.5.3.post2", ("--enable-piecewise-cuda-graph",), "opt-in: --enable-piecewise-cuda-graph",
                     id="0.5.3.post2"),
        pytest.param("0.5.8", ("--enable-piecewise-cuda-graph",), "opt-in: --enable-piecewise-cuda-graph", id="0.5.8"),
        # on by default; the deprecated no-op --enable-... is never passed, the real --enforce-... is
        pytest.param("0.5.10.post1", ("--enforce-piecewise-cuda-graph",),
                     "on by default (never passing --disable-piecewise-cuda-graph); forced: --enforce-piecewise-cuda-graph",
                     id="0.5.10.post1"),
        # opt-in through the prefill backend; --enforce-... is only a deprecated alias of the same choice
        pytest.param("0.5.16", ("--cuda-graph-backend-prefill", "tc_piecewise"),
                     "opt-in: --cuda-graph-backend-prefill tc_piecewise", id="0.5.16"),
    ],
)
def test_launch_argv_per_release_from_real_source(version, piecewise_args, how):
    """Each generation of flags (real sglang source) gives clean argv tokens: no deprecated alias, no decoration."""
    plan = build_launch(_facts(version), python="python", model_path="/m", port=1)
    assert plan.how == how
    assert plan.argv[-len(piecewise_args):] == piecewise_args
    assert all(" " not in token and "[" not in token for token in plan.argv)
    assert "--disable-piecewise-cuda-graph" not in plan.argv


def test_release_without_tc_piecewise_has_no_plan():
    """0.5.23 (real source: tc_piecewise removed) cannot be launched: LaunchPlanError naming what it offers."""
    with pytest.raises(LaunchPlanError, match="no flag that turns piecewise CUDA graphs on.*no tc_piecewise"):
        build_launch(_facts("0.5.23"), python="python", model_path="/m", port=1)


def test_unknown_default_still_passes_the_enable_argv():
    """Where the prefill default could not be read, the plan passes the enable argv rather than trusting a default."""
    flags = sglang_facts.flags_from_source({"s": (SOURCES / "0.5.16" / "server_args.txt").read_text()}, "0.5.16", None, "t")
    assert flags.default_state == "unknown"
    assert build_launch(flags, python="p", model_path="/m", port=1).argv[-2:] == ("--cuda-graph-backend-prefill", "tc_piecewise")


def test_opt_in_launch_carries_model_port_host_and_quantization():
    """The plan runs sglang.launch_server on the model, loopback host and port, with modelopt_fp4."""
    plan = build_launch(_facts("0.5.8"), python="/v/bin/python", model_path="/m", port=31000)
    assert plan.argv[:3] == ("/v/bin/python", "-m", "sglang.launch_server")
    args = plan.server_args
    assert args[args.index("--model-path") + 1] == "/m" and args[args.index("--port") + 1] == "31000"
    assert args[args.index("--host") + 1] == "127.0.0.1"
    assert args[args.index("--quantization") + 1] == "modelopt_fp4"


def test_facts_round_trip_through_their_recorded_dict():
    """PiecewiseFlags.from_dict(to_dict()) is the same value (the validation file stores the dict); unknown keys fail."""
    for version in ("0.5.8", "0.5.10.post1", "0.5.16", "0.5.23"):
        flags = _facts(version)
        assert PiecewiseFlags.from_dict(json.loads(json.dumps(flags.to_dict()))) == flags
    with pytest.raises(ValueError, match="default_on"):
        PiecewiseFlags.from_dict({**_facts("0.5.8").to_dict(), "default_on": False})


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
    assert set(default_matrix_versions()) <= set(by_version), "re-run `bin/pcgkit lab validate-launch`"
    assert data["all_ok"], [r["summary"] for r in data["results"] if r["status"] == "failed"]
    for version, row in by_version.items():
        assert row["status"] in ("ok", "not-applicable"), (version, row["summary"])
        flags = PiecewiseFlags.from_dict(row["probe"]["flags"])
        assert flags.sglang == version and flags.source == sglang_facts.ARGPARSE_SOURCE
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
    from lab.e2e.validate import declared_pins

    assert declared_pins(metadata, ("transformers", "tokenizers", "compressed-tensors")) == [
        "transformers==4.57.1", "tokenizers==0.23.2"]


def test_on_values_are_judged_by_the_parsed_value():
    """The probe's check: each named field must hold its 'on' value (an enum by its value); an override fails it."""
    import enum

    class Backend(enum.Enum):  # SGLang's cuda_graph_config.Backend stores members, not strings
        TC_PIECEWISE = "tc_piecewise"
        BREAKABLE = "breakable"

    on = (("cuda_graph_backend_prefill", "tc_piecewise"),)
    found, missing = check_on_values(on, argparse.Namespace(cuda_graph_backend_prefill=Backend.TC_PIECEWISE))
    assert (found, missing) == ({"cuda_graph_backend_prefill": "tc_piecewise"}, [])
    _, missing = check_on_values(on, argparse.Namespace(cuda_graph_backend_prefill=Backend.BREAKABLE))
    assert missing == ["cuda_graph_backend_prefill='breakable' (want 'tc_piecewise')"]
    _, missing = check_on_values(on, argparse.Namespace())
    assert "no such field" in missing[0]
    assert check_on_values((), argparse.Namespace()) == ({}, ["the facts name no field to check"])


def test_control_launch_has_no_quantization_and_the_environment_flags_come_last():
    """quantization=None drops --quantization; extra args (PCGKIT_E2E_SERVER_ARGS) follow the piecewise flags."""
    from pcgkit.e2e.launch import SERVER_ARGS_ENV, server_args_from_env

    extra = server_args_from_env({SERVER_ARGS_ENV: "--attention-backend triton --mem-fraction-static 0.3"})
    plan = build_launch(_facts("0.5.10.post1"), python="p", model_path="/m", port=1, quantization=None, extra_args=extra)
    assert "--quantization" not in plan.argv
    assert plan.argv[-4:] == ("--attention-backend", "triton", "--mem-fraction-static", "0.3")
    assert plan.argv.index("--enforce-piecewise-cuda-graph") < plan.argv.index("--attention-backend")
    assert server_args_from_env({}) == ()
