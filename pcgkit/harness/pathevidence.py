"""Turn a recorded trace into evidence: the hardware queries and answers, and the arch path chosen.

`build` (pure) returns the evidence (evidence["simulation"] for a simulated run, evidence["device_path"] for a real
one), the problem that voids a simulated verdict (None when the simulation took) and, simulated, the device as the
answers describe it -- never a constant label.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from pcgkit.harness.archpaths import ArchPathRow, arch_id, capability_answer, judge_path
from pcgkit.harness.hardware import Device
from pcgkit.harness.pathrecord import HARDWARE_QUERY_NAMES, InlinedCall
from pcgkit.values.signature import Frame


@dataclasses.dataclass(frozen=True)
class PathEvidence:
    evidence: dict
    problem: str | None  # "simulation did not take: ..." (simulated runs only)
    device: Device | None  # the simulated device as its answers describe it


def _jsonable(answer: object) -> object:
    if isinstance(answer, tuple):
        return [_jsonable(a) for a in answer]
    if answer is None or isinstance(answer, (bool, int, float, str)):
        return answer
    return repr(answer)


def reached_functions(calls: Sequence[InlinedCall], frames: Sequence[Frame]) -> list[str]:
    """Function names on the traced path: every inlined call, then the failure's frame chain."""
    return list(dict.fromkeys([c.function for c in calls] + [f.function for f in frames]))


def build(
    *,
    claimed: Device,
    calls: Sequence[InlinedCall],
    recorder: str,
    told: Sequence[tuple[str, object]],
    frames: Sequence[Frame],
    row: ArchPathRow | None,
    row_note: str,
) -> PathEvidence:
    queries = [(c.where, c.answer) for c in calls if c.function in HARDWARE_QUERY_NAMES] + list(told)
    reached = reached_functions(calls, frames)
    generators = row.generator_names if row is not None else frozenset()
    arch_path = [name for name in reached if name in generators]
    body: dict = {
        "queries": [[query, _jsonable(answer)] for query, answer in queries],
        "arch_path": arch_path,
        "arch_paths_row": row_note,
        "recorder": recorder,
    }
    if not claimed.simulated:
        return PathEvidence({"device_path": body}, None, None)
    problem = judge_path(claimed.capability, queries, reached, row)
    expected = row.generator_for(claimed.capability) if row is not None else None
    body.update(claimed=arch_id(claimed.capability), expected_arch_path=expected, took=problem is None)
    answered = [c for _, answer in queries if (c := capability_answer(answer)) is not None]
    if problem is None and answered:
        major, minor = answered[0]
        device = Device(f"simulated SM{major}{minor}", (major, minor), simulated=True)
    elif problem is None:
        device = dataclasses.replace(claimed, note="no GPU; no hardware query was reached on the traced path")
    else:
        device = dataclasses.replace(claimed, note=problem)
    return PathEvidence({"simulation": body}, problem, device)
