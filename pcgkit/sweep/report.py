"""Render sweep results: the readiness table per release x arch, and the per-entry table. Pure:
takes the dicts of `pcgkit.sweep/1` JSON (SweepResult.to_dict), returns Markdown text."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterable, Mapping, Sequence

from pcgkit.sweep.classify import SweepClass

SCHEMA = "pcgkit.sweep/1"
COLUMNS = tuple(c.value for c in SweepClass)


def agrees(expected: str | None, observed: str) -> bool | None:
    """None: no public expectation. 'not-an-opaque-op' (a plain function, vLLM PR 51925) agrees with
    every class but opaque-op; an error or not-applicable is never agreement."""
    if expected is None:
        return None
    if observed in (SweepClass.ERROR.value, SweepClass.NOT_APPLICABLE.value):
        return False
    if expected == "not-an-opaque-op":
        return observed != SweepClass.OPAQUE_OP.value
    return expected == observed


def readiness(results: Iterable[Mapping]) -> str:
    """One row per (flashinfer, torch, arch): counts per class, and how many entry points trace."""
    counts: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    for r in results:
        counts[(r["flashinfer"], r["torch"], r["arch"])][r["classification"]["class"]] += 1
    header = "| flashinfer | torch | arch | traces | " + " | ".join(COLUMNS) + " |"
    lines = [header, "|" + "---|" * (4 + len(COLUMNS))]
    for (fi, torch_version, arch), counter in sorted(counts.items()):
        applicable = sum(counter.values()) - counter[SweepClass.NOT_APPLICABLE.value]
        traced = counter[SweepClass.OPAQUE_OP.value] + counter[SweepClass.TRACES_THROUGH.value]
        cells = " | ".join(str(counter[c]) for c in COLUMNS)
        lines.append(f"| {fi} | {torch_version} | {arch} | {traced}/{applicable} | {cells} |")
    return "\n".join(lines)


def entry_table(results: Sequence[Mapping]) -> str:
    """One row per entry point: class per arch, where (first arch's), public expectation and agreement."""
    arches = sorted({r["arch"] for r in results}, reverse=True)
    by_entry: dict[str, dict[str, Mapping]] = defaultdict(dict)  # in the order entries first appear
    for r in results:
        by_entry[r["entry_id"]][r["arch"]] = r
    lines = [
        "| entry point | family | " + " | ".join(arches) + " | where | public expectation | agrees |",
        "|" + "---|" * (5 + len(arches)),
    ]
    for entry_id, row in by_entry.items():
        first = row[arches[0]] if arches[0] in row else next(iter(row.values()))
        classes = " | ".join(row[a]["classification"]["class"] if a in row else "" for a in arches)
        where = first["classification"]["where"].replace("|", "/")[:90]
        expected = first.get("expected")
        link = first.get("expectation_link")
        expectation = f"[{expected}]({link})" if expected else ""
        verdicts = {agrees(expected, row[a]["classification"]["class"]) for a in row}
        agreement = "" if verdicts == {None} else ("yes" if verdicts == {True} else "no" if verdicts == {False} else "partly")
        lines.append(f"| `{entry_id}` | {first['family']} | {classes} | {where} | {expectation} | {agreement} |")
    return "\n".join(lines)


def render(results: Sequence[Mapping], header: Mapping[str, str]) -> str:
    meta = "\n".join(f"- {k}: {v}" for k, v in header.items())
    return f"# FlashInfer sweep\n\n{meta}\n\n## Readiness\n\n{readiness(results)}\n\n## Entry points\n\n{entry_table(results)}\n"
