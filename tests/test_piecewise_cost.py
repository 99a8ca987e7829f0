"""The workaround's cost: pure figures and summaries, the committed measurement (its medians recomputed from
its own raw numbers), and the benchmark end to end against a stand-in server (no GPU here)."""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
from pathlib import Path

import pytest

from pcgkit.e2e import cost

ROOT = Path(__file__).resolve().parent.parent
MEASUREMENT = ROOT / "fixtures" / "measurements" / "piecewise-cost.json"
STAND_IN = ROOT / "tests" / "data" / "stand_in" / "sglang_like_server.py"


def _run(prefill_s: float, decode_s: float, ready_s: float, capture_s: float | None) -> dict:
    startup = {"ready_s": ready_s, **({"piecewise_capture_s": capture_s} if capture_s is not None else {})}
    return {"prefill": {"16": [prefill_s] * 3, "1024": [prefill_s * 2] * 3},
            "decode": {"1": {"per_token_s": [decode_s] * 3}}, "startup": startup}


def test_figures_carry_phase_unit_medians_and_on_over_off():
    """Prefill per prompt length, decode per batch, start-up per quantity; ratio = on / off of the medians."""
    figs = cost.figures({"on": _run(0.008, 0.001, 60.0, 3.0), "off": _run(0.010, 0.001, 55.0, None)})
    prefill = [f for f in figs if f["phase"] == cost.PREFILL]
    assert [(f["prompt_tokens"], f["on"], f["off"], f["ratio_on_over_off"]) for f in prefill] == [
        (16, 8.0, 10.0, 0.8), (1024, 16.0, 20.0, 0.8)]
    (decode,) = [f for f in figs if f["phase"] == cost.DECODE]
    assert decode["ratio_on_over_off"] == 1.0 and decode["throughput_tokens_per_s"]["on"] == 1000.0
    startup = {f["name"]: f for f in figs if f["phase"] == cost.STARTUP}
    assert startup["launch to /health ready"]["ratio_on_over_off"] == pytest.approx(1.091, abs=1e-3)
    assert startup["piecewise CUDA graph capture (SGLang's log)"]["off"] is None


def test_combine_keeps_every_run_and_refuses_two_devices():
    """Runs of one device combine (summary spans their ratios, each figure names its run); two devices do not."""
    runs = {"on": _run(0.008, 0.001, 60.0, 3.0), "off": _run(0.010, 0.001, 55.0, None)}
    runs["on"]["argv"] = ["python3", "-m", "sglang.launch_server", "--model-path", "/tmp/x/tiny-bf16"]
    doc = cost.document(device="GPU (CC 9.0)", device_detail={}, model="m", model_detail={}, date="2026-12-01",
                        versions={}, runs=runs, launch={}, method="", cache_state="")
    both = cost.combine([doc, {**doc, "model": "m2"}])
    assert both["model"] == "m; m2" and len(both["runs"]) == 2
    assert {f["run"] for f in both["phases"][cost.PREFILL]["figures"]} == {0, 1}
    assert "on m turning piecewise off made prefill 25 % slower" in both["phases"][cost.PREFILL]["summary"]
    assert "/tmp" not in json.dumps(both)  # committed data carries no temporary paths
    with pytest.raises(ValueError, match="different devices"):
        cost.combine([doc, {**doc, "device": "other"}])


def test_committed_measurement_is_real_dated_and_recomputable_from_its_raw_numbers():
    """fixtures/measurements/piecewise-cost.json: the advice model's schema, a real device and date, every
    phase summarised, and each prefill/decode median equal to the median of the raw values stored beside it."""
    doc = json.loads(MEASUREMENT.read_text())
    assert doc["schema"] == cost.COST_SCHEMA and doc["simulated"] is False
    assert doc["device"] == "NVIDIA H200 (CC 9.0)" and doc["date"] == "2026-12-01" and "parameters" in doc["model"]
    assert set(doc["phases"]) == set(cost.PHASES) and all(doc["phases"][p]["summary"] for p in cost.PHASES)
    for figure in doc["phases"][cost.PREFILL]["figures"] + doc["phases"][cost.DECODE]["figures"]:
        for state in ("on", "off"):
            assert figure[state] == pytest.approx(statistics.median(figure["raw_s"][state]) * 1000, abs=1e-3)
    for run in doc["runs"]:
        assert run["raw"]["on"]["piecewise_captured"] is True and run["raw"]["off"]["piecewise_captured"] is False
        assert run["raw"]["on"]["group_left_after_stop"] == [] == run["raw"]["off"]["group_left_after_stop"]


def test_benchmark_end_to_end_against_a_stand_in_server(tmp_path, monkeypatch):
    """The benchmark launches off then on through the kit's launcher (the release's own switch), measures,
    stops each server with nothing left, and writes a document with both runs' raw numbers and figures."""
    from pcgkit.e2e import launch as launch_mod
    from pcgkit.harness.hardware import Device
    from pcgkit.sglang import facts

    spec = importlib.util.spec_from_file_location("piecewise_cost_under_test", ROOT / "benchmarks" / "piecewise_cost.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    flags = facts.PiecewiseFlags("0.0.test", facts.ON_BY_DEFAULT, None, "--disable-piecewise-cuda-graph",
                                 "--enforce-piecewise-cuda-graph", (), facts.ARGPARSE_SOURCE,
                                 force_argv=("--enforce-piecewise-cuda-graph",))
    monkeypatch.setattr(bench.sglang_facts, "piecewise_flags", lambda: flags)
    monkeypatch.setattr(bench.hardware, "detect_cuda_devices", lambda: (Device("stand-in GPU (test)", (9, 0)),))
    monkeypatch.setattr(bench, "PROMPT_TOKENS", (16, 64))
    real = launch_mod.build_launch

    def stand_in(flags, **kwargs):
        plan = real(flags, **kwargs)
        return launch_mod.LaunchPlan((sys.executable, str(STAND_IN), *plan.argv[3:]), plan.piecewise_args, plan.how)

    monkeypatch.setattr(launch_mod, "build_launch", stand_in)
    assert bench.main(["--out", str(tmp_path), "--repeats", "3"]) == 0
    doc = json.loads((tmp_path / "piecewise-cost.json").read_text())
    on, off = doc["raw"]["on"], doc["raw"]["off"]
    assert "--disable-piecewise-cuda-graph" in off["argv"] and "--enforce-piecewise-cuda-graph" in on["argv"]
    assert on["piecewise_captured"] and not off["piecewise_captured"] and on["group_left_after_stop"] == []
    decode = doc["phases"][cost.DECODE]["figures"]
    assert [f["batch"] for f in decode] == [1, 4] and all(f["on"] > 0 for f in decode)


def _model_run(model: str, parameters: int, prefill_on_off: dict[int, tuple[float, float]],
               decode_on_off: tuple[float, float]) -> dict:
    """A combined file's run: prefill medians per prompt length, one decode batch, graphs serving up to 256 tokens."""
    prefill = [{"phase": cost.PREFILL, "prompt_tokens": t, "on": on, "off": off} for t, (on, off) in prefill_on_off.items()]
    decode = [{"phase": cost.DECODE, "batch": 1, "on": decode_on_off[0], "off": decode_on_off[1]}]
    return {"model": model, "model_detail": {"parameters": parameters},
            "launch": {"server_args_env": "--piecewise-cuda-graph-max-tokens 256"},
            "phases": {cost.PREFILL: {"figures": prefill}, cost.DECODE: {"figures": decode}, cost.STARTUP: {"figures": []}}}


def test_cost_sentence_names_each_model_separately_with_its_noise():
    """Two models whose prefill effects have opposite signs are never pooled: each gets its own sentence, its own
    run count, and the noise of what the graphs do not serve (the 1024-token prompt, decode) in the same runs."""
    small = [_model_run("small", 1_312_000, {16: (8.0, 10.0), 256: (8.0, 9.0), 1024: (9.0, 10.0)}, (1.0, 1.2)),
             _model_run("small", 1_312_000, {16: (8.0, 8.4), 256: (8.0, 8.8), 1024: (9.0, 9.0)}, (1.0, 1.0))]
    large = [_model_run("large", 38_282_240, {16: (10.0, 9.0), 256: (10.0, 10.5), 1024: (15.0, 12.0)}, (1.0, 1.1))]
    small_effect, large_effect = cost.model_effects({"runs": small + large})
    assert small_effect.runs == 2 and large_effect.runs == 1
    assert small_effect.served == ((16, (25.0, 5.0)), (256, (12.5, 10.0)))  # 1024 > 256: not served, noise
    assert small_effect.run_to_run == 20.0 and small_effect.noise == 20.0
    assert large_effect.run_to_run is None and large_effect.noise == 20.0
    small_text, large_text = cost.effect_sentence(small_effect), cost.effect_sentence(large_effect)
    assert small_text.startswith("on a 1.31 M-parameter model turning piecewise off made prefill 5-25 % slower")
    assert "2 runs, which differed by up to 20 points" in small_text and "noise of up to 20 %" in small_text
    assert large_text.startswith("on a 38.28 M-parameter model turning piecewise off changed prefill between 10 % "
                                 "faster and 5 % slower") and "1 run)" in large_text
    for text in (small_text, large_text):
        assert "median" not in text and "x " not in text and "takes" not in text  # no pooled median, no reciprocal


def test_committed_cost_is_stated_per_model_in_user_words():
    """The committed measurement's statement names the 1.31 M and the 38.28 M parameter models separately, says it
    was not measured at a real model's size, and labels every launch-to-ready figure as on minus off."""
    from pcgkit.advice import cost_statement, load_evidence

    text = cost_statement(load_evidence()).text
    assert "on a 1.31 M-parameter model turning piecewise off made prefill" in text
    assert "on a 38.28 M-parameter model turning piecewise off changed prefill" in text
    assert "not measured at a real model's size" in text and "median" not in text and "vs" not in text
    assert "launch to ready with piecewise on minus off" in text
