"""The workshop's writer of the committed cost file: raw timings of the same server with piecewise CUDA graphs on
and off, turned into per-phase figures and ratios. Pure (no I/O): benchmarks/piecewise_cost.py measures, this module
summarises, fixtures/measurements/piecewise-cost.json is the result; users only read it, through the package's cost
table (pcgkit.advice.cost), so this lives in lab/ (issue 45).

Phases, as SGLang uses the graphs: piecewise CUDA graphs serve prefill/extend batches only (up to
--piecewise-cuda-graph-max-tokens tokens); decode runs on the regular decode CUDA graphs, on or off
alike; start-up pays the piecewise compile and capture.

Modes (MODES): `off` (the workaround, the baseline every ratio divides by), `on` (torch.compile piecewise
graphs) and, where the release has it (SGLang 0.5.11-0.5.13 `--enable-breakable-cuda-graph`),
`breakable` (prefill graphs without torch.compile). A run holds the modes it measured; a figure carries
each mode's median, its spread over the repeats (`spread`), and `ratio_<mode>_over_off`.

Schema: still pcgkit.piecewise-cost/1, extended only by keys old readers ignore (issue 40): `arch`
("SM90": the GPU family the numbers are about, never SM120), per figure `spread` and the breakable
mode's keys, prefill figures with a `batch` (B concurrent prompts), and in the combined file
`per_model` (each model's own per-phase summaries and figures, with its parameters and arch).
"""

from __future__ import annotations

import dataclasses
import re
import statistics
from typing import Mapping

COST_SCHEMA = "pcgkit.piecewise-cost/1"  # the schema id pcgkit.advice.load reads
PREFILL = "prefill/extend"
DECODE = "decode"
STARTUP = "startup"
PHASES = (PREFILL, DECODE, STARTUP)
OFF, ON, BREAKABLE = "off", "on", "breakable"
MODES = (OFF, ON, BREAKABLE)  # OFF is the baseline
COMPARED = (ON, BREAKABLE)


def arch_label(capability: str | tuple[int, int] | None) -> str | None:
    """'9.0' or (9, 0) -> 'SM90'; the family the measurement speaks for. Pure."""
    if capability is None or capability == "":
        return None
    major, minor = (capability.split(".") + ["0"])[:2] if isinstance(capability, str) else capability
    return f"SM{int(major)}{int(minor)}"


def spread(values: list[float]) -> dict | None:
    """n, min, max, median and (max - min) / median in percent of the repeats of one quantity. Pure."""
    if not values:
        return None
    mid = statistics.median(values)
    return {"n": len(values), "min": min(values), "max": max(values), "median": round(mid, 6),
            "spread_pct": round(100 * (max(values) - min(values)) / mid, 1) if mid else None}


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 6) if values else None


def ratio(on: float | None, off: float | None) -> float | None:
    """on / off, or None when either is missing or off is zero."""
    if on is None or off is None or off == 0:
        return None
    return round(on / off, 3)


def _timed_figure(phase: str, name: str, key: dict, raws: dict[str, list[float]], units: int) -> dict:
    """One timed quantity over the modes present: medians in ms, on / off (and breakable / off), spread."""
    medians = {state: median(values) for state, values in raws.items()}
    figure = {"phase": phase, "name": name, **key, "unit": "ms",
              "on": _ms(medians.get(ON)), "off": _ms(medians.get(OFF)), "ratio_on_over_off": ratio(medians.get(ON), medians.get(OFF)),
              "throughput_tokens_per_s": {state: _per_s(units, m) for state, m in medians.items()},
              "raw_s": raws}
    if BREAKABLE in raws:
        figure[BREAKABLE] = _ms(medians[BREAKABLE])
        figure["ratio_breakable_over_off"] = ratio(medians[BREAKABLE], medians.get(OFF))
    figure["spread"] = {state: spread(values) for state, values in raws.items()}
    return figure


def _measured(runs: Mapping[str, Mapping], pick) -> list:
    """Keys (as ints, sorted) that the baseline and at least one compared mode measured."""
    base = {int(k) for k in pick(runs[OFF])}
    other = set().union(*({int(k) for k in pick(runs[m])} for m in COMPARED if m in runs))
    return sorted(base & other)


def figures(runs: Mapping[str, Mapping]) -> list[dict]:
    """One figure per measured quantity: phase, unit, each mode's median, the ratios to off, raw values kept.

    `runs[mode]` (off, on, breakable) is what the benchmark recorded for each server:
      prefill: {prompt_tokens: [latency_s, ...]} (one prompt, 1 new token),
      prefill_batched: {batch: {prompt_tokens: [wall_s, ...]}} (batch prompts at once, 1 new token each),
      decode: {batch: {"per_token_s": [...]}}, startup: {"ready_s", "piecewise_capture_s", "cuda_graph_capture_s"}."""
    modes = [m for m in (ON, OFF, BREAKABLE) if m in runs]
    out: list[dict] = []
    for tokens in _measured(runs, lambda r: r.get("prefill", {})):
        raws = {m: runs[m]["prefill"][str(tokens)] for m in modes if str(tokens) in runs[m].get("prefill", {})}
        out.append(_timed_figure(PREFILL, "prefill latency (1 new token)", {"prompt_tokens": tokens}, raws, tokens))
    for batch in _measured(runs, lambda r: r.get("prefill_batched", {})):
        by_mode = {m: runs[m].get("prefill_batched", {}).get(str(batch), {}) for m in modes}
        for tokens in sorted({int(t) for t in by_mode[OFF]}):
            raws = {m: table[str(tokens)] for m, table in by_mode.items() if str(tokens) in table}
            if len(raws) > 1:
                out.append(_timed_figure(PREFILL, f"prefill wall time ({batch} prompts at once, 1 new token each)",
                                         {"prompt_tokens": tokens, "batch": batch}, raws, tokens * batch))
    for batch in _measured(runs, lambda r: r.get("decode", {})):
        raws = {m: runs[m]["decode"][str(batch)]["per_token_s"] for m in modes if str(batch) in runs[m].get("decode", {})}
        out.append(_timed_figure(DECODE, "decode time per step", {"batch": batch}, raws, batch))
    for key, name in (("ready_s", "launch to /health ready"), ("piecewise_capture_s", "piecewise CUDA graph capture (SGLang's log)"),
                      ("cuda_graph_capture_s", "decode CUDA graph capture (SGLang's log)")):
        values = {m: runs[m].get("startup", {}).get(key) for m in modes}
        if all(v is None for v in values.values()):
            continue
        figure = {"phase": STARTUP, "name": name, "unit": "s", "on": values.get(ON), "off": values.get(OFF),
                  "ratio_on_over_off": ratio(values.get(ON), values.get(OFF))}
        if BREAKABLE in values:
            figure.update({BREAKABLE: values[BREAKABLE], "ratio_breakable_over_off": ratio(values[BREAKABLE], values.get(OFF))})
        out.append(figure)
    return out


def _ms(seconds: float | None) -> float | None:
    return round(seconds * 1000, 3) if seconds is not None else None


def _per_s(tokens: int, seconds: float | None) -> float | None:
    return round(tokens / seconds, 1) if seconds else None


def _range(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return "n/a"
    low, high = min(known), max(known)
    return f"{low:.2f}x" if abs(high - low) < 0.005 else f"{low:.2f}x to {high:.2f}x"


def _spread_clause(figs: list[dict]) -> str:
    """'; N+ timed repeats per figure, each within X% ...' over the figures that carry a spread, else ''."""
    spreads = [s for f in figs for s in (f.get("spread") or {}).values() if s]
    if not spreads:
        return ""
    return (f"; {min(s['n'] for s in spreads)}+ timed repeats per figure, each within "
            f"{max(s['spread_pct'] or 0 for s in spreads):.1f}% (max - min) / median")


def _extras(figs: list[dict]) -> str:
    """The clauses a figure list adds beyond on / off: breakable / off, and the spread of the repeats."""
    breakable = [f.get("ratio_breakable_over_off") for f in figs if BREAKABLE in f]
    return (f"; breakable CUDA graph / off: {_range(breakable)}" if breakable else "") + _spread_clause(figs)


def summaries(figs: list[dict]) -> dict[str, str]:
    """One line per phase, on/off ratios (below 1: piecewise on is faster; the workaround costs 1/ratio)."""
    out = {}
    prefill = [f for f in figs if f["phase"] == PREFILL and "batch" not in f]
    batched = [f for f in figs if f["phase"] == PREFILL and "batch" in f]
    if prefill or batched:
        parts = []
        if prefill:
            parts.append(f"prefill latency with piecewise on / off: {_range([f['ratio_on_over_off'] for f in prefill])} "
                         f"over prompts of {', '.join(str(f['prompt_tokens']) for f in prefill)} tokens")
        for batch in sorted({f["batch"] for f in batched}):
            group = [f for f in batched if f["batch"] == batch]
            parts.append(f"{batch} prompts at once, on / off: {_range([f['ratio_on_over_off'] for f in group])} over "
                         f"{', '.join(str(f['prompt_tokens']) for f in group)} tokens each")
        out[PREFILL] = "; ".join(parts) + _extras(prefill + batched)
    decode = [f for f in figs if f["phase"] == DECODE]
    if decode:
        out[DECODE] = (f"decode step time on / off: {_range([f['ratio_on_over_off'] for f in decode])} at batch "
                       f"{', '.join(str(f['batch']) for f in decode)} (decode uses the regular CUDA graphs either way)"
                       + _extras(decode))
    startup = {f["name"]: f for f in figs if f["phase"] == STARTUP}
    ready = startup.get("launch to /health ready")
    capture = startup.get("piecewise CUDA graph capture (SGLang's log)")
    if ready:
        out[STARTUP] = (f"launch to ready: {ready['on']} s on, {ready['off']} s off"
                        + (f", {ready[BREAKABLE]} s breakable" if ready.get(BREAKABLE) is not None else "")
                        + (f"; piecewise capture {capture['on']} s" if capture and capture.get("on") is not None else "")
                        + (f" ({capture[BREAKABLE]} s breakable)" if capture and capture.get(BREAKABLE) is not None else ""))
    return out


def document(*, device: str, device_detail: dict, model: str, model_detail: dict, date: str, versions: dict,
             runs: Mapping[str, Mapping], launch: dict, method: str, cache_state: str) -> dict:
    """The committed measurement file (schema COST_SCHEMA; `phases` as pcgkit.advice.load.parse_cost reads it)."""
    figs = figures(runs)
    lines = summaries(figs)
    return {
        "schema": COST_SCHEMA,
        "device": device,
        "device_detail": device_detail,
        "model": model,
        "model_detail": model_detail,
        "date": date,
        "simulated": False,
        "versions": versions,
        "method": method,
        "cache_state": cache_state,
        "launch": launch,
        "phases": {phase: {"summary": lines.get(phase, "not measured"),
                           "figures": [f for f in figs if f["phase"] == phase]} for phase in PHASES},
        "raw": {state: dict(run) for state, run in runs.items()},
        "arch": arch_label(device_detail.get("compute_capability")),
        "modes": [m for m in MODES if m in runs],
    }


def render(doc: Mapping) -> str:
    """The ratios as lines for a terminal."""
    lines = [f"piecewise CUDA graphs on vs off -- {doc['device']}, {doc['model']}, {doc['date']}"]
    for phase in PHASES:
        body = doc["phases"][phase]
        lines.append(f"  {phase}: {body['summary']}")
        for f in body["figures"]:
            what = f.get("prompt_tokens", f.get("batch", ""))
            label = f"{f['name']}" + (f" [{'prompt' if 'prompt_tokens' in f else 'batch'} {what}]" if what != "" else "")
            label += f" [batch {f['batch']}]" if "prompt_tokens" in f and "batch" in f else ""
            extra = f", breakable {f[BREAKABLE]} {f['unit']}, breakable/off {f['ratio_breakable_over_off']}" if BREAKABLE in f else ""
            lines.append(f"    {label}: on {f['on']} {f['unit']}, off {f['off']} {f['unit']}, on/off {f['ratio_on_over_off']}{extra}")
    return "\n".join(lines)


def _span(values: list[float | None]) -> str:
    known = sorted(v for v in values if v is not None)
    if not known:
        return "n/a"
    return f"{known[0]:.2f}-{known[-1]:.2f} (median {statistics.median(known):.2f})"


def _combined_phases(indexed: list[tuple[int, dict]]) -> dict[str, dict]:
    """Each phase's summary over several runs' documents (ratios spanned), each figure tagged with its run. Pure."""
    phases: dict[str, dict] = {}
    for phase in PHASES:
        figs = [{**f, "run": i} for i, d in indexed for f in d["phases"][phase]["figures"]]
        ratios = [f["ratio_on_over_off"] for f in figs if f.get("ratio_on_over_off") is not None]
        if phase == PREFILL:
            summary = (f"piecewise on / off prefill latency ratio {_span(ratios)} over {len(indexed)} runs, prompts of "
                       f"{', '.join(sorted({str(f['prompt_tokens']) for f in figs}, key=int))} tokens")
            batches = sorted({f["batch"] for f in figs if "batch" in f})
            if batches:
                summary += f" (batches of 1, {', '.join(map(str, batches))} prompts)"
        elif phase == DECODE:
            summary = (f"decode step time ratio on / off {_span(ratios)} (batches "
                       f"{', '.join(sorted({str(f['batch']) for f in figs}, key=int))}): decode runs on the regular "
                       "CUDA graphs either way")
        else:
            capture = [f["on"] for f in figs if f["name"].startswith("piecewise CUDA graph capture") and f["on"] is not None]
            ready = [f for f in figs if f["name"] == "launch to /health ready"]
            summary = (f"piecewise capture adds {_span(capture)} s at start-up (SGLang's log); launch to ready "
                       + "; ".join(f"{f['on']} s on vs {f['off']} s off" + (f" vs {f[BREAKABLE]} s breakable" if
                                   f.get(BREAKABLE) is not None else "") for f in ready))
        breakable = [f["ratio_breakable_over_off"] for f in figs if f.get("ratio_breakable_over_off") is not None]
        if breakable and phase != STARTUP:
            summary += f"; breakable CUDA graph / off {_span(breakable)}"
        phases[phase] = {"summary": summary + (_spread_clause(figs) if phase != STARTUP else ""), "figures": figs}
    return phases


def per_model(docs: list[dict]) -> list[dict]:
    """Each model's own per-phase summaries and figures over its runs (run = index into `docs`). Pure."""
    out = []
    for model in dict.fromkeys(d["model"] for d in docs):
        indexed = [(i, d) for i, d in enumerate(docs) if d["model"] == model]
        first = indexed[0][1]
        out.append({"model": model, "model_detail": first.get("model_detail", {}),
                    "parameters": first.get("model_detail", {}).get("parameters"),
                    "arch": first.get("arch") or arch_label(first.get("device_detail", {}).get("compute_capability")),
                    "device": first["device"], "runs": [i for i, _ in indexed],
                    "modes": first.get("modes", [ON, OFF]),
                    "phases": {phase: {"summary": body["summary"],  # the raw values stay in `runs` (and the top-level figures)
                                       "figures": [{k: v for k, v in f.items() if k != "raw_s"} for f in body["figures"]]}
                               for phase, body in _combined_phases(indexed).items()}})
    return out


# --- per model, in a user's words --------------------------------------------------------------
# Runs are never pooled across models: the 1.31 M and 38 M parameter models of 2026-12-01 moved prefill in
# opposite directions. What the piecewise graphs do not serve in the same runs (decode, and prompts longer than
# --piecewise-cuda-graph-max-tokens, which run eager either way) is the setup's noise, stated beside the effect.

_MAX_TOKENS = re.compile(r"--piecewise-cuda-graph-max-tokens[ =](\d+)")


@dataclasses.dataclass(frozen=True)
class ModelEffect:
    """What turning piecewise off did on one model, over its runs: percentages by which `off` took longer than
    `on` (negative: off was faster), from the medians of each figure."""

    model: str
    parameters: int | None
    runs: int
    graph_max_tokens: int | None  # the longest prompt the piecewise graphs serve in these runs
    served: tuple[tuple[int, tuple[float, ...]], ...]  # (prompt tokens, % per run) for prompts the graphs serve
    unserved: tuple[tuple[str, tuple[float, ...]], ...]  # ("decode batch 1" / "1024-token prefill", % per run)
    capture_s: tuple[float, ...]  # piecewise capture per run (SGLang's log)
    ready_s: tuple[tuple[float, float], ...]  # (on, off) launch to /health ready per run
    first_launched: tuple[str, ...] = ()  # per run, the mode whose server launched first (its machine the coldest)
    shape: str | None = None  # the published model whose shape the random checkpoint has ("llama-3.1-8b"), if any
    repeats: int | None = None  # the fewest timed repeats behind one served prefill median
    repeat_spread: float | None = None  # the largest (max - min) / median, in %, of those repeats (on or off)
    breakable: tuple[tuple[str, tuple[float, ...]], ...] = ()  # ("128-token prefill" / "decode batch 1", % breakable
    # took longer than off, per run): SGLang's breakable CUDA graph where the runs measured it

    @property
    def served_all(self) -> tuple[float, ...]:
        return tuple(v for _, values in self.served for v in values)

    @property
    def noise(self) -> float | None:
        """The largest move of what the graphs do not serve: differences below it are this setup's noise."""
        values = [abs(v) for _, vs in self.unserved for v in vs]
        return max(values) if values else None

    @property
    def run_to_run(self) -> float | None:
        """The largest difference between runs at the same prompt length (None with one run)."""
        spreads = [max(vs) - min(vs) for _, vs in self.served if len(vs) > 1]
        return max(spreads) if spreads else None


def slower_pct(on: float | None, off: float | None) -> float | None:
    """By how many percent `off` took longer than `on` (negative: faster). Pure."""
    if on is None or off is None or on == 0:
        return None
    return round((off / on - 1) * 100, 1)


def model_effects(doc: Mapping) -> tuple[ModelEffect, ...]:
    """One ModelEffect per model of a combined document (or of a single run's), in the order first seen. Pure."""
    runs = doc.get("runs") or [doc]
    grouped: dict[str, list[Mapping]] = {}
    for run in runs:
        grouped.setdefault(str(run["model"]), []).append(run)
    return tuple(_effect(model, rs) for model, rs in grouped.items())


def graph_max_tokens(run: Mapping) -> int | None:
    """The --piecewise-cuda-graph-max-tokens a run's server took: the LAST one on its command line (argparse keeps
    the last), read from the recorded argv of a graphs-on server, else from the launch's environment arguments
    followed by its common extra arguments (the order the benchmark passes them). Pure."""
    for state in ("on", "breakable"):
        argv = ((run.get("raw") or {}).get(state) or {}).get("argv")
        if argv:
            found = _MAX_TOKENS.findall(" ".join(str(a) for a in argv))
            if found:
                return int(found[-1])
    launch = run.get("launch") or {}
    line = " ".join([str(launch.get("server_args_env", "")), *(str(a) for a in launch.get("common_extra_args") or [])])
    found = _MAX_TOKENS.findall(line)
    return int(found[-1]) if found else None


def _effect(model: str, runs: list[Mapping]) -> ModelEffect:
    limits = [n for run in runs if (n := graph_max_tokens(run)) is not None]
    limit = min(limits) if limits else None
    served: dict[int, list[float]] = {}
    unserved: dict[str, list[float]] = {}
    capture, ready = [], []
    spreads: list[dict] = []
    breakable: dict[str, list[float]] = {}
    for run in runs:
        for f in run["phases"][PREFILL]["figures"] + run["phases"][DECODE]["figures"]:
            pct = slower_pct(f.get("off"), f.get("breakable")) if "batch" not in f or f["phase"] == DECODE else None
            if pct is not None:
                name = f"decode batch {f['batch']}" if f["phase"] == DECODE else f"{f['prompt_tokens']}-token prefill"
                breakable.setdefault(name, []).append(pct)
        for f in run["phases"][PREFILL]["figures"]:
            if "batch" in f:  # B prompts at once: not one prompt's latency (the batched figures keep their own ratios)
                continue
            pct = slower_pct(f["on"], f["off"])
            if pct is None:
                continue
            if limit is None or f["prompt_tokens"] <= limit:
                served.setdefault(int(f["prompt_tokens"]), []).append(pct)
                spreads += [s for mode in (ON, OFF) if isinstance(s := (f.get("spread") or {}).get(mode), dict)]
            else:
                unserved.setdefault(f"{f['prompt_tokens']}-token prefill", []).append(pct)
        for f in run["phases"][DECODE]["figures"]:
            pct = slower_pct(f["on"], f["off"])
            if pct is not None:
                unserved.setdefault(f"decode batch {f['batch']}", []).append(pct)
        for f in run["phases"][STARTUP]["figures"]:
            if f["name"].startswith("piecewise CUDA graph capture") and f.get("on") is not None:
                capture.append(float(f["on"]))
            if f["name"] == "launch to /health ready" and f.get("on") is not None and f.get("off") is not None:
                ready.append((float(f["on"]), float(f["off"])))
    params = (runs[0].get("model_detail") or {}).get("parameters")
    first = tuple(str(order[0]) for run in runs if (order := run.get("modes") or list(run.get("raw") or {})))
    shape = (runs[0].get("model_detail") or {}).get("name")
    counts = [int(s["n"]) for s in spreads if s.get("n")]
    pcts = [float(s["spread_pct"]) for s in spreads if s.get("spread_pct") is not None]
    return ModelEffect(model, int(params) if params else None, len(runs), limit,
                       tuple((t, tuple(v)) for t, v in sorted(served.items())),
                       tuple((k, tuple(v)) for k, v in unserved.items()), tuple(capture), tuple(ready), first,
                       str(shape) if shape else None, min(counts) if counts else None, max(pcts) if pcts else None,
                       tuple((k, tuple(v)) for k, v in breakable.items()))


def _decode(effect: ModelEffect) -> tuple[float, ...]:
    return tuple(v for name, vs in effect.unserved if name.startswith("decode") for v in vs)


def size_words(parameters: int | None, model: str, shape: str | None = None) -> str:
    """'a 38.28 M-parameter model', 'an 8.03 B-parameter model (llama-3.1-8b shape)' (or the model's own label
    when its size is not recorded). Pure."""
    if not parameters:
        return model
    size = f"{parameters / 1e9:.2f} B" if parameters >= 1e9 else f"{parameters / 1e6:.2f} M"
    article = "an" if size[0] == "8" or size.startswith(("11", "18")) else "a"
    return f"{article} {size}-parameter model" + (f" ({shape} shape)" if shape else "")


def _size(effect: ModelEffect) -> str:
    return size_words(effect.parameters, effect.model, effect.shape)


def models_caveat(effects: tuple[ModelEffect, ...] | list[ModelEffect]) -> str:
    """What the measured models are, in a user's words: 'tiny random-weight bf16 models only, not measured at a real
    model's size' for the kit's tiny models; the published shapes for real-size random checkpoints. Pure."""
    shapes = [e.shape for e in effects if e.shape]
    if effects and len(shapes) == len(effects):
        return (f"random-weight bf16 checkpoints in the shapes of {', '.join(dict.fromkeys(shapes))}: speed only, "
                "one server launch per mode and model")
    return "tiny random-weight bf16 models only, not measured at a real model's size"


def change_words(values: tuple[float, ...], what: str) -> str:
    """'made prefill 4-30 % slower' / '... 3-9 % faster' / '... between 12 % faster and 4 % slower'. Pure."""
    low, high = round(min(values)), round(max(values))
    if low >= 0:
        return f"made {what} {low}-{high} % slower" if low != high else f"made {what} {low} % slower"
    if high <= 0:
        return f"made {what} {-high}-{-low} % faster" if low != high else f"made {what} {-low} % faster"
    return f"changed {what} between {-low} % faster and {high} % slower"


def _signed(pct: float) -> str:
    """'+18 %', '-3 %', '0 %' (never '-0 %'). Pure."""
    return f"{round(pct):+d} %" if round(pct) else "0 %"


def effect_sentence(effect: ModelEffect) -> str:
    """One model's prefill effect with its noise, in a user's words. Pure."""
    prompts = [t for t, _ in effect.served]
    text = (f"on {_size(effect)} turning piecewise off "
            f"{change_words(effect.served_all, 'prefill')} ("
            + (("by prompt length, + slower: " + ", ".join(f"{t} tokens " + "/".join(_signed(v) for v in vs)
                                                          for t, vs in effect.served) + "; ")
               if len(effect.served) > 1 else "")
            + "prompts of "
            + (f"{prompts[0]}-{prompts[-1]}" if len(prompts) > 1 else f"{prompts[0]}") + " tokens, "
            + (f"{effect.runs} runs, which differed by up to {effect.run_to_run:.0f} points"
               if effect.run_to_run is not None else f"{effect.runs} run" + ("s" if effect.runs > 1 else ""))
            + (f", {effect.repeats} timed repeats per figure, spread up to {effect.repeat_spread:.0f} % ((max - min) / middle value)"
               if effect.repeats and effect.repeat_spread is not None else "") + ")")
    if effect.noise is not None:
        unserved = ", ".join(name for name, _ in effect.unserved)
        text += (f", against noise of up to {effect.noise:.0f} % (what the graphs do not serve moved that much "
                 f"between the same servers: {unserved})")
    return text


def startup_sentence(effect: ModelEffect) -> str:
    """Start-up on one model: piecewise capture per run, launch to ready on minus off per run. Pure."""
    parts = []
    if effect.capture_s:
        parts.append(f"piecewise capture took {', '.join(f'{s:.2f}' for s in effect.capture_s)} s (SGLang's log, per run)")
    if effect.ready_s:
        diffs = ", ".join(f"{on - off:+.1f} s" for on, off in effect.ready_s)
        order = (f"; one launch per mode, and the {effect.first_launched[0]} server launched first, so this "
                 "difference is confounded with launch order" if len(set(effect.first_launched)) == 1 else "")
        parts.append(f"launch to ready with piecewise on minus off: {diffs} (per run{order})")
    return f"{_size(effect)}: " + "; ".join(parts) if parts else ""


def breakable_sentence(effect: ModelEffect) -> str:
    """SGLang's breakable CUDA graph against piecewise off on one model, where measured. Pure."""
    if not effect.breakable:
        return ""
    parts = ", ".join(f"{name} " + "/".join(_signed(v) for v in vs) for name, vs in effect.breakable)
    return f"{_size(effect)}: with the breakable CUDA graph instead of piecewise off (+ slower): {parts}"


def decode_sentence(effect: ModelEffect) -> str:
    """Decode on one model: what turning piecewise off did to the decode step. Pure."""
    values = _decode(effect)
    return (f"{_size(effect)}: turning piecewise off {change_words(values, 'the decode step')}"
            " (decode runs on the regular CUDA graphs either way)") if values else ""


def combine(docs: list[dict]) -> dict:
    """Several runs' documents (same device, other models or repeats) as one file: each phase's summary
    spans every run's on/off ratios, each figure keeps the run it came from, every run stays whole, and
    `per_model` holds each model's own summaries. Pure."""
    if not docs:
        raise ValueError("nothing to combine")
    devices = {d["device"] for d in docs}
    if len(devices) != 1:
        raise ValueError(f"runs from different devices: {sorted(devices)}")
    models = list(dict.fromkeys(d["model"] for d in docs))
    return {
        "schema": COST_SCHEMA,
        "device": docs[0]["device"],
        "device_detail": docs[0]["device_detail"],
        "model": "; ".join(models),
        "date": max(d["date"] for d in docs),
        "simulated": any(d.get("simulated") for d in docs),
        "versions": docs[0]["versions"],
        "method": docs[0]["method"],
        "phases": _per_model_phases(docs),
        "runs": [{**{k: d[k] for k in ("model", "model_detail", "date", "cache_state", "launch") if k in d},
                  **({"modes": d["modes"]} if "modes" in d else {}), "phases": _resummarised(d),
                  "raw": {state: _without_temp_paths(run) for state, run in d["raw"].items()}} for d in docs],
        "arch": arch_label(docs[0]["device_detail"].get("compute_capability")),
        "per_model": per_model(docs),
    }


def _resummarised(doc: Mapping) -> dict:
    """A run's phases with their summaries in the current words (a run written before them keeps its figures). Pure."""
    lines = summaries([f for phase in PHASES for f in doc["phases"][phase]["figures"]])
    return {phase: {**doc["phases"][phase], "summary": lines.get(phase, "not measured")} for phase in PHASES}


def _per_model_phases(docs: list[dict]) -> dict[str, dict]:
    """The combined file's top-level phases: every figure tagged with its run, and a summary that speaks per model in a
    user's words (effect_sentence, startup_sentence): never one range pooled across models, never a reciprocal. Pure."""
    phases = _combined_phases(list(enumerate(docs)))
    effects = model_effects({"runs": docs})
    words = {
        PREFILL: "; ".join(effect_sentence(e) for e in effects if e.served),
        DECODE: "; ".join(s for e in effects if (s := decode_sentence(e))),
        STARTUP: "; ".join(s for e in effects if (s := startup_sentence(e))),
    }
    return {phase: {**body, "summary": words[phase] or body["summary"]} for phase, body in phases.items()}


CHECKPOINT_PLACEHOLDER = "<the run's bf16 checkpoint: model_detail>"


def _without_temp_paths(run: Mapping) -> dict:
    """A run's record with its temporary checkpoint path replaced (committed data carries no temp paths)."""
    argv = list(run.get("argv", []))
    if "--model-path" in argv:
        argv[argv.index("--model-path") + 1] = CHECKPOINT_PLACEHOLDER
    return {**run, "argv": argv}
