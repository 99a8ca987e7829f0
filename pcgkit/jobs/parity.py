"""`pcgkit parity`: the cases simulated and on a real GPU, compared mode by mode.

The simulation is only worth something if a real GPU agrees with it. Two separate pytest runs in
the same environment (separate processes, so no dynamo state crosses over): `-m cpu_sim`
(hardware queries answered as the real device's arch: on an H200 simulated SM90, detected; or
`--simulate-arch`) and `-m "gpu or sm120"` (nothing replaced). Then, per mode: verdict,
graph-break id, innermost FlashInfer frame and the arch-specific path the trace chose (the
generator recorded in evidence["simulation"] / evidence["device_path"]), simulated vs real. A difference is
reported, never hidden: it is a bug in the simulation (or a real hardware dependence) to explain.

compare() and render_markdown() are pure; the command is the edge.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import sys
import time
from pathlib import Path
from typing import Iterable, Sequence
from unittest import mock

from pcgkit.errors import UsageError
from pcgkit.harness import hardware
from pcgkit.jobs import run as runjob
from pcgkit.util import atomic
from pcgkit.values import targets
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import CaseResult, read_results

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
    usable = [by_variant[v] for v in REAL_VARIANTS if v in by_variant and by_variant[v].verdict.ran]
    if usable:
        return usable[0]
    return next((by_variant[v] for v in REAL_VARIANTS if v in by_variant), None)


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
    """The parity report. Pure."""
    versions = meta.get("versions", {})
    matched = sum(r.status == "match" for r in rows)
    compared = sum(r.status in ("match", "DIFFERENT") for r in rows)
    lines = [
        f"# Simulated {meta.get('simulated_arch', 'sm120').upper()} vs real GPU: parity ({meta.get('date', '?')})",
        "",
        f"- real device: {meta.get('real_device', '?')}",
        f"- simulated: hardware queries answered as {meta.get('simulated_arch', 'sm120').upper()}; all library code real",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items()) if v),
        f"- wall time: simulated run {_seconds(meta.get('simulated_wall_s'))}, real run {_seconds(meta.get('real_wall_s'))}",
        f"- command: `{meta.get('command', 'pcgkit parity')}`",
        "",
        f"**{matched} of {compared} compared modes match** (verdict, graph-break id, innermost frame, arch path).",
        "",
        "| mode | simulated | real | status | differences |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        diffs = "; ".join(row.differences).replace("|", "\\|").replace("\n", " ") or "-"
        real_cell = _cell(row.real) + (f" ({row.real_variant})" if row.real_variant else "")
        lines.append(f"| {row.mode} | {_cell(row.simulated)} | {real_cell} | {row.status} | {diffs} |")
    lines += [
        "",
        "A `DIFFERENT` row is a bug in the simulation or a real dependence on the hardware: it is "
        "reported as found and must be explained, never hidden.",
        "",
    ]
    return "\n".join(lines)


def to_json(rows: Sequence[ParityRow], meta: dict) -> dict:
    return {
        "schema": PARITY_SCHEMA,
        "meta": meta,
        "rows": [{**dataclasses.asdict(r), "status": r.status} for r in rows],
    }


def _run(python: str, reports_dir: Path, select: str, require: tuple[str, ...], timeout_s: float):
    plan = runjob.RunPlan(
        python=python, reports_dir=reports_dir, timeout_s=timeout_s, case_timeout_s=min(600.0, timeout_s),
        select=select, require_hardware=require,
    )
    reports_dir.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    environment, results, _ = runjob.execute(plan)
    return environment, results, round(time.monotonic() - start, 1)


def _cmd_parity(args) -> int:
    out = Path(args.reports)
    if args.from_results:
        results: list[CaseResult] = []
        environment: dict = {}
        for path in args.from_results:
            env, found = read_results(Path(path))
            environment = environment or env
            results += found
        walls = {"simulated_wall_s": "n/a (from files)", "real_wall_s": "n/a (from files)"}
        command = "pcgkit parity --from-results " + " ".join(args.from_results)
        simulated_arch = next((r.variant.removeprefix("sim-") for r in results if r.variant in SIMULATED_VARIANTS),
                              "sm120")
    else:
        python = args.python or sys.executable
        simulated_arch = args.simulate_arch
        if simulated_arch == "auto":
            simulated_arch = simulated_arch_for(hardware.detect_cuda_devices())
        # The cases' plugin reads the arch from the environment (--pcgkit-simulate-arch's variable).
        with mock.patch.dict(os.environ, {"PCGKIT_SIMULATE_ARCH": simulated_arch}):
            environment, simulated, sim_wall = _run(python, out / "simulated", "cpu_sim", (), args.timeout)
        _, real, real_wall = _run(python, out / "real", "gpu or sm120", ("gpu",), args.timeout)
        results = simulated + real
        walls = {"simulated_wall_s": sim_wall, "real_wall_s": real_wall}
        command = f"pcgkit parity --simulate-arch {simulated_arch}"
    if not results:
        raise UsageError("no results to compare (did pytest run? see the logs under the reports folder)")
    rows = compare(results)
    real_device = next((r.real.device for r in rows if r.real and r.real.verdict != Verdict.SKIPPED.value), "none (all skipped)")
    meta = {
        "date": _dt.datetime.now(_dt.timezone.utc).date().isoformat(),
        "real_device": real_device,
        "versions": environment.get("versions", {}),
        "command": command,
        "simulated_arch": simulated_arch,
        **walls,
    }
    out.mkdir(parents=True, exist_ok=True)
    atomic.write_text(out / "parity.md", render_markdown(rows, meta))
    atomic.write_json(out / "parity.json", to_json(rows, meta), indent=2)
    print(render_markdown(rows, meta))
    print(f"reports: {out / 'parity.md'}, {out / 'parity.json'}")
    compared = [r for r in rows if r.status in ("match", "DIFFERENT")]
    if not compared:
        print("pcgkit parity: nothing was compared: no real-GPU result (see the reasons above)", file=sys.stderr)
        return 1
    return 0 if all(r.status in ("match", "not compared", "real only") for r in rows) else 1


def register(subparsers) -> None:
    parity = subparsers.add_parser(
        "parity", help="run the cases simulated and on the real GPU here, and compare them mode by mode",
        description="Run the cases simulated and on this machine's real GPU, and compare verdict, graph-break id and innermost frame per mode.",
        epilog="examples:\n  %(prog)s                      # on a GPU machine\n  %(prog)s --from-results sim/results.json gpu/results.json",
    )
    parity.add_argument("--python", help="interpreter of the environment to test (default: this one)")
    parity.add_argument("--reports", default="reports/parity", help="output folder (default: reports/parity)")
    parity.add_argument("--timeout", type=float, default=1800, help="seconds per run (default 1800)")
    parity.add_argument(
        "--simulate-arch", default="auto", choices=["auto", *sorted(hardware.SIMULATED_ARCHES)],
        help="arch the simulated run answers as (default auto: the real GPU's family, e.g. sm90 on an H200)",
    )
    parity.add_argument(
        "--from-results", nargs="+", metavar="RESULTS_JSON",
        help="compare existing results files (pcgkit.results/1) instead of running",
    )
    parity.set_defaults(func=_cmd_parity)
