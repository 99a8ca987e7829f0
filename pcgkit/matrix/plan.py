"""Plan the matrix: fixtures/matrix.toml + the cached SGLang pins -> cells. Pure, no I/O but reading TOML.

Explicit cells come first, in file order. `[sglang_releases]` adds one cell per SGLang release in a range,
each with exactly the pins it declares. A release whose (flashinfer, torch) pins another cell already
installs shares that cell's FlashInfer-only verdicts (`covers_sglang`) but still gets a cell of its own,
scope `sglang-level`, for the SGLang-level cases: every release in range is installed as itself. Every
cell is labelled on-pin or off-pin against what its SGLang release declares.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from pathlib import Path

from pcgkit import resources
from pcgkit.errors import UsageError
from pcgkit.matrix import schema
from pcgkit.matrix.cells import (
    EXISTING,
    KINDS,
    OFF_PIN,
    ON_PIN,
    SCOPE_SGLANG_LEVEL,
    TORCH_BUILD_CUDA,
    UNPINNED,
    VENV,
    Cell,
)
from pcgkit.matrix.locks import DEFAULT_LOCKS_DIR, with_lock_digests
from pcgkit.matrix.pins import PinsIndex, SglangRelease, load_pins
from pcgkit.matrix.rules import InstallRule, apply_rules, load_rules
from pcgkit.util import atomic
from pcgkit.util.ranges import version_key
from pcgkit.util.tomlfile import tomllib
from pcgkit.values.axes import PINNED_BY_SGLANG

MATRIX_SCHEMA = "pcgkit.matrix/1"
DEFAULT_MATRIX_FILE = resources.fixture("matrix.toml")
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Declared pins installed beside flashinfer-python when a cell carries an SGLang release.
COMPANION_DISTRIBUTIONS = ("flashinfer-cubin",)


class MatrixError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class MatrixSpec:
    cells: tuple[dict, ...]
    sglang_releases: dict | None
    defaults: dict


def parse_matrix(text: str, source: str = "matrix.toml") -> MatrixSpec:
    """The file's tables, validated field by field (pcgkit.matrix.schema) with the line in the message."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MatrixError(f"{source}: not valid TOML: {exc}") from exc
    if data.get("schema") != MATRIX_SCHEMA:
        raise MatrixError(f"{source}: schema {data.get('schema')!r}, expected {MATRIX_SCHEMA!r}")
    problems = schema.validate(data, text, source)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise MatrixError("; ".join(problems[:3]) + more)
    return MatrixSpec(tuple(data.get("cell", ())), data.get("sglang_releases"), data.get("defaults", {}))


def load_matrix(path: Path = DEFAULT_MATRIX_FILE) -> MatrixSpec:
    return parse_matrix(atomic.read_user_text(path, "--matrix"), str(path))  # bounded, never a device


def _cell_from_table(table: dict, defaults: dict, base_dir: Path | None) -> Cell:
    cell_id = table.get("id", "")
    if not _ID_RE.match(cell_id):
        raise MatrixError(f"cell id {cell_id!r}: use letters, digits, '.', '_' and '-'")
    kind = table.get("kind", VENV)
    if kind not in KINDS:
        raise MatrixError(f"cell {cell_id}: kind {kind!r}, expected one of {KINDS}")
    interpreter = table.get("interpreter")
    if kind == EXISTING and not interpreter:
        raise MatrixError(f"cell {cell_id}: kind 'existing' needs an interpreter")
    if interpreter and base_dir is not None and not Path(interpreter).is_absolute():
        interpreter = str((base_dir / interpreter).resolve())
    if kind == VENV and not (table.get("flashinfer-python") and table.get("torch")):
        raise MatrixError(f"cell {cell_id}: a venv cell needs flashinfer-python and torch pins")
    return Cell(
        id=cell_id,
        python=str(table.get("python", defaults.get("python", "3.12"))),
        sglang=table.get("sglang"),
        flashinfer=table.get("flashinfer-python"),
        torch=table.get("torch"),
        companions=tuple(table.get("companions", ())),
        flashinfer_extras=tuple(table.get("flashinfer-extras", ())),
        constraints=tuple(table.get("constraints", ())),
        kind=kind,
        interpreter=interpreter,
        base_image=table.get("base-image", defaults.get("base-image")),
        timeout_s=table.get("timeout-s"),
    )


def _with_declared_pins(cell: Cell, release: SglangRelease | None) -> Cell:
    """Add the companions (flashinfer-cubin) the release declares, and the on-pin/off-pin label."""
    if cell.sglang is None:
        return cell
    if release is None:
        return dataclasses.replace(
            cell, pin_status=OFF_PIN, pin_note=f"sglang {cell.sglang}: declared pins unknown (not in the pins cache)"
        )
    pins = release.pins
    companions = list(cell.companions)
    for name in COMPANION_DISTRIBUTIONS:
        if name in pins and not any(c.startswith(name) for c in companions) and cell.kind == VENV:
            companions.append(pins[name].requirement())
    declared = {name: pins[name].version for name in PINNED_BY_SGLANG if name in pins}
    actual = {"flashinfer-python": cell.flashinfer, "torch": cell.torch}
    differs = [f"{n} {actual[n]} (declares {v})" for n, v in declared.items() if actual[n] != v]
    declared_text = ", ".join(f"{n}=={v}" for n, v in declared.items()) or "no exact pins"
    if not differs and declared:
        status, note = ON_PIN, f"sglang {cell.sglang} declares {declared_text}"
    else:
        status, note = OFF_PIN, f"sglang {cell.sglang} declares {declared_text}; cell has " + ", ".join(differs)
    return dataclasses.replace(cell, companions=tuple(companions), pin_status=status, pin_note=note)


def _label_without_sglang(cell: Cell, index: PinsIndex) -> Cell:
    """A cell with no SGLang release is on-pin when some release declares exactly its pair."""
    matching = [
        r.version
        for r in index.releases
        if (p := r.pins).get("flashinfer-python") and p.get("torch")
        and p["flashinfer-python"].version == cell.flashinfer and p["torch"].version == cell.torch
    ]
    if matching:
        return dataclasses.replace(
            cell, pin_status=ON_PIN, pin_note="the pair sglang " + ", ".join(matching) + " declares (sglang not installed)"
        )
    return dataclasses.replace(cell, pin_status=OFF_PIN, pin_note="no SGLang release declares this pair")


def releases_in_range(index: PinsIndex, spec: dict) -> list[SglangRelease]:
    start = spec.get("from", "first-piecewise")
    if start == "first-piecewise":
        first = index.first_piecewise()
        if first is None:
            return []
        start = first.version
    end = spec.get("to", "newest")
    chosen = [r for r in index.releases if version_key(r.version) >= version_key(start)]
    if end != "newest":
        chosen = [r for r in chosen if version_key(r.version) <= version_key(end)]
    return chosen


def axis_releases(spec: MatrixSpec, index: PinsIndex) -> dict[str, tuple[str, ...]]:
    """Per version axis, the releases a stated range may span (oldest first): the SGLang releases of the
    matrix range, the known FlashInfer and torch releases (pcgkit.util.ranges names the gaps). Pure."""
    releases = {axis: tuple(index.known_versions.get(axis, ())) for axis in PINNED_BY_SGLANG}
    if spec.sglang_releases is not None:
        releases["sglang"] = tuple(r.version for r in releases_in_range(index, spec.sglang_releases))
    return releases


def default_axis_releases() -> dict[str, tuple[str, ...]]:
    """axis_releases of the shipped matrix and pins cache; {} when they cannot be read (then no stated
    range claims more than the versions measured)."""
    try:
        return axis_releases(load_matrix(), load_pins())
    except (ValueError, OSError):
        return {}


def _release_cell(release: SglangRelease, python: str, constraints: tuple[str, ...] = ()) -> Cell | None:
    pins = release.pins
    if "flashinfer-python" not in pins or "torch" not in pins:
        return None
    fi = pins["flashinfer-python"]
    return Cell(
        id=f"sglang-{release.version}",
        python=python,
        sglang=release.version,
        flashinfer=fi.version,
        flashinfer_extras=fi.extras,
        torch=pins["torch"].version,
        constraints=constraints,
        origin="sglang-release",
    )


def _install_key(cell: Cell) -> tuple:
    return (cell.kind, cell.python, cell.interpreter, cell.base_image, cell.flashinfer, cell.torch)


def plan(
    spec: MatrixSpec, index: PinsIndex, base_dir: Path | None = None, only: Iterable[str] = (),
    rules: tuple[InstallRule, ...] | None = None, locks_dir: Path | None = DEFAULT_LOCKS_DIR,
) -> list[Cell]:
    """The cells to run, labelled, with their install rules' constraints and the digest of their committed
    lock; `only` keeps the named ids (error on an unknown one)."""
    cells: list[Cell] = []
    for table in spec.cells:
        cell = _cell_from_table(table, spec.defaults, base_dir)
        if cell.sglang:
            cell = _with_declared_pins(cell, index.release(cell.sglang))
        elif cell.kind == VENV:
            cell = _label_without_sglang(cell, index)
        else:
            cell = dataclasses.replace(cell, pin_status=UNPINNED, pin_note=f"existing interpreter {cell.interpreter}")
        cells.append(cell)
    if spec.sglang_releases is not None:
        python = str(spec.sglang_releases.get("python", spec.defaults.get("python", "3.12")))
        for release in releases_in_range(index, spec.sglang_releases):
            candidate = _release_cell(release, python, tuple(spec.sglang_releases.get("constraints", ())))
            if candidate is None:
                continue
            twin = next((i for i, c in enumerate(cells) if _install_key(c) == _install_key(candidate)), None)
            if twin is not None:
                # same stack: the FlashInfer-only verdicts are shared; the SGLang-level ones are not
                cells[twin] = dataclasses.replace(cells[twin], covers_sglang=cells[twin].covers_sglang + (release.version,))
                if cells[twin].sglang == release.version:
                    continue  # that cell installs this very release and runs every case (the seed)
                candidate = dataclasses.replace(candidate, scope=SCOPE_SGLANG_LEVEL)
            cells.append(_with_declared_pins(candidate, release))
    cells = apply_rules(cells, load_rules() if rules is None else rules)
    if locks_dir is not None:
        cells = with_lock_digests(cells, locks_dir)
    ids = [c.id for c in cells]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise MatrixError(f"duplicate cell ids: {', '.join(duplicates)}")
    wanted = list(only)
    if wanted:
        unknown = [w for w in wanted if w not in ids]
        if unknown:
            raise MatrixError(f"unknown cell id(s): {', '.join(unknown)}; known: {', '.join(ids)}")
        cells = [c for c in cells if c.id in wanted]
    return cells


def with_torch_build(cells: Iterable[Cell], build: str) -> list[Cell]:
    """Every venv cell installing this build of its locked torch (an existing interpreter keeps its own). Pure."""
    return [dataclasses.replace(c, torch_build=build) if c.kind == VENV else c for c in cells]


def planned_cells(args) -> list[Cell]:
    """The cells a command's --matrix, --pins, --cell (and, where it has it, --torch-build) select."""
    matrix_path = Path(args.matrix)
    try:
        spec = load_matrix(matrix_path)
        cells = plan(spec, load_pins(Path(args.pins)), base_dir=matrix_path.parent, only=args.cell or ())
        return with_torch_build(cells, getattr(args, "torch_build", TORCH_BUILD_CUDA))
    except (MatrixError, ValueError, OSError) as exc:
        raise UsageError(str(exc)) from exc
