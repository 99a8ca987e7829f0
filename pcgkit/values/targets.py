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
    # A hybrid target runs on a real GPU with some architecture queries answered as this arch id
    # (pcgkit.e2e.hybrid): not simulated, not that arch's hardware either.
    answered_as: str | None = None

    @property
    def hybrid(self) -> bool:
        return self.answered_as is not None


SIM_SM120 = Target("sim-sm120", "cpu_sim", simulated=True, arch="sm120")
# The same cases simulated as another family, for `pcgkit parity` against a real GPU of that family
# (--pcgkit-simulate-arch): run instead of sim-sm120, never alongside it.
SIM_SM100 = Target("sim-sm100", "cpu_sim", simulated=True, arch="sm100")
SIM_SM90 = Target("sim-sm90", "cpu_sim", simulated=True, arch="sm90")
SIMULATED_BY_ARCH: dict[str, Target] = {t.arch: t for t in (SIM_SM120, SIM_SM100, SIM_SM90) if t.arch}
GPU = Target("gpu", "gpu", simulated=False)  # any real CUDA GPU, nothing simulated
SM120 = Target("sm120", "sm120", simulated=False)  # a real compute-capability 12.x GPU (exact family)
# A real GPU and a real SGLang server with SGLang's, FlashInfer's and dynamo's architecture queries answered
# as 12.0 in every server process (the e2e launch only). Needs any real GPU (marker gpu); never SM120 hardware.
GPU_AS_SM120 = Target("gpu-as-sm120", "gpu", simulated=False, answered_as="sm120")

TARGETS: tuple[Target, ...] = (SIM_SM120, GPU, SM120)
BY_ID: dict[str, Target] = {t.id: t for t in (*TARGETS, *SIMULATED_BY_ARCH.values(), GPU_AS_SM120)}

# Every pytest marker the kit registers (tox.ini declares the same; `run -m`/`matrix -m` refuse any other name).
PYTEST_MARKERS: dict[str, str] = {
    "sm120": "needs a real SM120 GPU (compute capability 12.x, exact family); skipped elsewhere",
    "gpu": "needs a real CUDA GPU of any family; nothing is simulated",
    "cpu_sim": "runs anywhere: FlashInfer's and torch's hardware queries answered as SM120 would (simulated)",
    "e2e": "end-to-end: launches an SGLang server",
    "docker": "needs a Docker engine",
    "act": "runs the generated CI workflow under act, twice (a few minutes; CI runs it)",
    "slow": "the kit's own minutes-long tests (real release environments, Docker, a built wheel); CI runs them",
}

# The markers that need real hardware: the choices of --require-hardware and the gate's loop.
HARDWARE_MARKERS: tuple[str, ...] = tuple(t.marker for t in TARGETS if not t.simulated)

# When one cell has a verdict from several targets, the report shows the best witness first:
# an exact SM120 run, then any real GPU, then the hybrid (real GPU, answered queries), then the simulation.
PRECEDENCE: tuple[str, ...] = (SM120.id, GPU.id, GPU_AS_SM120.id, SIM_SM120.id, SIM_SM100.id, SIM_SM90.id)
# Parity's real witnesses, best first: no hybrid (its answers are not the hardware's).
REAL_TARGET_IDS: tuple[str, ...] = tuple(i for i in PRECEDENCE if not BY_ID[i].simulated and not BY_ID[i].hybrid)


def is_simulated(target_id: str) -> bool:
    """Unknown ids (a foreign result file) count as real: never label a result simulated by guess."""
    target = BY_ID.get(target_id)
    return target.simulated if target is not None else False
