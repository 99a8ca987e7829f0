"""The piecewise workaround's cost: raw timings of the same server with piecewise CUDA graphs on and
off, turned into per-phase figures and ratios. Pure (no I/O): benchmarks/piecewise_cost.py measures,
this module summarises, fixtures/measurements/piecewise-cost.json is the result the advice model
(pcgkit.advice) quotes with its device, model size and date.

Phases, as SGLang uses the graphs: piecewise CUDA graphs serve prefill/extend batches only (up to
--piecewise-cuda-graph-max-tokens tokens); decode runs on the regular decode CUDA graphs, on or off
alike; start-up pays the piecewise compile and capture.
"""

from __future__ import annotations

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


def _range(values: list[float | None]) -> str:
    known = [v for v in values if v is not None]
    if not known:
        return "n/a"
    low, high = min(known), max(known)
    return f"{low:.2f}x" if abs(high - low) < 0.005 else f"{low:.2f}x to {high:.2f}x"


def summaries(figs: list[dict]) -> dict[str, str]:
    """One line per phase, on/off ratios (below 1: piecewise on is faster; the workaround costs 1/ratio)."""
    out = {}
    prefill = [f for f in figs if f["phase"] == PREFILL]
    if prefill:
        out[PREFILL] = (f"prefill latency with piecewise on / off: {_range([f['ratio_on_over_off'] for f in prefill])} "
                        f"over prompts of {', '.join(str(f['prompt_tokens']) for f in prefill)} tokens "
                        f"(the workaround, off, takes {_range([_inverse(f['ratio_on_over_off']) for f in prefill])} the time)")
    decode = [f for f in figs if f["phase"] == DECODE]
    if decode:
        out[DECODE] = (f"decode step time on / off: {_range([f['ratio_on_over_off'] for f in decode])} at batch "
                       f"{', '.join(str(f['batch']) for f in decode)} (decode uses the regular CUDA graphs either way)")
    startup = {f["name"]: f for f in figs if f["phase"] == STARTUP}
    ready = startup.get("launch to /health ready")
    capture = startup.get("piecewise CUDA graph capture (SGLang's log)")
    if ready:
        out[STARTUP] = (f"launch to ready: {ready['on']} s on, {ready['off']} s off"
                        + (f"; piecewise capture {capture['on']} s" if capture and capture.get("on") is not None else ""))
    return out


def _inverse(value: float | None) -> float | None:
    return round(1 / value, 3) if value else None


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


def _span(values: list[float | None]) -> str:
    known = sorted(v for v in values if v is not None)
    if not known:
        return "n/a"
    return f"{known[0]:.2f}-{known[-1]:.2f} (median {statistics.median(known):.2f})"


def combine(docs: list[dict]) -> dict:
    """Several runs' documents (same device, other models or repeats) as one file: each phase's summary
    spans every run's on/off ratios, each figure keeps the run it came from, every run stays whole. Pure."""
    if not docs:
        raise ValueError("nothing to combine")
    devices = {d["device"] for d in docs}
    if len(devices) != 1:
        raise ValueError(f"runs from different devices: {sorted(devices)}")
    models = list(dict.fromkeys(d["model"] for d in docs))
    phases: dict[str, dict] = {}
    for phase in PHASES:
        figs = [{**f, "run": i} for i, d in enumerate(docs) for f in d["phases"][phase]["figures"]]
        ratios = [f["ratio_on_over_off"] for f in figs if f.get("ratio_on_over_off") is not None]
        if phase == PREFILL:
            summary = (f"piecewise on / off prefill latency ratio {_span(ratios)} over {len(docs)} runs, prompts of "
                       f"{', '.join(sorted({str(f['prompt_tokens']) for f in figs}, key=int))} tokens: the workaround "
                       f"(off) changed prefill latency by {_span([_inverse(r) for r in ratios])}x")
        elif phase == DECODE:
            summary = (f"decode step time ratio on / off {_span(ratios)} (batches "
                       f"{', '.join(sorted({str(f['batch']) for f in figs}, key=int))}): decode runs on the regular "
                       "CUDA graphs either way")
        else:
            capture = [f["on"] for f in figs if f["name"].startswith("piecewise CUDA graph capture") and f["on"] is not None]
            ready = [f for f in figs if f["name"] == "launch to /health ready"]
            summary = (f"piecewise capture adds {_span(capture)} s at start-up (SGLang's log); launch to ready "
                       + "; ".join(f"{f['on']} s on vs {f['off']} s off" for f in ready))
        phases[phase] = {"summary": summary, "figures": figs}
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
        "runs": [{**{k: d[k] for k in ("model", "model_detail", "date", "cache_state", "launch", "phases")},
                  "raw": {state: _without_temp_paths(run) for state, run in d["raw"].items()}} for d in docs],
    }


CHECKPOINT_PLACEHOLDER = "<the run's bf16 checkpoint: model_detail>"


def _without_temp_paths(run: Mapping) -> dict:
    """A run's record with its temporary checkpoint path replaced (committed data carries no temp paths)."""
    argv = list(run.get("argv", []))
    if "--model-path" in argv:
        argv[argv.index("--model-path") + 1] = CHECKPOINT_PLACEHOLDER
    return {**run, "argv": argv}
