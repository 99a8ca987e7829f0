"""The report's sweep section: readiness per FlashInfer release x arch, since when each entry point
breaks and what fixed it, the sweep's flips, and the public-thread cross-check. Pure.

Rows come from the sweep cases' results in matrix cells (`sweep_rows(outcomes)`: the class travels
as the result's evidence, see pcgkit.sweep.pytest_case). `build_sweep(rows)` is compat.json's `sweep`;
`render_sweep_section` its compat.md lines. Sweep columns (`is_sweep_case`) belong here, not in the main grid.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

from pcgkit.report.summary import md_escape
from pcgkit.sweep.cases import parse_case_id
from pcgkit.sweep.classify import SweepClass
from pcgkit.util.ranges import version_key

CLASSES: tuple[str, ...] = tuple(c.value for c in SweepClass)
TRACED = (SweepClass.OPAQUE_OP.value, SweepClass.TRACES_THROUGH.value)
# Classes that say nothing about tracing (no spec, no hardware, kit broke): never a "since" or a fix.
UNJUDGED = (SweepClass.NOT_APPLICABLE.value, SweepClass.NEEDS_GPU.value, SweepClass.ERROR.value)


@dataclasses.dataclass(frozen=True)
class SweepRow:
    flashinfer: str
    torch: str
    arch: str
    entry: str
    family: str
    cls: str
    where: str
    verdict: str
    simulated: bool
    expected: str | None = None
    link: str | None = None
    cell: str = ""


def is_sweep_case(mode_id: str) -> bool:
    return parse_case_id(mode_id) is not None


def sweep_rows(outcomes: Iterable) -> list[SweepRow]:
    """One row per sweep result in the cells (CellOutcome, any backend); the best target per mode."""
    rows = []
    for outcome in outcomes:
        for mode in sorted({r.mode for r in outcome.results if is_sweep_case(r.mode)}):
            result = outcome.result_for(mode)
            sweep = (result.evidence or {}).get("sweep") if result else None
            if not sweep:
                continue
            rows.append(SweepRow(
                flashinfer=str(result.versions.get("flashinfer-python") or "?"),
                torch=str(result.versions.get("torch") or "?"), arch=sweep["arch"], entry=sweep["entry"],
                family=sweep.get("family", ""), cls=sweep["class"], where=sweep.get("where", ""),
                verdict=result.verdict.value, simulated=result.simulated, expected=sweep.get("expected"),
                link=sweep.get("expectation_link"), cell=outcome.cell.id,
            ))
    return rows


def readiness(rows: Sequence[SweepRow]) -> list[dict]:
    """Per (release, torch, arch): class counts and how many applicable entry points trace."""
    counts: dict[tuple[str, str, str], Counter] = defaultdict(Counter)
    for r in rows:
        counts[(r.flashinfer, r.torch, r.arch)][r.cls] += 1
    return [{"flashinfer": fi, "torch": torch_version, "arch": arch, "counts": dict(counter),
             "traced": sum(counter[c] for c in TRACED), "judged": sum(n for c, n in counter.items() if c not in UNJUDGED),
             "applicable": sum(n for c, n in counter.items() if c != SweepClass.NOT_APPLICABLE.value)}
            for (fi, torch_version, arch), counter in sorted(counts.items(), key=lambda kv: (version_key(kv[0][0]), kv[0][2]))]


def history(rows: Sequence[SweepRow]) -> list[dict]:
    """Per (entry, arch), along the releases: since when it breaks (first judged release in the
    current failing run), the release it was fixed in and by what (class + where there), and breaks
    that came back after a fix. Unjudged releases (needs-gpu, error, not-applicable) are skipped."""
    by_key: dict[tuple[str, str], dict[str, SweepRow]] = defaultdict(dict)
    for r in rows:
        by_key[(r.entry, r.arch)][r.flashinfer] = r
    order = sorted({r.flashinfer for r in rows}, key=version_key)
    out = []
    for (entry, arch), per_release in sorted(by_key.items()):
        judged = [per_release[v] for v in order if v in per_release and per_release[v].cls not in UNJUDGED]
        if not judged:
            continue
        events, since, state_since = [], judged[0].flashinfer, judged[0].flashinfer
        for before, after in zip(judged, judged[1:]):
            if before.cls == after.cls:
                continue
            flipped = (before.cls in TRACED) != (after.cls in TRACED)
            kind = ("fixed" if after.cls in TRACED else "broke") if flipped else "changed"
            events.append({"release": after.flashinfer, "kind": kind, "cls": after.cls, "where": after.where,
                           "previous": before.cls})
            state_since = after.flashinfer
            since = after.flashinfer if flipped else since
        last = judged[-1]
        out.append({"entry": entry, "arch": arch, "state": last.cls, "traces": last.cls in TRACED,
                    "since": since, "state_since": state_since, "where": last.where, "events": events,
                    "releases": [r.flashinfer for r in judged]})
    return out


def cross_check(rows: Sequence[SweepRow]) -> list[dict]:
    """Every row with a public expectation: does the observed class agree (report.agrees' rule)?"""
    from pcgkit.sweep.report import agrees

    return [{"entry": r.entry, "arch": r.arch, "flashinfer": r.flashinfer, "expected": r.expected, "observed": r.cls,
             "where": r.where, "link": r.link, "agrees": agrees(r.expected, r.cls)} for r in rows if r.expected is not None]


def build_sweep(rows: Sequence[SweepRow]) -> dict:
    """The section as data (compat.json's `sweep`)."""
    return {"readiness": readiness(rows), "history": history(rows), "cross_check": cross_check(rows),
            "simulated": any(r.simulated for r in rows)}


def render_sweep_section(sweep: Mapping, changes: Mapping[str, list] | None = None,
                         md: Callable[[str], str] = md_escape) -> list[str]:
    """Markdown lines: readiness, since/fixed, flips (compat's `changes`, sweep cases only), cross-check."""
    if not sweep.get("readiness"):
        return []
    lines = ["", "## Sweep: FlashInfer entry points under fullgraph=True (readiness per release x arch)", "",
             "| flashinfer | torch | arch | traces | " + " | ".join(CLASSES) + " |", "|---" * (4 + len(CLASSES)) + "|"]
    for row in sweep["readiness"]:
        counts = row["counts"]
        lines.append(f"| {row['flashinfer']} | {row['torch']} | {row['arch']} | {row['traced']}/{row['judged']} | "
                     + " | ".join(str(counts.get(c, 0)) for c in CLASSES) + " |")
    lines += ["", "traces = opaque-op + traces-through, of the entry points judged here (not needs-gpu / error /"
              " not-applicable). Verdicts: traced = fixed; breaks in a JIT loader or FakeTensor reaches a kernel ="
              " reproduced; breaks elsewhere = drifted; needs-gpu = skipped."]
    moved = [h for h in sweep.get("history", ()) if h["events"]]
    lines += ["", "### Since when, and what fixed it", ""]
    if not moved:
        lines.append("- no entry point changed class across the releases here")
    for h in moved:
        steps = "; ".join(f"{e['kind']} in {e['release']} ({e['previous']} → {e['cls']}: {md(e['where'][:80])})"
                          for e in h["events"])
        traced = "traces" if h["traces"] else "does not trace"
        lines.append(f"- `{h['entry']}` [{h['arch']}]: {traced} since {h['since']}, {h['state']} since {h['state_since']}; {steps}")
    flips = [(cell, c) for cell, cs in (changes or {}).items() for c in cs if is_sweep_case(c["mode"])]
    if flips:
        lines += ["", "### Sweep flips since the previous run", ""]
        lines += [f"- ⚑ `{cell}` {c['mode']}: {c['previous']} → {c['current']}" for cell, c in flips]
    grouped: dict[tuple, dict] = {}
    for c in sweep.get("cross_check", ()):  # one line per (entry, public, observed): releases and arches folded
        key = (c["entry"], c["expected"], c["link"], c["observed"], c["agrees"])
        group = grouped.setdefault(key, {"releases": [], "arches": [], "where": c["where"]})
        group["releases"] += [c["flashinfer"]] if c["flashinfer"] not in group["releases"] else []
        group["arches"] += [c["arch"]] if c["arch"] not in group["arches"] else []
    if grouped:
        lines += ["", "### Public threads vs the sweep", "", "| entry | releases | arches | public | observed | agrees | where (first) |",
                  "|---|---|---|---|---|---|---|"]
        for (entry, expected, link, observed, agreement), g in grouped.items():
            mark = {True: "yes", False: "**no**", None: ""}[agreement]
            lines.append(f"| `{entry}` | {', '.join(sorted(g['releases'], key=version_key))} | {', '.join(g['arches'])} | "
                         f"[{expected}]({link}) | {observed} | {mark} | {md(g['where'][:90])} |")
    if sweep.get("simulated"):
        lines += ["", "> Sweep rows marked simulated traced on CPU with each arch's hardware queries answered;"
                  " no kernel was built, loaded or run (pcgkit/sweep/guard.py)."]
    return lines
