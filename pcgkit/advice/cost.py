"""What turning piecewise CUDA graphs off costs, as one table of at most MAX_ROWS rows. Pure.

Read from the committed measurement (fixtures/measurements/piecewise-cost.json, written by
benchmarks/piecewise_cost.py on the lent GPU). Each figure is the median of one mode's timed repeats;
its words say the direction ("46 % slower with piecewise off"), never a signed difference. A figure is
"within noise" when the move is no larger than this setup's noise: the largest move of what the
piecewise graphs do not serve in the same runs (decode), or the figure's own spread of repeats
((max - min) / median), whichever is larger. Runs are never pooled across models.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

OFF, ON, BREAKABLE = "off", "on", "breakable"
PREFILL, DECODE, STARTUP = "prefill/extend", "decode", "startup"
MAX_ROWS = 8
COST_PAGE = "docs/answers.md#cost"  # the one page that gives the whole table


@dataclasses.dataclass(frozen=True)
class Figure:
    """One timed quantity of one model's run: each mode's median (s or ms) and the largest spread of its repeats."""

    model: str  # "8.03 B (llama-3.1-8b shape)"
    phase: str  # PREFILL | DECODE
    prompt_tokens: int | None
    batch: int | None  # prompts at once (prefill) or decode batch
    medians: tuple[tuple[str, float], ...]  # (mode, median)
    spreads: tuple[tuple[str, float], ...]  # (mode, (max - min) / median of its repeats, in %)

    def median(self, mode: str) -> float | None:
        return dict(self.medians).get(mode)

    def spread(self, *modes: str) -> float:
        """The largest spread of the repeats of these modes, in %."""
        return max((v for m, v in self.spreads if m in modes), default=0.0)


def slower_pct(base: float | None, other: float | None) -> float | None:
    """By how many percent `other` took longer than `base` (negative: it was faster). Pure."""
    if base is None or other is None or base == 0:
        return None
    return round((other / base - 1) * 100, 1)


def model_label(run: Mapping) -> str:
    """'8.03 B (llama-3.1-8b shape)' from a run's model_detail, else the run's model string. Pure."""
    detail = run.get("model_detail") or {}
    params, shape = detail.get("parameters"), detail.get("name")
    if not params:
        return str(run.get("model", "?"))
    size = f"{params / 1e9:.2f} B" if params >= 1e9 else f"{params / 1e6:.2f} M"
    return f"{size} ({shape} shape)" if shape else size  # e.g. "8.03 B (llama-3.1-8b shape)"


def figures(doc: Mapping) -> tuple[Figure, ...]:
    """Every prefill and decode figure of a cost file's runs (a single run's file counts as one run). Pure."""
    out = []
    for run in doc.get("runs") or [doc]:
        label = model_label(run)
        for phase in (PREFILL, DECODE):
            for f in ((run.get("phases") or {}).get(phase) or {}).get("figures", ()):
                medians = tuple((m, float(f[m])) for m in (ON, OFF, BREAKABLE) if f.get(m) is not None)
                spreads = tuple((m, float(s.get("spread_pct") or 0.0)) for m, s in (f.get("spread") or {}).items()
                                if isinstance(s, dict))
                batch = f.get("batch")
                out.append(Figure(label, phase, f.get("prompt_tokens"), int(batch) if batch is not None else None,
                                  medians, spreads))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class Cell:
    pct: float  # how much longer the compared mode took than the baseline (negative: faster)
    noise: float  # the larger of the model's decode noise and the figure's own spread
    words: str  # "46 % slower with piecewise off" / "3 % faster with piecewise off (within noise, 8 %)"


@dataclasses.dataclass(frozen=True)
class Row:
    what: str  # "1 prompt of 128 tokens"
    cells: tuple[Cell | None, ...]  # per model column; None: not measured


@dataclasses.dataclass(frozen=True)
class CostTable:
    """One comparison (piecewise off against on, or the breakable runner against off) per model and workload."""

    compared: str  # "piecewise off" | "the breakable runner"
    baseline: str  # "on" | "piecewise off"
    models: tuple[str, ...]
    rows: tuple[Row, ...]
    worst: str  # the worst figure's words: "80 % slower with piecewise off"
    worst_case: str  # where: "4 prompts of 128 tokens at once, 8.03 B (llama-3.1-8b shape)"
    device: str  # "NVIDIA H200"
    where: str  # device, release, date, what the models are
    sglang: str  # the release the servers ran
    date: str
    source: str  # the measurement file


def _words(pct: float, noise: float, compared: str) -> str:
    direction = "slower" if pct > 0 else "faster"
    text = f"{abs(round(pct))} % {direction} with {compared}" if round(pct) else f"no change with {compared}"
    return text + (f" (within noise, {noise:.0f} %)" if abs(pct) <= noise else "")


def _decode_noise(figs: tuple[Figure, ...], model: str) -> float:
    """The largest move piecewise off made where the graphs serve nothing (decode): this setup's noise. Pure."""
    moves = [abs(p) for f in figs if f.model == model and f.phase == DECODE
             if (p := slower_pct(f.median(ON), f.median(OFF))) is not None]
    return max(moves, default=0.0)


def _workload(f: Figure) -> str:
    if f.phase == DECODE:
        return "decode step (batch 1-32)"
    return f"{f.batch} prompts of {f.prompt_tokens} tokens at once" if f.batch else f"1 prompt of {f.prompt_tokens} tokens"


_LONG = 2048  # prompts from here on are grouped into one row: the graphs' overhead saving is small there


def _row_key(f: Figure) -> str:
    if f.phase != DECODE and f.prompt_tokens is not None and f.prompt_tokens >= _LONG:
        return f"{f.batch} prompts of 2048-8192 tokens at once" if f.batch else "1 prompt of 2048-8192 tokens"
    return _workload(f)


def cost_table(doc: Mapping, source: str, breakable: bool = False) -> CostTable | None:
    """The table for piecewise off against on (or, `breakable`, the breakable runner against off); None when the file
    holds no such figures. A row that groups several figures shows the one furthest from no change. Pure."""
    figs = figures(doc)
    base, other = (OFF, BREAKABLE) if breakable else (ON, OFF)
    compared = "the breakable runner" if breakable else "piecewise off"
    models = tuple(dict.fromkeys(f.model for f in figs))
    grouped: dict[str, dict[str, Cell]] = {}
    worst: tuple[float, str, str] | None = None
    for f in figs:
        pct = slower_pct(f.median(base), f.median(other))
        if pct is None:
            continue
        noise = max(_decode_noise(figs, f.model), f.spread(base, other)) if f.phase != DECODE else _decode_noise(figs, f.model)
        key = _row_key(f)
        cell = Cell(pct, noise, _words(pct, noise, compared))
        held = grouped.setdefault(key, {}).get(f.model)
        if held is None or abs(pct) > abs(held.pct):
            grouped[key][f.model] = cell
        if worst is None or pct > worst[0]:
            worst = (pct, f.model, _workload(f))
    if not grouped or worst is None:
        return None
    rows = tuple(Row(key, tuple(cells.get(m) for m in models)) for key, cells in grouped.items())[:MAX_ROWS]
    versions = doc.get("versions") or {}
    sglang = str(versions.get("sglang") or "")
    date = str(doc.get("date", ""))[:10]
    where = (f"{doc.get('device')}, SGLang {sglang}, {date}; random-weight bf16 checkpoints (speed only), "
             f"one server launch per mode and model")
    device = str(doc.get("device", "")).split(" (")[0].removeprefix("NVIDIA ")
    return CostTable(compared, "piecewise off" if breakable else "piecewise on", models, rows,
                     _words(worst[0], 0.0, compared), f"{worst[2]}, {worst[1].split(' (')[0]}", device, where,
                     sglang, date, source)


def capture_line(doc: Mapping) -> str:
    """'piecewise capture takes 16.3 s (8.03 B ...) and 7.5 s (1.24 B ...) at start-up, saved with piecewise off'. Pure."""
    found = [(model_label(run), float(f["on"])) for run in doc.get("runs") or [doc]
             for f in ((run.get("phases") or {}).get(STARTUP) or {}).get("figures", ())
             if str(f.get("name", "")).startswith("piecewise CUDA graph capture") and f.get("on") is not None]
    if not found:
        return ""
    parts = " and ".join(f"{seconds:.1f} s on the {model} model" for model, seconds in found)
    return f"start-up: piecewise capture takes {parts} (SGLang's log); piecewise off saves it"
