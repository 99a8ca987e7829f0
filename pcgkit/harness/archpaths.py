"""Which arch-specific path a release takes (fixtures/arch_paths.toml, read from each FlashInfer release's source,
provenance per row), and whether a recorded trace took the claimed arch's (`judge_path`, pure: None, or the
one-line problem that makes the result an `error`)."""

from __future__ import annotations

import dataclasses
import functools
from typing import Mapping, Sequence

from packaging.version import InvalidVersion, Version

from pcgkit import resources
from pcgkit.util.tomlfile import tomllib

ARCH_PATHS_SCHEMA = "pcgkit.arch_paths/1"


def arch_id(capability: tuple[int, int]) -> str:
    """The arch id of a compute capability, as FlashInfer names its modules: (12, 0) -> "sm120"."""
    return f"sm{capability[0]}{capability[1]}"


def capability_of(arch: str) -> tuple[int, int]:
    """The compute capability an arch id names, read from the id itself ("sm120" -> (12, 0)): independent of any
    table of simulated devices, so a wrong constant there cannot agree with itself."""
    digits = arch.removeprefix("sm")
    if not digits.isdigit() or len(digits) < 2:
        raise ValueError(f"not an arch id: {arch!r} (expected sm<major><minor>, e.g. sm120)")
    return int(digits[:-1]), int(digits[-1])


@dataclasses.dataclass(frozen=True)
class ArchPathRow:
    since: str
    entry_point: str
    dispatcher: str
    dispatch_key: str  # format string over major/minor, as the release builds its dispatch key
    generators: tuple[tuple[str, str], ...]  # (dispatch key, generator function), the release's table
    read_from: str
    newest_read: str | None = None
    # The dispatcher's own remap of a key to its family variant, gated on torch's CUDA version
    # (0.6.6 on: "120"/"121" -> "120f" when torch.version.cuda >= 12.9): (from keys, to key, min CUDA).
    family_keys: tuple[str, ...] = ()
    family_key: str | None = None
    family_torch_cuda_at_least: str | None = None
    torch_cuda: str | None = None  # the traced environment's torch.version.cuda (row_for sets it)

    def generator_for(self, capability: tuple[int, int]) -> str | None:
        key = self.dispatch_key.format(major=capability[0], minor=capability[1])
        if key in self.family_keys and self.family_key and _at_least(self.torch_cuda, self.family_torch_cuda_at_least):
            key = self.family_key
        return dict(self.generators).get(key)

    def arch_of(self, generator: str) -> str:
        """The dispatch key a generator serves ("90" for the sm90 one)."""
        return next(key for key, name in self.generators if name == generator)

    @property
    def generator_names(self) -> frozenset[str]:
        return frozenset(name for _, name in self.generators)


def _at_least(version: str | None, floor: str | None) -> bool:
    if not version or not floor:
        return False
    try:
        return Version(version) >= Version(floor)
    except InvalidVersion:
        return False


class ArchPathsError(ValueError):
    """fixtures/arch_paths.toml is malformed (a clear one-line message)."""


def parse_rows(data: Mapping) -> tuple[ArchPathRow, ...]:
    """Rows of the arch-path file, sorted by `since`. Pure."""
    if data.get("schema") != ARCH_PATHS_SCHEMA:
        raise ArchPathsError(f"arch paths: schema must be {ARCH_PATHS_SCHEMA!r}, got {data.get('schema')!r}")
    rows = []
    for raw in data.get("flashinfer", []):
        try:
            rows.append(ArchPathRow(
                since=raw["since"], entry_point=raw["entry_point"], dispatcher=raw["dispatcher"],
                dispatch_key=raw["dispatch_key"], generators=tuple(sorted(raw["generators"].items())),
                read_from=raw["read_from"], newest_read=raw.get("newest_read"),
                family_keys=tuple(raw.get("family_key", {}).get("from", ())),
                family_key=raw.get("family_key", {}).get("to"),
                family_torch_cuda_at_least=raw.get("family_key", {}).get("torch_cuda_at_least"),
            ))
        except KeyError as exc:
            raise ArchPathsError(f"arch paths: a [[flashinfer]] row lacks {exc.args[0]!r}") from None
    return tuple(sorted(rows, key=lambda r: Version(r.since)))


@functools.cache
def load_rows() -> tuple[ArchPathRow, ...]:
    return parse_rows(tomllib.loads(resources.fixture("arch_paths.toml").read_text()))


def row_for(version: str | None, rows: Sequence[ArchPathRow], torch_cuda: str | None = None
            ) -> tuple[ArchPathRow | None, str]:
    """The row that applies to this FlashInfer version (with torch's CUDA version, which the family
    remap depends on), and a note on how it was chosen. Pure."""
    if not version:
        return None, "no flashinfer installed: no arch-path row"
    try:
        installed = Version(version.split("+")[0])
    except InvalidVersion:
        return None, f"flashinfer {version}: not a version: no arch-path row"
    applicable = [r for r in rows if Version(r.since) <= installed]
    if not applicable:
        return None, f"flashinfer {version}: older than every arch-path row"
    row = dataclasses.replace(applicable[-1], torch_cuda=torch_cuda)
    note = f"flashinfer {version}: row since {row.since} ({row.read_from})"
    if row.family_key and _at_least(torch_cuda, row.family_torch_cuda_at_least):
        note += (f"; torch CUDA {torch_cuda} >= {row.family_torch_cuda_at_least}: keys {', '.join(row.family_keys)} "
                 f"dispatch to {row.family_key}")
    if row.newest_read and installed > Version(row.newest_read):
        note += f"; {version} itself was not read (newest read: {row.newest_read}): assumed unchanged"
    return row, note


def capability_answer(answer: object) -> tuple[int, int] | None:
    """A hardware query's answer as a compute capability ((12, 0), [12, 0]); None for any other answer. Pure."""
    if isinstance(answer, (tuple, list)) and len(answer) == 2 and all(isinstance(v, int) for v in answer):
        return int(answer[0]), int(answer[1])
    return None


def judge_path(
    claimed: tuple[int, int],
    queries: Sequence[tuple[str, object]],
    reached: Sequence[str],
    row: ArchPathRow | None,
) -> str | None:
    """None when the trace was told and chose what `claimed` would; else what went wrong. Pure. `queries`:
    (query, answer); `reached`: the names of the functions the trace inlined."""
    problems = []
    for query, answer in queries:
        capability = capability_answer(answer)
        if capability is not None and capability != claimed:
            problems.append(f"{query} answered {capability[0]}.{capability[1]}")
        if query.endswith("device_support_pdl") and isinstance(answer, bool) and answer != (claimed[0] >= 9):
            problems.append(f"{query} answered {answer}")  # FlashInfer's rule: PDL from SM90 on
    if row is not None:
        expected = row.generator_for(claimed)
        chosen = [name for name in reached if name in row.generator_names]
        for name in dict.fromkeys(chosen):
            if name != expected:
                problems.append(f"the trace chose {name} (the {row.arch_of(name)} path), not {expected or 'none'}")
        if not chosen and expected and row.dispatcher in reached:
            problems.append(f"{row.dispatcher} was traced but reached none of the row's generators (stale row?)")
    if not problems:
        return None
    return f"simulation did not take: claimed {arch_id(claimed)}; " + "; ".join(dict.fromkeys(problems))
