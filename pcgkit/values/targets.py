"""The targets a case runs on, declared once: their ids, markers, and which are real hardware.

Every other module names a target through these constants (never a string literal): the pytest
parametrisation, the hardware gate, the `--require-hardware` choices, the report's precedence of
real over simulated results, parity, and the synthesized error rows.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Target:
    id: str  # the pytest param id: shows up in node ids, JUnit names and reports
    marker: str
    simulated: bool
    arch: str | None = None  # a simulated target's arch id (pcgkit.harness.hardware.SIMULATED_ARCHES key)


SIM_SM120 = Target("sim-sm120", "cpu_sim", simulated=True, arch="sm120")
# The same cases simulated as another family, for `pcgkit parity` against a real GPU of that family
# (--pcgkit-simulate-arch): run instead of sim-sm120, never alongside it.
SIM_SM100 = Target("sim-sm100", "cpu_sim", simulated=True, arch="sm100")
SIM_SM90 = Target("sim-sm90", "cpu_sim", simulated=True, arch="sm90")
SIMULATED_BY_ARCH: dict[str, Target] = {t.arch: t for t in (SIM_SM120, SIM_SM100, SIM_SM90) if t.arch}
GPU = Target("gpu", "gpu", simulated=False)  # any real CUDA GPU, nothing simulated
SM120 = Target("sm120", "sm120", simulated=False)  # a real compute-capability 12.x GPU (exact family)

TARGETS: tuple[Target, ...] = (SIM_SM120, GPU, SM120)
BY_ID: dict[str, Target] = {t.id: t for t in (*TARGETS, *SIMULATED_BY_ARCH.values())}

# The markers that need real hardware: the choices of --require-hardware and the gate's loop.
HARDWARE_MARKERS: tuple[str, ...] = tuple(t.marker for t in TARGETS if not t.simulated)

# When one cell has a verdict from several targets, the report shows the best witness first:
# an exact SM120 run, then any real GPU, then the simulation.
PRECEDENCE: tuple[str, ...] = (SM120.id, GPU.id, SIM_SM120.id, SIM_SM100.id, SIM_SM90.id)
# Parity's real witnesses, best first.
REAL_TARGET_IDS: tuple[str, ...] = tuple(i for i in PRECEDENCE if not BY_ID[i].simulated)


def is_simulated(target_id: str) -> bool:
    """Unknown ids (a foreign result file) count as real: never label a result simulated by guess."""
    target = BY_ID.get(target_id)
    return target.simulated if target is not None else False
