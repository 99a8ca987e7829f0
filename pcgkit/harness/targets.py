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


SIM_SM120 = Target("sim-sm120", "cpu_sim", simulated=True)
GPU = Target("gpu", "gpu", simulated=False)  # any real CUDA GPU, nothing simulated
SM120 = Target("sm120", "sm120", simulated=False)  # a real compute-capability 12.x GPU (exact family)

TARGETS: tuple[Target, ...] = (SIM_SM120, GPU, SM120)
BY_ID: dict[str, Target] = {t.id: t for t in TARGETS}

# The markers that need real hardware: the choices of --require-hardware and the gate's loop.
HARDWARE_MARKERS: tuple[str, ...] = tuple(t.marker for t in TARGETS if not t.simulated)

# When one cell has a verdict from several targets, the report shows the best witness first:
# an exact SM120 run, then any real GPU, then the simulation.
PRECEDENCE: tuple[str, ...] = (SM120.id, GPU.id, SIM_SM120.id)
# Parity's real witnesses, best first.
REAL_TARGET_IDS: tuple[str, ...] = tuple(i for i in PRECEDENCE if not BY_ID[i].simulated)


def is_simulated(target_id: str) -> bool:
    """Unknown ids (a foreign result file) count as real: never label a result simulated by guess."""
    target = BY_ID.get(target_id)
    return target.simulated if target is not None else False
