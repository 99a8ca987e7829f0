"""The workaround's cost: pure figures and summaries, the committed measurement (its medians recomputed from
its own raw numbers), and the benchmark end to end against a stand-in server (no GPU here)."""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
from pathlib import Path

import pytest

from lab.e2e import cost_file as cost

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
    assert doc["device"] == "NVIDIA H200 (SM90, CC 9.0)" and doc["date"] == "2026-12-05" and "parameters" in doc["model"]
    assert set(doc["phases"]) == set(cost.PHASES) and all(doc["phases"][p]["summary"] for p in cost.PHASES)
    for figure in doc["phases"][cost.PREFILL]["figures"] + doc["phases"][cost.DECODE]["figures"]:
        for state in ("on", "off"):
            assert figure[state] == pytest.approx(statistics.median(figure["raw_s"][state]) * 1000, abs=1e-3)
    for run in doc["runs"]:
        assert run["raw"]["on"]["piecewise_captured"] is True and run["raw"]["off"]["piecewise_captured"] is False
        assert run["raw"]["breakable"]["piecewise_captured"] is True
        assert all(run["raw"][mode]["group_left_after_stop"] == [] for mode in ("on", "off", "breakable"))


def _bench():
    spec = importlib.util.spec_from_file_location("piecewise_cost_under_test", ROOT / "benchmarks" / "piecewise_cost.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_benchmark_end_to_end_against_a_stand_in_server(tmp_path, monkeypatch):
    """The benchmark launches off then on through the kit's launcher (the release's own switch), measures,
    stops each server with nothing left, and writes a document with both runs' raw numbers and figures."""
    from pcgkit.e2e import launch as launch_mod
    from pcgkit.harness.hardware import Device
    from pcgkit.sglang import facts

    bench = _bench()
    flags = facts.PiecewiseFlags("0.0.test", facts.ON_BY_DEFAULT, None, "--disable-piecewise-cuda-graph",
                                 "--enforce-piecewise-cuda-graph", (), facts.ARGPARSE_SOURCE,
                                 force_argv=("--enforce-piecewise-cuda-graph",))
    monkeypatch.setattr(bench.sglang_facts, "piecewise_flags", lambda: flags)
    monkeypatch.setattr(bench.hardware, "detect_cuda_devices", lambda: (Device("stand-in GPU (test)", (9, 0)),))
    monkeypatch.setattr(bench, "PROMPT_TOKENS", (16, 64))
    real = launch_mod.build_launch

    def stand_in(flags, **kwargs):
        plan = real(flags, **kwargs)
        return launch_mod.LaunchPlan((sys.executable, str(STAND_IN), *plan.argv[3:]), plan.how)

    monkeypatch.setattr(launch_mod, "build_launch", stand_in)
    assert bench.main(["--out", str(tmp_path), "--repeats", "3"]) == 0
    doc = json.loads((tmp_path / "piecewise-cost.json").read_text())
    on, off = doc["raw"]["on"], doc["raw"]["off"]
    assert "--disable-piecewise-cuda-graph" in off["argv"] and "--enforce-piecewise-cuda-graph" in on["argv"]
    assert on["piecewise_captured"] and not off["piecewise_captured"] and on["group_left_after_stop"] == []
    decode = doc["phases"][cost.DECODE]["figures"]
    assert [f["batch"] for f in decode] == [1, 4] and all(f["on"] > 0 for f in decode)


# Issue 40: three modes, batched prefill, spread, per-model figures, the SM90 label, outputs compared.

def _three_modes() -> dict:
    runs = {"on": _run(0.008, 0.001, 60.0, 3.0), "off": _run(0.010, 0.001, 55.0, None), "breakable": _run(0.009, 0.001, 58.0, 1.0)}
    for mode, wall in (("on", 0.02), ("off", 0.03), ("breakable", 0.025)):
        runs[mode]["prefill_batched"] = {"4": {"16": [wall, wall * 1.1, wall * 0.9]}}
    return runs


def test_three_modes_give_breakable_ratios_batched_prefill_and_the_spread_of_the_repeats():
    """breakable / off beside on / off; 4 prompts at once as its own figure (throughput counts 4 x 16 tokens); spread per mode."""
    figs = cost.figures(_three_modes())
    single = next(f for f in figs if f["phase"] == cost.PREFILL and f["prompt_tokens"] == 16 and "batch" not in f)
    assert (single["on"], single["off"], single["breakable"]) == (8.0, 10.0, 9.0)
    assert single["ratio_breakable_over_off"] == 0.9 and single["spread"]["off"]["n"] == 3
    batched = next(f for f in figs if f.get("batch") == 4 and f["phase"] == cost.PREFILL)
    assert batched["ratio_on_over_off"] == pytest.approx(0.667, abs=1e-3)
    assert batched["throughput_tokens_per_s"]["on"] == pytest.approx(64 / 0.02, rel=1e-3)
    assert batched["spread"]["on"]["spread_pct"] == pytest.approx(20.0, abs=0.1)
    ready = next(f for f in figs if f["name"] == "launch to /health ready")
    assert ready["breakable"] == 58.0 and ready["ratio_breakable_over_off"] == pytest.approx(1.055, abs=1e-3)
    lines = cost.summaries(figs)
    assert "breakable CUDA graph / off: 0.83x to 0.90x" in lines[cost.PREFILL] and "4 prompts at once" in lines[cost.PREFILL]
    assert "3+ timed repeats per figure" in lines[cost.PREFILL] and "58.0 s breakable" in lines[cost.STARTUP]


def test_old_two_mode_runs_summarise_exactly_as_before():
    """Runs with only on and off (the 2026-12-01 records) keep their figure keys and summary wording; only spread is added."""
    figs = cost.figures({"on": _run(0.008, 0.001, 60.0, 3.0), "off": _run(0.010, 0.001, 55.0, None)})
    assert all("breakable" not in f and "ratio_breakable_over_off" not in f for f in figs)
    assert cost.summaries(figs)[cost.DECODE].startswith(
        "decode step time on / off: 1.00x at batch 1 (decode uses the regular CUDA graphs either way)")


def test_arch_label_names_the_measured_family():
    """Compute capability 9.0 is SM90 (the family the numbers speak for); 12.0 would be SM120."""
    assert (cost.arch_label("9.0"), cost.arch_label((12, 0)), cost.arch_label(None)) == ("SM90", "SM120", None)


def test_committed_measurement_is_regenerated_by_code_from_the_recorded_runs():
    """fixtures/measurements/piecewise-cost.json is exactly `combine` over the 2026-12-05 H200 sample's two documents
    (Llama-3.1-8B and Llama-3.2-1B shapes, each `assemble`d from its mode records), per model, labelled SM90."""
    sample = ROOT / "reports" / "samples" / "cost-real-shapes-h200-2026-12-05"
    docs = [json.loads((sample / run / "piecewise-cost.json").read_text()) for run in ("cost-llama-3.1-8b", "cost-llama-3.2-1b")]
    combined = cost.combine(docs)
    committed = json.loads(MEASUREMENT.read_text())
    assert combined == {k: v for k, v in committed.items() if k != "by_release"}
    h100 = ROOT / "reports" / "samples" / "first-try-h100-2026-12-07"  # add-release of 2026-12-07 (issue 48)
    assert committed["by_release"] == {r: cost.combine([json.loads((h100 / f"cost-{r}" / "piecewise-cost.json").read_text())])
                                       for r in ("0.5.11", "0.5.12")}
    assert {r: (d["versions"]["sglang"], d["device"]) for r, d in committed["by_release"].items()} == {
        r: (r, "NVIDIA H100 80GB HBM3 (SM90, CC 9.0)") for r in ("0.5.11", "0.5.12")}
    assert combined["arch"] == "SM90" and [m["runs"] for m in combined["per_model"]] == [[0], [1]]
    assert [m["parameters"] for m in combined["per_model"]] == [8_030_261_248, 1_235_814_400]
    assert [r["modes"] for r in combined["runs"]] == [["off", "on", "breakable"]] * 2
    assert all("raw_s" not in f for m in combined["per_model"] for b in m["phases"].values() for f in b["figures"])


def test_the_advice_reads_per_model_figures_and_still_reads_files_without_them():
    """parse_cost: the committed file's two models as the table's columns, the breakable runner's table and the start-up
    line; a file of the older form (no arch, no per_model) gives the same tables."""
    from pcgkit.advice.load import parse_cost

    table, breakable, capture, by_release = parse_cost(json.loads(MEASUREMENT.read_text()))
    assert table.models == ("8.03 B (llama-3.1-8b shape)", "1.24 B (llama-3.2-1b shape)") and breakable is not None
    assert table.sglang == "0.5.12" and "16.3 s on the 8.03 B" in capture
    assert [(t.sglang, t.device, t.date) for t in by_release] == [("0.5.11", "H100 80GB HBM3", "2026-12-07"),
                                                                 ("0.5.12", "H100 80GB HBM3", "2026-12-07")]
    old = {k: v for k, v in json.loads(MEASUREMENT.read_text()).items() if k not in ("arch", "per_model", "by_release")}
    assert parse_cost(old) == (table, breakable, capture, ())


def test_assemble_builds_both_documents_from_the_mode_records_and_refuses_without_the_baseline():
    """assemble(): the cost document over off/on/breakable and the outputs comparison; no off record is an error."""
    bench = _bench()
    runs = _three_modes()
    gen = {"A": [{"output_ids": [5, 6, 7], "top2_gap": [1.0, 1.0, 1.0]}], "B": [{"output_ids": [5, 6, 7], "top2_gap": [1.0] * 3}]}
    records = {m: {**r, "piecewise_how": m, "generations": gen} for m, r in runs.items()}
    context = {"device": "NVIDIA H200 (SM90, CC 9.0)", "device_detail": {"compute_capability": "9.0"}, "model": "m",
               "model_detail": {"parameters": 1}, "date": "2026-12-05", "versions": {"sglang": "0.5.12"}, "launch": {},
               "method": "", "cache_state": "", "generation_prompts": [[4, 5]], "generation_tokens": 3}
    doc, outs = bench.assemble(context, records)
    assert doc["arch"] == "SM90" and doc["modes"] == ["off", "on", "breakable"] and "generations" not in doc["raw"]["on"]
    assert outs["summary"][-1] == "breakable vs off: 1/1 prompts identical (3 tokens compared)"
    combined = cost.combine([doc])["per_model"][0]["phases"][cost.PREFILL]["summary"]
    assert combined.count("breakable CUDA graph / off") == 1 and "3+ timed repeats per figure" in combined
    with pytest.raises(ValueError, match="baseline"):
        bench.assemble(context, {"on": records["on"], "breakable": records["breakable"]})


def test_benchmark_three_modes_and_outputs_against_the_stand_in(tmp_path, monkeypatch):
    """--modes off,on,breakable with --generations: each mode's record is written, breakable gets the release's flag,
    and both documents are rebuilt from the records (the stand-in generates the same ids in every mode)."""
    from pcgkit.e2e import launch as launch_mod
    from pcgkit.harness.hardware import Device
    from pcgkit.sglang import facts

    bench = _bench()
    flags = facts.PiecewiseFlags("0.0.test", facts.ON_BY_DEFAULT, None, "--disable-piecewise-cuda-graph",
                                 "--enforce-piecewise-cuda-graph", (), facts.ARGPARSE_SOURCE,
                                 force_argv=("--enforce-piecewise-cuda-graph",))
    monkeypatch.setattr(bench.sglang_facts, "piecewise_flags", lambda: flags)
    monkeypatch.setattr(bench.lab_facts, "breakable_argv", lambda: (facts.BREAKABLE_SWITCH,))
    monkeypatch.setattr(bench.hardware, "detect_cuda_devices", lambda: (Device("stand-in GPU (test)", (9, 0)),))
    real = launch_mod.build_launch

    def stand_in(flags, **kwargs):
        plan = real(flags, **kwargs)
        return launch_mod.LaunchPlan((sys.executable, str(STAND_IN), *plan.argv[3:]), plan.how)

    monkeypatch.setattr(launch_mod, "build_launch", stand_in)
    args = ["--out", str(tmp_path), "--repeats", "2", "--prompt-tokens", "16", "--prefill-batches", "1,2",
            "--decode-batches", "1", "--decode-steps", "4", "--generations", "2", "--gen-tokens", "4"]
    assert bench.main([*args, "--modes", "off"]) == 0 and not (tmp_path / "piecewise-cost.json").exists()
    assert bench.main([*args, "--modes", "on,breakable"]) == 0  # a later call into the same folder
    assert sorted(p.name for p in tmp_path.glob("server-*.json")) == ["server-breakable.json", "server-off.json", "server-on.json"]
    doc = json.loads((tmp_path / "piecewise-cost.json").read_text())
    assert "--enable-breakable-cuda-graph" in doc["raw"]["breakable"]["argv"]
    assert "--enable-breakable-cuda-graph" not in doc["raw"]["on"]["argv"] and doc["device"].startswith("stand-in GPU (test) (SM90,")
    assert any(f.get("batch") == 2 for f in doc["phases"][cost.PREFILL]["figures"])
    outs = json.loads((tmp_path / "outputs-unchanged.json").read_text())
    assert outs["summary"] == ["off run-to-run (A vs B): 2/2 prompts identical (8 tokens compared)",
                               "on run-to-run (A vs B): 2/2 prompts identical (8 tokens compared)",
                               "breakable run-to-run (A vs B): 2/2 prompts identical (8 tokens compared)",
                               "on vs off: 2/2 prompts identical (8 tokens compared)",
                               "breakable vs off: 2/2 prompts identical (8 tokens compared)"]


def test_the_device_recipe_passes_arguments_the_benchmark_accepts(tmp_path):
    """benchmarks/device_real_shapes: COST_ARGS (lib.sh) and each call's --shape/--modes parse with the benchmark's
    own parser, so a typo costs no device time; the modes together cover off, on and breakable for both shapes."""
    import re
    import subprocess

    recipe = ROOT / "benchmarks" / "device_real_shapes"
    env = {"PATH": "/usr/bin:/bin", "P40": str(tmp_path / "p"), "R40": str(tmp_path / "r")}
    printed = subprocess.run(["bash", "-c", f"source {recipe / 'lib.sh'} && printf '%s\\0' \"${{COST_ARGS[@]}}\""],
                             capture_output=True, env=env, check=True).stdout.decode()
    cost_args = printed.rstrip("\0").split("\0")
    parser = _bench().build_parser()
    covered: dict[str, set] = {}
    for script in sorted(recipe.glob("call*.sh")):
        for shape, modes in re.findall(r"--shape (\S+) --modes (\S+)", script.read_text()):
            args = parser.parse_args(["--out", "x", "--shape", shape, "--modes", modes, *cost_args])
            assert args.repeats >= 5 and args.prompt_tokens == (128, 512, 2048, 8192) and args.generations == 8
            covered.setdefault(shape, set()).update(args.modes)
    assert covered == {"llama-3.1-8b": set(cost.MODES), "llama-3.2-1b": set(cost.MODES)}


def test_model_label_names_a_named_shape_by_its_published_architecture_and_size(tmp_path):
    """A named shape is labelled by name, layers, hidden size and billions of parameters counted from its files."""
    from pcgkit.e2e.checkpoint import NAMED_SHAPES, TinyLlamaShape, write_bf16_shards

    bench = _bench()
    assert bench.model_label(NAMED_SHAPES["llama-3.1-8b"], 8_030_261_248) == (
        "llama-3.1-8b shape with random bf16 weights: 32 layers, hidden 4096, 8.03 B parameters")
    assert bench.model_label(TinyLlamaShape(), 1_312_000).endswith("2 layers, hidden 256, 1.31 M parameters")
    write_bf16_shards(tmp_path, TinyLlamaShape(), max_bytes=1 << 20)  # several shards: counted from every file
    assert len(list(tmp_path.glob("*.safetensors"))) > 1 and bench._parameters(tmp_path) == 1_312_000


def test_a_mode_the_release_lacks_stops_the_benchmark_before_any_checkpoint_or_launch(tmp_path, monkeypatch):
    """--modes off,breakable on a release whose parser has no breakable switch exits with a one-line reason, nothing written."""
    from pcgkit.harness.hardware import Device

    bench = _bench()
    monkeypatch.setattr(bench.hardware, "detect_cuda_devices", lambda: (Device("stand-in GPU (test)", (9, 0)),))
    monkeypatch.setattr(bench.sglang_facts, "piecewise_flags", lambda: None)
    monkeypatch.setattr(bench.lab_facts, "breakable_argv", lambda: None)
    monkeypatch.setattr(bench.sglang_facts, "installed_version", lambda name: "0.5.10")
    with pytest.raises(SystemExit, match="sglang 0.5.10 has no breakable CUDA graph"):
        bench.main(["--out", str(tmp_path / "o"), "--modes", "off,breakable"])
    assert list((tmp_path / "o").iterdir()) == []


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
    """The committed measurement's sentence: the worst case with its model, the SM90 H200, the release and the date,
    random-weight models said; no signed figure (the table on docs/answers.md has each model's own column)."""
    from pcgkit.advice import cost_statement, load_evidence

    text = cost_statement(load_evidence()).text
    assert "NVIDIA H200 (SM90, CC 9.0), SGLang 0.5.12, 2026-12-05" in text
    assert "up to 80 % slower with piecewise off (4 prompts of 128 tokens at once, 8.03 B" in text
    assert "random-weight bf16 checkpoints" in text and "+" not in text and "docs/answers.md#cost" in text


def test_graph_limit_is_the_last_flag_on_the_command_line():
    """The piecewise graphs' token limit is the LAST --piecewise-cuda-graph-max-tokens (argparse keeps it): the
    2026-12-05 servers got 256 from the payload's arguments, then 8192; 512-8192-token prompts are served, not noise."""
    run = _model_run("m", 1_000, {128: (1.0, 1.1), 8192: (2.0, 2.0)}, (1.0, 1.0))
    run["raw"] = {"off": {"argv": ["x"]}, "on": {"argv": ["--piecewise-cuda-graph-max-tokens", "256",
                                                          "--piecewise-cuda-graph-max-tokens", "8192"]}}
    assert cost.graph_max_tokens(run) == 8192
    effect, = cost.model_effects({"runs": [run]})
    assert [t for t, _ in effect.served] == [128, 8192] and effect.first_launched == ("off",)
    del run["raw"]
    run["launch"] = {"server_args_env": "--piecewise-cuda-graph-max-tokens 256", "common_extra_args":
                     ["--piecewise-cuda-graph-max-tokens", "8192"]}
    assert cost.graph_max_tokens(run) == 8192


def test_a_releases_runs_are_kept_under_that_release_and_never_mixed():
    """add-release: one SGLang release's runs combined under by_release[<release>], the top level untouched; runs of
    two releases at once are refused, so a figure cannot be filed under another release."""
    bench = _bench()
    committed = {k: v for k, v in json.loads(MEASUREMENT.read_text()).items() if k != bench.BY_RELEASE}
    sample = ROOT / "reports" / "samples" / "cost-real-shapes-h200-2026-12-05" / "cost-llama-3.1-8b" / "piecewise-cost.json"
    run = json.loads(sample.read_text())
    older = {**run, "versions": {**run["versions"], "sglang": "0.5.11"}}
    added = bench.with_release(committed, [older])
    assert {k: v for k, v in added.items() if k != bench.BY_RELEASE} == committed
    assert list(added[bench.BY_RELEASE]) == ["0.5.11"] and added[bench.BY_RELEASE]["0.5.11"]["versions"]["sglang"] == "0.5.11"
    again = bench.with_release(added, [run])
    assert list(again[bench.BY_RELEASE]) == ["0.5.11", "0.5.12"] and again[bench.BY_RELEASE]["0.5.11"] == added[bench.BY_RELEASE]["0.5.11"]
    with pytest.raises(ValueError, match="one SGLang release; these are of \\['0.5.11', '0.5.12'\\]"):
        bench.with_release(committed, [older, run])
