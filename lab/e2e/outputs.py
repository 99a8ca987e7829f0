"""Outputs unchanged by piecewise capture (issue 40): greedy generations of the same prompts, compared
between server modes of one build (piecewise off, the baseline; on; breakable). Pure (no I/O):
benchmarks/piecewise_cost.py asks each server and keeps what SGLang answered; this module reads those
answers and says whether, and where, they differ.

What is compared: the generated token ids (`output_ids` of SGLang's /generate answer, temperature 0).
Where two modes differ, the first differing position is reported with the top-2 log-probability gap
each mode had there (`meta_info.output_top_logprobs`, asked with return_logprob / top_logprobs_num=2).
A gap under NEAR_TIE_NATS is a near tie: the two candidate tokens were about equally likely, so a
rounding difference between two correct computations can flip greedy's choice there (random weights
make such ties common). A difference where both modes were sure is not explained that way.

Each mode generates the prompt set twice (passes A and B): A vs B in one mode says whether the server
is run-to-run deterministic at all; a difference between modes counts only against that.
"""

from __future__ import annotations

import random
from typing import Mapping, Sequence

OUTPUTS_SCHEMA = "pcgkit.outputs-unchanged/1"
NEAR_TIE_NATS = 0.05  # top-2 log-probability gap under which greedy's choice is a near tie (a reading aid; gaps are kept)
IDENTICAL = "identical"
NEAR_TIE = "differs at a near tie"
DIFFERS = "differs"


def prompt_set(count: int, lengths: Sequence[int], vocab: int, seed: int = 0, first_id: int = 4) -> list[list[int]]:
    """`count` prompts of random token ids (seeded), cycling through `lengths`; ids from first_id (past the
    special tokens) to vocab. Pure."""
    rng = random.Random(seed)
    return [[rng.randrange(first_id, vocab) for _ in range(lengths[i % len(lengths)])] for i in range(count)]


def generation(answer: Mapping) -> dict:
    """The part of one /generate answer the comparison reads: token ids and each position's top-2 gap."""
    meta = answer.get("meta_info") or {}
    gaps = []
    for position in meta.get("output_top_logprobs") or []:
        ranked = sorted((entry[0] for entry in position or [] if entry and entry[0] is not None), reverse=True)
        gaps.append(round(ranked[0] - ranked[1], 6) if len(ranked) >= 2 else None)
    return {"output_ids": list(answer.get("output_ids") or []), "top2_gap": gaps}


def _gap(record: Mapping, position: int) -> float | None:
    gaps = record.get("top2_gap") or []
    return gaps[position] if position < len(gaps) else None


def compare_one(base: Mapping, other: Mapping) -> dict:
    """One prompt in two modes: identical, or the first differing position and both modes' top-2 gap there."""
    a, b = base["output_ids"], other["output_ids"]
    same = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    if same is None and len(a) == len(b):
        return {"class": IDENTICAL, "tokens": len(a)}
    first = same if same is not None else min(len(a), len(b))
    gaps = [_gap(base, first), _gap(other, first)]
    known = [g for g in gaps if g is not None]
    near = bool(known) and min(known) < NEAR_TIE_NATS
    return {"class": NEAR_TIE if near else DIFFERS, "tokens": min(len(a), len(b)), "first_difference": first,
            "ids_there": [a[first] if first < len(a) else None, b[first] if first < len(b) else None],
            "top2_gap_there": gaps}


def compare(base: Sequence[Mapping], other: Sequence[Mapping]) -> dict:
    """Every prompt of two modes (same prompts, same order): per prompt and in total. Pure."""
    if len(base) != len(other):
        raise ValueError(f"{len(base)} generations against {len(other)}: not the same prompt set")
    rows = [compare_one(a, b) for a, b in zip(base, other)]
    counts = {c: sum(r["class"] == c for r in rows) for c in (IDENTICAL, NEAR_TIE, DIFFERS)}
    return {"prompts": len(rows), "counts": counts, "tokens_compared": sum(r["tokens"] for r in rows), "per_prompt": rows}


def verdict_line(label: str, result: Mapping) -> str:
    """One line: how many prompts were identical, and what the differences were."""
    counts, total = result["counts"], result["prompts"]
    line = f"{label}: {counts[IDENTICAL]}/{total} prompts identical ({result['tokens_compared']} tokens compared)"
    if counts[NEAR_TIE]:
        line += f"; {counts[NEAR_TIE]} first differ at a near tie (top-2 gap < {NEAR_TIE_NATS} nats)"
    if counts[DIFFERS]:
        worst = [r for r in result["per_prompt"] if r["class"] == DIFFERS]
        line += (f"; {counts[DIFFERS]} differ where the model was sure (first at token "
                 f"{worst[0]['first_difference']}, top-2 gaps {worst[0]['top2_gap_there']})")
    return line


def document(passes: Mapping[str, Mapping[str, Sequence[Mapping]]], *, prompts: Sequence[Sequence[int]],
             new_tokens: int, context: Mapping) -> dict:
    """The outputs-unchanged file: `passes[mode]["A"|"B"]` are each mode's generations (generation()).
    Within each mode A vs B (determinism), then every other mode's A against off's A. Pure."""
    modes = list(passes)
    within = {mode: compare(p["A"], p["B"]) for mode, p in passes.items() if "B" in p}
    across = {f"{mode} vs off": compare(passes["off"]["A"], passes[mode]["A"]) for mode in modes if mode != "off"}
    lines = [verdict_line(f"{mode} run-to-run (A vs B)", r) for mode, r in within.items()]
    lines += [verdict_line(label, r) for label, r in across.items()]
    return {"schema": OUTPUTS_SCHEMA, **context, "modes": modes, "new_tokens": new_tokens,
            "prompt_lengths": [len(p) for p in prompts], "near_tie_nats": NEAR_TIE_NATS,
            "summary": lines, "within_mode": within, "across_modes": across,
            "generations": {mode: {k: list(v) for k, v in p.items()} for mode, p in passes.items()}}
