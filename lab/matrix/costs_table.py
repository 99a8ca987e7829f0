"""A cell's cost breakdown (pcgkit.matrix.costs) as aligned lines, for the benchmarks. Pure."""

from __future__ import annotations

from collections.abc import Mapping

from pcgkit.matrix.costs import CASE_PREFIX, STAGES


def render_breakdown(costs: Mapping[str, float], top_cases: int = 5) -> list[str]:
    """'  install      3.1 s  14%' lines, stages first, then the slowest cases. Pure."""
    total = costs.get("total") or sum(v for k, v in costs.items() if k in STAGES) or 1.0
    lines = [
        f"  {name:<12}{costs[name]:>8.2f} s {100 * costs[name] / total:>4.0f}%" for name in STAGES if name in costs
    ]
    cases = sorted(((k, v) for k, v in costs.items() if k.startswith(CASE_PREFIX)), key=lambda kv: -kv[1])
    lines += [f"    {k[len(CASE_PREFIX) :]:<40}{v:>8.2f} s" for k, v in cases[:top_cases] if v > 0]
    lines.append(f"  {'total':<12}{total:>8.2f} s")
    return lines
