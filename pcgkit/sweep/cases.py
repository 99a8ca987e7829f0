"""The sweep's entry points as cases of the kit's catalog: one Mode per (arch, entry point). Pure.

Generated from the spec table (entry_points.toml), so an entry added to the table is a case everywhere (report
columns, flips, expectations) with no code. Case id `sweep.<arch>.<entry id>` ("sweep.sm120.rmsnorm"): the
simulated target answers one family per trace. Opt-in: the sweep multiplies a cell's cases by ~100 (about 80 s per
cell on CPU), so the case module runs them only when PCGKIT_SWEEP is set (`1`: every arch, or `sm120,sm90`).
"""

from __future__ import annotations

import functools
import os

from pcgkit.harness.hardware import SIMULATED_ARCHES
from pcgkit.sweep.classify import FAMILY_KNOWN_SHAPES, Observation, classify
from pcgkit.sweep.specs import EntrySpec, load_specs
from pcgkit.values.signature import Signature
from pcgkit.verdicts.modes import Mode

PREFIX = "sweep"
ENABLE_ENV = "PCGKIT_SWEEP"
ARCH_ORDER: tuple[str, ...] = tuple(SIMULATED_ARCHES)  # sm120, sm100, sm90


def case_id(arch: str, entry_id: str) -> str:
    return f"{PREFIX}.{arch}.{entry_id}"


def parse_case_id(mode_id: str) -> tuple[str, str] | None:
    """(arch, entry id) of a sweep case id; None for any other case. Pure."""
    prefix, _, rest = mode_id.partition(".")
    arch, _, entry_id = rest.partition(".")
    if prefix != PREFIX or not arch or not entry_id:
        return None
    return arch, entry_id


def _matches_family(signature: Signature) -> str | None:
    """The Mode's rule on a signature alone (for consumers that judge a bare trace): a known shape of
    the bug family (JIT loader, FakeTensor into a kernel) matches; anything else is why not."""
    classification = classify(Observation("raised", signature=signature))
    if classification.cls in FAMILY_KNOWN_SHAPES:
        return None
    return f"{classification.cls.value}: {classification.where}"


def mode_for(spec: EntrySpec, arch: str) -> Mode:
    return Mode(
        id=case_id(arch, spec.id),
        title=f"`{spec.target}` under fullgraph=True ({arch}; {spec.family})",
        known_signature="breaks in a lazy JIT loader (flashinfer/jit, CuTe-DSL) or a FakeTensor reaches a kernel",
        seed="issue 19: the sweep over every FlashInfer entry point",
        matches=_matches_family,
    )


@functools.cache
def sweep_modes() -> tuple[Mode, ...]:
    """Every sweep case, arch-major in ARCH_ORDER, entries in table order."""
    specs = load_specs()
    return tuple(mode_for(spec, arch) for arch in ARCH_ORDER for spec in specs)


def enabled_arches(value: str | None = None) -> tuple[str, ...]:
    """The arches PCGKIT_SWEEP asks for: () when unset/0, every arch for 1/all, else the named ones.
    An unknown arch is a clear error (a typo must not silently sweep nothing)."""
    value = os.environ.get(ENABLE_ENV, "") if value is None else value
    value = value.strip().lower()
    if value in ("", "0", "no", "off", "false"):
        return ()
    if value in ("1", "all", "yes", "on", "true"):
        return ARCH_ORDER
    arches = tuple(a.strip() for a in value.split(",") if a.strip())
    unknown = [a for a in arches if a not in SIMULATED_ARCHES]
    if unknown:
        raise ValueError(f"{ENABLE_ENV}={value!r}: unknown arch {', '.join(unknown)} (known: {', '.join(ARCH_ORDER)})")
    return arches
