"""`pcgkit parity`: the cases simulated and on a real GPU, compared mode by mode.

The simulation is only worth something if a real GPU agrees with it. Two separate pytest runs in the same environment
(separate processes, so no dynamo state crosses over): `-m cpu_sim` (hardware queries answered as the real device's
arch: on an H200 simulated SM90, detected; or `--simulate-arch`) and `-m "gpu or sm120"` (nothing replaced). Then, per
mode: verdict, graph-break id, innermost FlashInfer frame and the arch-specific path the trace chose (the generator
recorded in evidence["simulation"] / evidence["device_path"]), simulated vs real. A difference is reported, never
hidden: it is a bug in the simulation (or a real hardware dependence) to explain.

compare() and render_markdown() are pure; the command is the edge.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Sequence

from pcgkit.errors import UsageError
from pcgkit.harness import hardware
from pcgkit.util import templating
from pcgkit.values import targets
from pcgkit.verdicts.result import CaseResult

PARITY_SCHEMA = "pcgkit.parity/1"
SIMULATED_VARIANTS = tuple(t.id for t in targets.SIMULATED_BY_ARCH.values())
REAL_VARIANTS = targets.REAL_TARGET_IDS  # an exact-SM120 run is the better witness when there is one
NOT_COMPARABLE = ("skipped", "error")


@dataclasses.dataclass(frozen=True)
class Observation:
    """What one run said about one mode: the three things parity compares."""

    verdict: str
    graph_break_id: str | None
    innermost_frame: str | None  # file:line:function, path relative to the package
    device: str
    reason: str
    arch_path: tuple[str, ...] | None = None  # the arch generators the trace reached; None: not recorded

    @classmethod
    def of(cls, result: CaseResult) -> Observation:
        sig = result.signature
        frame = sig.innermost_library_frame if sig else None
        path = result.evidence.get("simulation") or result.evidence.get("device_path") or {}
        return cls(
            arch_path=tuple(path["arch_path"]) if "arch_path" in path else None,
            verdict=result.verdict.value,
            graph_break_id=sig.graph_break_id if sig else None,
            innermost_frame=str(frame) if frame else None,
            device=result.device.get("label", "?"),
            reason=result.reason,
        )


@dataclasses.dataclass(frozen=True)
class ParityRow:
    mode: str
    simulated: Observation | None
    real: Observation | None
    real_variant: str | None
    differences: tuple[str, ...]

    @property
    def status(self) -> str:
        if self.simulated is None:
            return "real only"  # a GPU-only case (numerics): nothing simulated to compare with
        if self.real is None:
            return "missing"
        if self.real.verdict in NOT_COMPARABLE or self.simulated.verdict in NOT_COMPARABLE:
            return "not compared"
        return "match" if not self.differences else "DIFFERENT"


def _pick_real(results: Sequence[CaseResult]) -> CaseResult | None:
    by_variant = {r.variant: r for r in results}
    real = [by_variant[v] for v in REAL_VARIANTS if v in by_variant]
    return next((r for r in real if r.verdict.ran), real[0] if real else None)


def _differences(sim: Observation, real: Observation) -> tuple[str, ...]:
    found = []
    for field in ("verdict", "graph_break_id", "innermost_frame", "arch_path"):
        a, b = getattr(sim, field), getattr(real, field)
        if field == "arch_path" and (a is None or b is None):
            continue  # a result file from before paths were recorded: nothing to compare, not a match
        if a != b:
            found.append(f"{field}: simulated {_text(a)} vs real {_text(b)}")
    return tuple(found)


def compare(results: Iterable[CaseResult]) -> list[ParityRow]:
    """One row per mode found in either run. Pure."""
    by_mode: dict[str, list[CaseResult]] = {}
    for r in results:
        by_mode.setdefault(r.mode, []).append(r)
    rows = []
    for mode in sorted(by_mode):
        group = by_mode[mode]
        sim_result = next((r for r in group if r.variant in SIMULATED_VARIANTS), None)
        real_result = _pick_real(group)
        sim = Observation.of(sim_result) if sim_result else None
        real = Observation.of(real_result) if real_result else None
        if sim is None or real is None:
            missing = "simulated" if sim is None else "real"
            differences: tuple[str, ...] = (f"no {missing} result",)
        elif real.verdict in NOT_COMPARABLE or sim.verdict in NOT_COMPARABLE:
            differences = (f"real {real.verdict}: {real.reason[:200]}" if real.verdict in NOT_COMPARABLE
                           else f"simulated {sim.verdict}: {sim.reason[:200]}",)
        else:
            differences = _differences(sim, real)
        rows.append(ParityRow(mode, sim, real, real_result.variant if real_result else None, differences))
    return rows


def _text(value) -> str:
    if isinstance(value, tuple):
        return ", ".join(value) or "no arch path"
    return value or "-"


def simulated_arch_for(devices: Sequence[hardware.Device]) -> str:
    """The simulated arch to compare with this machine's first real GPU (exact family); SM120 without one."""
    for arch, device in hardware.SIMULATED_ARCHES.items():
        if devices and devices[0].family == device.family:
            return arch
    if devices:
        raise UsageError(f"no simulated arch for {devices[0].label}: pass --simulate-arch "
                         f"({', '.join(sorted(hardware.SIMULATED_ARCHES))})")
    return "sm120"


def _cell(obs: Observation | None) -> str:
    if obs is None:
        return "-"
    parts = [obs.verdict]
    if obs.graph_break_id:
        parts.append(obs.graph_break_id)
    if obs.innermost_frame:
        parts.append(f"`{obs.innermost_frame}`")
    if obs.arch_path:
        parts.append("path " + ", ".join(f"`{p}`" for p in obs.arch_path))
    return " ".join(parts).replace("|", "\\|")


def _seconds(value) -> str:
    return f"{value} s" if isinstance(value, (int, float)) else str(value or "?")


def render_markdown(rows: Sequence[ParityRow], meta: dict) -> str:
    """The parity report (pcgkit/templates/parity.md.j2). Pure."""
    table = [(row.mode, _cell(row.simulated), _cell(row.real) + (f" ({row.real_variant})" if row.real_variant else ""),
              row.status, "; ".join(row.differences).replace("|", "\\|").replace("\n", " ") or "-") for row in rows]
    return templating.render(
        "parity.md.j2", meta=meta, arch=meta.get("simulated_arch", "sm120").upper(), table=table, seconds=_seconds,
        versions=", ".join(f"{k} {v}" for k, v in sorted(meta.get("versions", {}).items()) if v),
        matched=sum(r.status == "match" for r in rows), compared=sum(r.status in ("match", "DIFFERENT") for r in rows))


def to_json(rows: Sequence[ParityRow], meta: dict) -> dict:
    return {
        "schema": PARITY_SCHEMA,
        "meta": meta,
        "rows": [{**dataclasses.asdict(r), "status": r.status} for r in rows],
    }
