"""The input side of `pcgkit report --from DIR|ARCHIVE ...`: cell results from many hosts, as rows.

Each --from is a folder of cell.json files or an archive of them (what CI artifact downloads give).
Whatever cannot be read, or is not a pcgkit cell result, becomes an *error row* with the reason: never
a crash, never dropped. Results of one cell from different machines are all kept, and the pairs that
disagree are found (what `pcgkit parity` compares, at matrix scale). Pure but for `load_sources`,
`unpack` and `stage_cells`.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import tarfile
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from pcgkit.errors import UsageError
from pcgkit.jobs.parity import NOT_COMPARABLE, Observation
from pcgkit.jobs.run import RunFiles
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import ERROR, CellOutcome, write_outcome
from pcgkit.matrix.where import Where
from pcgkit.report.annotations import witness_text
from pcgkit.report.model import CompatReport
from pcgkit.util.untrusted import safe_id
from pcgkit.values import targets

CELL_FILE = "cell.json"
STAGE_SOURCE = "source"  # an error row's stage: the input could not be read
# An artifact of cell folders is a few MB that compresses ~5-20x; a bomb is refused before a byte is
# written, by its total (declared in the archive's headers) and by its ratio to the archive's size.
MAX_UNPACKED_BYTES = 2 * 1024**3
MAX_RATIO = 200
RATIO_FLOOR_BYTES = 16 * 1024**2  # below this, any ratio is harmless (a tiny archive of JSON compresses well)
COMPARED_FIELDS = ("verdict", "graph_break_id", "innermost_frame")
SIMULATED_VS_REAL = "simulated-vs-real"
BETWEEN_MACHINES = "between-machines"
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9._+-]+")


@dataclasses.dataclass(frozen=True)
class Row:
    outcome: CellOutcome
    source: str  # the --from argument it came from
    member: str  # its cell.json, relative to the source
    cell_dir: Path | None  # the folder holding its junit.xml; None for an error row
    planned_id: str = ""  # the cell id as planned, when the row id got an '@machine' suffix

    @property
    def cell_id(self) -> str:
        return self.planned_id or self.outcome.cell.id

    @property
    def where(self) -> Where:
        return self.outcome.where or Where(host="unknown (cell.json without 'where')",
                                           backend=self.outcome.provenance.get("backend", "venv"))

    @property
    def key(self) -> tuple[str, str, tuple[str, ...], str]:
        """Cell (id and definition) x targets x where: results differing in any of them are different rows."""
        variants = tuple(sorted({r.variant for r in self.outcome.results if r.verdict.value != "skipped"}))
        return (self.cell_id, self.outcome.cell.definition_hash, variants, self.where.key)


@dataclasses.dataclass(frozen=True)
class SourceReport:
    source: str
    kind: str  # "folder" | "archive" | "unreadable"
    cells: int
    problems: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "problems": list(self.problems)}


@dataclasses.dataclass(frozen=True)
class Loaded:
    rows: tuple[Row, ...]
    sources: tuple[SourceReport, ...]
    notes: tuple[str, ...] = ()  # rows superseded by a newer result with the same key


def error_row(source: str, member: str, reason: str) -> Row:
    """An input that yields no cell: a row of its own, so the report shows it with its reason."""
    name = _UNSAFE_ID.sub("_", f"{Path(source).name}{'/' + member if member else ''}").strip("_.")[-100:] or "input"
    cell = Cell(id=f"source-error.{name}", kind="existing", interpreter=None, origin="source")
    outcome = CellOutcome(cell, ERROR, 0.0, STAGE_SOURCE, f"{source}{': ' + member if member else ''}: {reason}")
    return Row(outcome, source, member, None)


def read_cell(path: Path) -> CellOutcome:
    """A cell.json as an outcome; ValueError with a one-line reason when it is not one."""
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"unreadable: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(data, dict):
        raise ValueError("not a pcgkit cell result (JSON is not an object)")
    if data.get("schema") != "pcgkit.cell/1":
        raise ValueError(f"foreign file: schema {data.get('schema')!r}, expected 'pcgkit.cell/1'")
    try:
        return CellOutcome.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"incomplete or malformed pcgkit.cell/1 ({type(exc).__name__}: {exc})") from exc


def _check_members(names: Iterable[str]) -> None:
    """ValueError naming the first archive member that would land outside the staging folder. Pure."""
    for name in names:
        path = PurePosixPath(name)
        if path.is_absolute() or ".." in path.parts:
            raise ValueError(f"refused: member {name!r} would land outside the folder")


def _check_size(archive: Path, total: int) -> None:
    """ValueError when the members add up to more than the bound, or to a bomb's ratio. Pure but for stat."""
    if total > MAX_UNPACKED_BYTES:
        raise ValueError(f"refused: unpacks to more than {MAX_UNPACKED_BYTES // 1024**2} MiB ({total // 1024**2} MiB)")
    packed = max(archive.stat().st_size, 1)
    if total > RATIO_FLOOR_BYTES and total / packed > MAX_RATIO:
        raise ValueError(f"refused: unpacks {total // packed}x its size ({total // 1024**2} MiB from "
                         f"{packed // 1024} KiB; the bound is a ratio of {MAX_RATIO}): a compression bomb?")


def unpack(archive: Path, dest: Path) -> None:
    """A tar (any compression) or zip archive into dest, checked before a byte is written (no absolute paths,
    no escapes, no links or devices, no bombs); ValueError with the reason when it cannot be."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                infos = zf.infolist()
                _check_members(i.filename for i in infos)
                _check_size(archive, sum(i.file_size for i in infos))
                zf.extractall(dest)  # zipfile stops each member at its declared size: the check holds
            return
        if tarfile.is_tarfile(archive):
            with tarfile.open(archive) as tf:
                members = tf.getmembers()
                _check_size(archive, sum(m.size for m in members))
                _check_members(m.name for m in members)
                odd = next((m.name for m in members if not (m.isfile() or m.isdir())), None)
                if odd is not None:
                    raise ValueError(f"refused: member {odd!r} is not a plain file or folder (a link or device)")
                if hasattr(tarfile, "data_filter"):  # 3.10.12+/3.11.4+: the stdlib's own guard as well as ours
                    tf.extractall(dest, members=members, filter="data")
                else:
                    tf.extractall(dest, members=members)
            return
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        raise ValueError(f"broken archive ({type(exc).__name__}: {exc})") from exc
    raise ValueError("not a folder, nor a tar or zip archive")


def _load_folder(source: str, folder: Path, rows: list[Row]) -> SourceReport:
    problems = []
    found = sorted(folder.rglob(CELL_FILE))
    for path in found:
        member = str(path.relative_to(folder))
        try:
            rows.append(Row(read_cell(path), source, member, path.parent))
        except ValueError as exc:
            problems.append(f"{member}: {exc}")
            rows.append(error_row(source, member, str(exc)))
    if not found:
        hint = " (a `pcgkit run` reports folder? the report merges matrix cell folders)" if any(folder.rglob("results.json")) else ""
        reason = f"no {CELL_FILE} inside: not a pcgkit matrix result{hint}"
        problems.append(reason)
        rows.append(error_row(source, "", reason))
    return SourceReport(source, "folder", 0, tuple(problems))  # cells counted by the caller


def load_sources(sources: Sequence[str], staging: Path) -> Loaded:
    """Every --from, read into rows (error rows included) and one report per source (the edge)."""
    inside = [s for s in sources if _within(Path(s), staging)]
    if inside:  # checked before the scratch folder is emptied: the input would be deleted before it is read
        raise UsageError(f"--from {inside[0]}: inside {staging}, the folder each `report --from` rebuilds from scratch; "
                         f"copy it elsewhere first (or pass the original cell folders or archives)")
    if staging.exists():
        shutil.rmtree(staging)  # our own scratch folder: never mix an older merge's files in
    rows: list[Row] = []
    reports: list[SourceReport] = []
    for index, source in enumerate(sources):
        path = Path(source)
        before = len(rows)
        try:
            if path.is_dir():
                report = _load_folder(source, path, rows)
            elif not path.is_file():
                raise ValueError("no such file or folder")
            else:
                dest = staging / "unpacked" / f"{index:03d}-{_UNSAFE_ID.sub('_', path.name)}"
                unpack(path, dest)
                report = dataclasses.replace(_load_folder(source, dest, rows), kind="archive")
        except ValueError as exc:
            rows.append(error_row(source, "", str(exc)))
            report = SourceReport(source, "unreadable", 0, (str(exc),))
        cells = sum(1 for r in rows[before:] if r.cell_dir is not None)
        reports.append(dataclasses.replace(report, cells=cells))
    merged, notes = merge_rows(rows)
    return Loaded(tuple(merged), tuple(reports), tuple(notes))


def _within(path: Path, folder: Path) -> bool:
    """path is folder or inside it (links resolved)."""
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except OSError:
        return False


def remove_unpacked(staging: Path) -> None:
    """The unpacked archives, once their cells are staged: an artifact's copy must not stay on the runner."""
    shutil.rmtree(staging / "unpacked", ignore_errors=True)


def local_rows(outcomes: Sequence[CellOutcome], cells_root: Path) -> Loaded:
    """The cells of one local run (reports/matrix/cells) as rows: one source, ids already unique. Pure."""
    rows = tuple(Row(o, str(cells_root), f"{o.cell.id}/{CELL_FILE}", cells_root / o.cell.id) for o in outcomes)
    return Loaded(rows, (SourceReport(str(cells_root), "folder", len(rows)),))


def merge_rows(rows: Sequence[Row]) -> tuple[list[Row], list[str]]:
    """Rows keyed by definition x targets x where (newest kept per key), with unique ids. Pure."""
    kept: dict[tuple, Row] = {}
    notes = []
    for row in rows:
        if row.cell_dir is None:  # error rows are never merged away
            kept[("error", len(kept))] = row
            continue
        old = kept.get(row.key)
        if old is not None:
            newer, older = (row, old) if row.outcome.finished >= old.outcome.finished else (old, row)
            notes.append(f"{older.source}: {older.member} superseded by the newer result of the same cell, "
                         f"targets and machine in {newer.source}: {newer.member}")
            row = newer
        kept[row.key] = row
    by_id: dict[str, list[Row]] = {}
    for row in kept.values():
        by_id.setdefault(row.outcome.cell.id, []).append(row)
    out = []
    for cell_id, group in by_id.items():
        for row, name in zip(group, _row_names(group) if len(group) > 1 else [cell_id]):
            if name != cell_id:
                cell = dataclasses.replace(row.outcome.cell, id=name)
                row = dataclasses.replace(row, outcome=dataclasses.replace(row.outcome, cell=cell), planned_id=row.cell_id)
            out.append(row)
    # the order a local report reads cells in (sorted cell folders), so a merge equals a one-host run
    return sorted(out, key=lambda r: (r.cell_dir is None, r.outcome.cell.id)), notes


def _row_names(group: Sequence[Row]) -> list[str]:
    """Ids for the rows of one cell id: '<id>@<machine>-<backend>', then + the definition hash, then + the
    targets, until they differ. Pure."""
    names = [f"{r.outcome.cell.id}@" + _UNSAFE_ID.sub("_", f"{r.where.machine}-{r.where.backend}").strip("_") for r in group]
    for extra in (lambda r: r.outcome.cell.definition_hash[:8], lambda r: "+".join(r.key[2]) or "no-targets"):
        if len(set(names)) == len(group):
            break
        names = [f"{name}-{extra(row)}" for name, row in zip(names, group)]
    return names


@dataclasses.dataclass(frozen=True)
class Witness:
    row: str  # the row id in the report
    cell: str  # the cell id as planned
    where: str  # Where.key
    target: str
    simulated: bool
    observation: Observation

    def to_dict(self) -> dict[str, Any]:
        return {"row": self.row, "cell": self.cell, "where": self.where, "target": self.target, "simulated": self.simulated,
                **dataclasses.asdict(self.observation)}


@dataclasses.dataclass(frozen=True)
class Disagreement:
    cell: str  # the cell id as planned (before any '@machine' suffix)
    definition_hash: str
    case: str
    kind: str  # SIMULATED_VS_REAL | BETWEEN_MACHINES
    first: Witness  # the simulated one, for SIMULATED_VS_REAL
    second: Witness
    fields: tuple[str, ...]  # which of COMPARED_FIELDS differ

    def to_dict(self) -> dict[str, Any]:
        return {"cell": self.cell, "definition_hash": self.definition_hash, "case": self.case, "kind": self.kind,
                "first": self.first.to_dict(), "second": self.second.to_dict(), "fields": list(self.fields)}

    def describe(self) -> str:
        sides = (witness_text(self.first.to_dict()), witness_text(self.second.to_dict()))
        return f"{self.cell} {self.case} ({self.kind}, {', '.join(self.fields)} differ): {sides[0]} vs {sides[1]}"


def _witnesses(rows: Sequence[Row]) -> dict[tuple[str, str], list[Witness]]:
    """(definition hash, case) -> every comparable result of it across rows. Pure."""
    out: dict[tuple[str, str], list[Witness]] = {}
    for row in rows:
        if row.cell_dir is None or row.outcome.is_error:
            continue
        for result in row.outcome.results:
            if result.verdict.value in NOT_COMPARABLE:
                continue
            simulated = targets.is_simulated(result.variant) or result.simulated
            witness = Witness(row.outcome.cell.id, row.cell_id, row.where.key, result.variant, simulated, Observation.of(result))
            out.setdefault((row.outcome.cell.definition_hash, result.mode), []).append(witness)
    return out


def find_disagreements(rows: Sequence[Row]) -> list[Disagreement]:
    """Pairs of results of one cell definition and case that differ in verdict, gb id or frame: every simulated
    result with every real-hardware one, and results of the same kind from two machines (two real targets of one
    machine, gpu and sm120 on the same GPU, are one witness, not a pair). Pure."""
    found = []
    for (definition, case), group in sorted(_witnesses(rows).items()):
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if a.simulated != b.simulated:
                    kind, first, second = SIMULATED_VS_REAL, (a if a.simulated else b), (b if a.simulated else a)
                elif a.where != b.where:
                    kind, first, second = BETWEEN_MACHINES, a, b
                else:
                    continue
                fields = tuple(f for f in COMPARED_FIELDS if getattr(a.observation, f) != getattr(b.observation, f))
                if fields:
                    found.append(Disagreement(first.cell, definition, case, kind, first, second, fields))
    return found


def annotate(compat: CompatReport, loaded: Loaded, disagreements: Sequence[Disagreement]) -> CompatReport:
    """The typed report with where/source per row, the disagreements and the sources read. Pure."""
    by_id = {row.outcome.cell.id: row for row in loaded.rows}
    cells = tuple(dataclasses.replace(cell, where=row.where.to_dict() if row.outcome.where else None,
                                      source={"from": row.source, "member": row.member})
                  if (row := by_id.get(cell.id)) is not None else cell for cell in compat.cells)
    return dataclasses.replace(compat, cells=cells, disagreements=tuple(d.to_dict() for d in disagreements),
                               sources=tuple(s.to_dict() for s in loaded.sources), source_notes=tuple(loaded.notes))


def stage_cells(rows: Sequence[Row], cells_root: Path) -> None:
    """Each row's cell.json and JUnit under cells_root/<row id>/, where the JUnit merge looks (the edge)."""
    for row in rows:
        # Cell.from_dict already refused unsafe ids; checked again where the id becomes a path
        folder = cells_root / safe_id(row.outcome.cell.id, "cell id")
        folder.mkdir(parents=True, exist_ok=True)
        write_outcome(folder / CELL_FILE, row.outcome)
        if row.cell_dir is not None:
            files = RunFiles(row.cell_dir)
            for member in (files.junit_path, files.results_path, files.summary_path):
                if member.is_file() and not member.is_symlink():  # a planted link must not copy a local file in
                    shutil.copyfile(member, folder / member.name)
