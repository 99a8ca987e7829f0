"""Every SGLang release in the matrix range, as its own wheel states it (no install, no import), so that no
per-release statement is typed by hand: its piecewise CUDA graph switch (pcgkit.sglang.facts.flags_from_source),
whether it registers its own FP4 quantize op (what makes SGLang's dense NVFP4 call traceable) or calls FlashInfer's
`torch.ops.flashinfer.fp4_quantize` (does upgrading FlashInfer alone help?), and which runner its piecewise/prefill
capture builds (pcgkit.sglang.runners, each finding with its file:line in the wheel).

The table lives in fixtures/sglang_releases.json, written by the workshop (`bin/pcgkit lab read-releases`,
lab/sglang_releases.py: each wheel from `pip download --no-deps`, read as text). This module is its reader. Pure.
"""

from __future__ import annotations

import dataclasses

from pcgkit.sglang.facts import PiecewiseFlags
from pcgkit.sglang.runners import RunnerFacts
from pcgkit.util.ranges import version_key

TABLE_FILE = "sglang_releases.json"
TABLE_SCHEMA = "pcgkit.sglang-releases/1"


@dataclasses.dataclass(frozen=True)
class ReleaseFacts:
    """One SGLang release as its wheel states it."""

    sglang: str
    flags: PiecewiseFlags
    registers_own_fp4_op: bool  # op_name="flashinfer_fp4_quantize" somewhere in the wheel
    calls_flashinfer_fp4_op: tuple[str, ...]  # files that call torch.ops.flashinfer.fp4_quantize
    wheel: str  # the wheel's file name: what was read
    read_on: str  # ISO date of the read
    # The flags the release's own message names when piecewise capture fails (its `*_CAPTURE_FAILED_MSG`
    # constants), e.g. 0.5.10-0.5.13.post1 print "add --disable-piecewise-cuda-graph to your launch command".
    capture_failure_flags: tuple[str, ...] = ()
    runners: RunnerFacts | None = None  # None: a table written before the runner facts were read

    @property
    def prints_switch_on_failure(self) -> bool:
        """The release already tells a crashed user the flag that turns piecewise capture off."""
        return bool(self.flags.disable) and self.flags.disable in self.capture_failure_flags

    def to_dict(self) -> dict:
        return {"sglang": self.sglang, "flags": self.flags.to_dict(), "registers_own_fp4_op": self.registers_own_fp4_op,
                "calls_flashinfer_fp4_op": list(self.calls_flashinfer_fp4_op), "wheel": self.wheel,
                "read_on": self.read_on, "capture_failure_flags": list(self.capture_failure_flags),
                "runners": self.runners.to_dict() if self.runners else None}

    @classmethod
    def from_dict(cls, data: dict) -> ReleaseFacts:
        return cls(str(data["sglang"]), PiecewiseFlags.from_dict(data["flags"]), bool(data["registers_own_fp4_op"]),
                   tuple(data.get("calls_flashinfer_fp4_op", ())), str(data["wheel"]), str(data["read_on"]),
                   tuple(data.get("capture_failure_flags", ())),
                   RunnerFacts.from_dict(data["runners"]) if data.get("runners") else None)


def parse_table(data: dict, source: str = TABLE_FILE) -> tuple[ReleaseFacts, ...]:
    """The table file's releases, oldest first; ValueError names what is wrong. Pure."""
    if data.get("schema") != TABLE_SCHEMA:
        raise ValueError(f"{source}: schema {data.get('schema')!r}, expected {TABLE_SCHEMA!r}")
    try:
        facts = tuple(ReleaseFacts.from_dict(row) for row in data.get("releases", ()))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{source}: a release row is malformed: {exc}") from exc
    return tuple(sorted(facts, key=lambda f: version_key(f.sglang)))


def runner_facts(table: tuple[ReleaseFacts, ...], sglang: str) -> tuple[RunnerFacts | None, str]:
    """(that release's runner facts or None, where they were read: wheel and date, or why there are none). Pure."""
    row = next((r for r in table if r.sglang == sglang), None)
    if row is None:
        return None, f"sglang {sglang} is not in fixtures/{TABLE_FILE} (`bin/pcgkit lab read-releases` reads it)"
    if row.runners is None:
        return None, f"fixtures/{TABLE_FILE} has no runner facts for sglang {sglang} (read {row.read_on})"
    return row.runners, f"{row.wheel}, read {row.read_on} (fixtures/{TABLE_FILE})"
