"""The piecewise workaround's cost: raw timings of the same server with piecewise CUDA graphs on and
off, turned into per-phase figures and ratios. Pure (no I/O): benchmarks/piecewise_cost.py measures,
this module summarises, fixtures/measurements/piecewise-cost.json is the result the advice model
(pcgkit.advice) quotes with its device, model size and date.

Phases, as SGLang uses the graphs: piecewise CUDA graphs serve prefill/extend batches only (up to
--piecewise-cuda-graph-max-tokens tokens); decode runs on the regular decode CUDA graphs, on or off
alike; start-up pays the piecewise compile and capture.
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


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 6) if values else None


def ratio(on: float | None, off: float | None) -> float | None:
    """on / off, or None when either is missing or off is zero."""
    if on is None or off is None or off == 0:
        return None
    return round(on / off, 3)


def figures(runs: Mapping[str, Mapping]) -> list[dict]:
    """One figure per measured quantity: phase, unit, on/off medians and the on/off ratio, raw values kept.

    `runs["on"]` / `runs["off"]` are what the benchmark recorded for each server:
      prefill: {prompt_tokens: [latency_s, ...]}, decode: {batch: {"per_token_s": [...]}},
      startup: {"ready_s", "piecewise_capture_s", "cuda_graph_capture_s"}."""
    on, off = runs["on"], runs["off"]
    out: list[dict] = []
    for tokens in sorted({int(t) for t in on.get("prefill", {})} & {int(t) for t in off.get("prefill", {})}):
        raw_on, raw_off = on["prefill"][str(tokens)], off["prefill"][str(tokens)]
        m_on, m_off = median(raw_on), median(raw_off)
        out.append({"phase": PREFILL, "name": "prefill latency (1 new token)", "prompt_tokens": tokens, "unit": "ms",
                    "on": _ms(m_on), "off": _ms(m_off), "ratio_on_over_off": ratio(m_on, m_off),
                    "throughput_tokens_per_s": {"on": _per_s(tokens, m_on), "off": _per_s(tokens, m_off)},
                    "raw_s": {"on": raw_on, "off": raw_off}})
    for batch in sorted({int(b) for b in on.get("decode", {})} & {int(b) for b in off.get("decode", {})}):
        raw_on, raw_off = on["decode"][str(batch)]["per_token_s"], off["decode"][str(batch)]["per_token_s"]
        m_on, m_off = median(raw_on), median(raw_off)
        out.append({"phase": DECODE, "name": "decode time per step", "batch": batch, "unit": "ms",
                    "on": _ms(m_on), "off": _ms(m_off), "ratio_on_over_off": ratio(m_on, m_off),
                    "throughput_tokens_per_s": {"on": _per_s(batch, m_on), "off": _per_s(batch, m_off)},
                    "raw_s": {"on": raw_on, "off": raw_off}})
    for key, name in (("ready_s", "launch to /health ready"), ("piecewise_capture_s", "piecewise CUDA graph capture (SGLang's log)"),
                      ("cuda_graph_capture_s", "decode CUDA graph capture (SGLang's log)")):
        s_on, s_off = on.get("startup", {}).get(key), off.get("startup", {}).get(key)
        if s_on is None and s_off is None:
            continue
        out.append({"phase": STARTUP, "name": name, "unit": "s", "on": s_on, "off": s_off,
                    "ratio_on_over_off": ratio(s_on, s_off)})
    return out


def _ms(seconds: float | None) -> float | None:
    return round(seconds * 1000, 3) if seconds is not None else None


def _per_s(tokens: int, seconds: float | None) -> float | None:
    return round(tokens / seconds, 1) if seconds else None


def summaries(figs: list[dict], model: str = "the model", parameters: int | None = None,
              launch: Mapping | None = None) -> dict[str, str]:
    """One line per phase for one model's run, in the same words as the combined file (percent by which piecewise
    off took longer than on; what the graphs do not serve as the noise beside it)."""
    run = {"model": model, "model_detail": {"parameters": parameters} if parameters else {}, "launch": launch or {},
           "phases": {phase: {"figures": [f for f in figs if f["phase"] == phase]} for phase in PHASES}}
    (effect,) = model_effects({"runs": [run]})
    out = {}
    if effect.served:
        out[PREFILL] = effect_sentence(effect)
    if decode := _decode(effect):
        out[DECODE] = (f"turning piecewise off {change_words(decode, 'the decode step')} "
                       f"(decode runs on the regular CUDA graphs either way)")
    if startup := startup_sentence(effect):
        out[STARTUP] = startup
    return out


def document(*, device: str, device_detail: dict, model: str, model_detail: dict, date: str, versions: dict,
             runs: Mapping[str, Mapping], launch: dict, method: str, cache_state: str) -> dict:
    """The committed measurement file (schema COST_SCHEMA; `phases` as pcgkit.advice.load.parse_cost reads it)."""
    figs = figures(runs)
    lines = summaries(figs, model, model_detail.get("parameters"), launch)
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
            lines.append(f"    {label}: on {f['on']} {f['unit']}, off {f['off']} {f['unit']}, on/off {f['ratio_on_over_off']}")
    return "\n".join(lines)


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


def _effect(model: str, runs: list[Mapping]) -> ModelEffect:
    launch = " ".join(str(run.get("launch", {}).get("server_args_env", "")) for run in runs)
    limits = {int(n) for n in _MAX_TOKENS.findall(launch)}
    limit = min(limits) if limits else None
    served: dict[int, list[float]] = {}
    unserved: dict[str, list[float]] = {}
    capture, ready = [], []
    for run in runs:
        for f in run["phases"][PREFILL]["figures"]:
            pct = slower_pct(f["on"], f["off"])
            if pct is None:
                continue
            if limit is None or f["prompt_tokens"] <= limit:
                served.setdefault(int(f["prompt_tokens"]), []).append(pct)
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
    return ModelEffect(model, int(params) if params else None, len(runs), limit,
                       tuple((t, tuple(v)) for t, v in sorted(served.items())),
                       tuple((k, tuple(v)) for k, v in unserved.items()), tuple(capture), tuple(ready))


def _decode(effect: ModelEffect) -> tuple[float, ...]:
    return tuple(v for name, vs in effect.unserved if name.startswith("decode") for v in vs)


def size_words(parameters: int | None, model: str) -> str:
    """'a 38.28 M-parameter model' (or the model's own label when its size is not recorded). Pure."""
    return f"a {parameters / 1e6:.2f} M-parameter model" if parameters else model


def change_words(values: tuple[float, ...], what: str) -> str:
    """'made prefill 4-30 % slower' / '... 3-9 % faster' / '... between 12 % faster and 4 % slower'. Pure."""
    low, high = round(min(values)), round(max(values))
    if low >= 0:
        return f"made {what} {low}-{high} % slower" if low != high else f"made {what} {low} % slower"
    if high <= 0:
        return f"made {what} {-high}-{-low} % faster" if low != high else f"made {what} {-low} % faster"
    return f"changed {what} between {-low} % faster and {high} % slower"


def effect_sentence(effect: ModelEffect) -> str:
    """One model's prefill effect with its noise, in a user's words. Pure."""
    prompts = [t for t, _ in effect.served]
    text = (f"on {size_words(effect.parameters, effect.model)} turning piecewise off "
            f"{change_words(effect.served_all, 'prefill')} (prompts of "
            + (f"{prompts[0]}-{prompts[-1]}" if len(prompts) > 1 else f"{prompts[0]}") + " tokens, "
            + (f"{effect.runs} runs, which differed by up to {effect.run_to_run:.0f} points"
               if effect.run_to_run is not None else f"{effect.runs} run" + ("s" if effect.runs > 1 else "")) + ")")
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
        parts.append(f"launch to ready with piecewise on minus off: {diffs} (per run)")
    return f"{size_words(effect.parameters, effect.model)}: " + "; ".join(parts) if parts else ""


def combine(docs: list[dict]) -> dict:
    """Several runs' documents (same device, other models or repeats) as one file: each phase's summary
    speaks per model (never a range pooled across models), each figure keeps the run it came from, every
    run stays whole. Pure."""
    if not docs:
        raise ValueError("nothing to combine")
    devices = {d["device"] for d in docs}
    if len(devices) != 1:
        raise ValueError(f"runs from different devices: {sorted(devices)}")
    models = list(dict.fromkeys(d["model"] for d in docs))
    runs = [{**{k: d[k] for k in ("model", "model_detail", "date", "cache_state", "launch")},
             "phases": _resummarised(d), "raw": {state: _without_temp_paths(run) for state, run in d["raw"].items()}}
            for d in docs]
    effects = model_effects({"runs": runs})
    summaries_by_phase = {
        PREFILL: "; ".join(effect_sentence(e) for e in effects),
        DECODE: "; ".join(f"{size_words(e.parameters, e.model)}: turning piecewise off "
                          + change_words(_decode(e), "the decode step")
                          + " (decode runs on the regular CUDA graphs either way)" for e in effects if _decode(e)),
        STARTUP: "; ".join(s for e in effects if (s := startup_sentence(e))),
    }
    phases = {phase: {"summary": summaries_by_phase[phase],
                      "figures": [{**f, "run": i} for i, d in enumerate(docs) for f in d["phases"][phase]["figures"]]}
              for phase in PHASES}
    return {
        "schema": COST_SCHEMA,
        "device": docs[0]["device"],
        "device_detail": docs[0]["device_detail"],
        "model": "; ".join(models),
        "date": max(d["date"] for d in docs),
        "simulated": any(d.get("simulated") for d in docs),
        "versions": docs[0]["versions"],
        "method": docs[0]["method"],
        "phases": phases,
        "runs": runs,
    }


def _resummarised(doc: Mapping) -> dict:
    """A run's phases with their summaries in the current words (a run written before them keeps its figures)."""
    figs = [f for phase in PHASES for f in doc["phases"][phase]["figures"]]
    lines = summaries(figs, doc["model"], (doc.get("model_detail") or {}).get("parameters"), doc.get("launch"))
    return {phase: {**doc["phases"][phase], "summary": lines.get(phase, "not measured")} for phase in PHASES}


CHECKPOINT_PLACEHOLDER = "<the run's bf16 checkpoint: model_detail>"


def _without_temp_paths(run: Mapping) -> dict:
    """A run's record with its temporary checkpoint path replaced (committed data carries no temp paths)."""
    argv = list(run.get("argv", []))
    if "--model-path" in argv:
        argv[argv.index("--model-path") + 1] = CHECKPOINT_PLACEHOLDER
    return {**run, "argv": argv}
