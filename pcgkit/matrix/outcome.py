"""A cell's outcome on disk (cell.json beside its JUnit and results.json), and why a cell failed.

A cell either *ran* (its results are verdicts, errors included per mode) or is an *error cell*: the
install, the import check or the run broke before any verdict. An error cell carries the stage, the
reason and the log tail, and is never a statement about the bug.

Construction is a data boundary: reason, log tail, versions and provenance are cleaned of control
characters and redacted (pcgkit.util.sanitize / redact) when the value is made, so no writer after it
can carry either. An unreadable cell.json becomes an error row (`unreadable_outcome`), never a lost one.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import re
from pathlib import Path
from typing import Any

from pcgkit.matrix.cells import Cell
from pcgkit.matrix.where import Where
from pcgkit.util import atomic, untrusted
from pcgkit.util.redact import redact_text, redact_tree
from pcgkit.util.sanitize import clean_text, clean_tree
from pcgkit.values import targets
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import CaseResult

CELL_SCHEMA = "pcgkit.cell/1"
RAN = "ran"
ERROR = "error"

STAGE_INSTALL = "install"
STAGE_IMPORT = "import"
STAGE_RUN = "run"
STAGE_READ = "read"  # the cell.json on disk could not be read back
STAGE_INTERRUPTED = "interrupted"  # a stop signal arrived before the cell finished
# The causes an install-stage error's reason starts with when the machine is at fault, not the cell's pins:
# such a cell makes the run exit 4 (environment), not 3.
INTERPRETER_MISSING = "interpreter missing"
NETWORK = "network"
ENVIRONMENT_CAUSES = (INTERPRETER_MISSING, NETWORK)
STAGE_NOT_RUN = "not run"  # planned, but its job never delivered (e.g. an offline GPU runner): the reason says why
STAGE_CANNOT_RUN = "cannot run"  # planned not to run from a measured fact (pcgkit.matrix.uninstallable)

LOG_TAIL_CHARS = 2000


def yielded_verdicts(results, run_ok: bool) -> bool:
    """A cell ran when its run gave results, unless the run failed and every row is an error (nothing was
    learnt about the bug: an error cell). Pure."""
    return bool(results) and (run_ok or not all(r.verdict is Verdict.ERROR for r in results))


@dataclasses.dataclass(frozen=True)
class CellOutcome:
    cell: Cell
    status: str  # RAN | ERROR
    duration_s: float
    stage: str | None = None  # where an error cell broke
    reason: str = ""
    log_tail: str = ""
    versions: dict[str, Any] = dataclasses.field(default_factory=dict)  # as installed (the import check)
    results: tuple[CaseResult, ...] = ()
    finished: str = ""
    from_cache: bool = False
    provenance: dict[str, Any] = dataclasses.field(default_factory=dict)  # e.g. the image, its digest, CUDA
    # The machine that ran it: `pcgkit report --from` merges many hosts' results, none may pass for another's.
    where: Where | None = None
    costs: dict[str, float] = dataclasses.field(default_factory=dict)  # seconds per stage and case (matrix.costs)
    # The full installed set (name -> version, as `uv pip freeze` lists it) and the lock it came from.
    installed: dict[str, str] = dataclasses.field(default_factory=dict)
    lock: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("reason", "log_tail"):
            object.__setattr__(self, name, redact_text(clean_text(str(getattr(self, name) or ""))))
        for name in ("versions", "provenance"):
            object.__setattr__(self, name, redact_tree(clean_tree(getattr(self, name) or {})))

    @property
    def is_error(self) -> bool:
        return self.status == ERROR

    @property
    def is_environment_error(self) -> bool:
        """This machine cannot run the cell (its interpreter is missing, the index unreachable): exit 4, not 3."""
        return self.is_error and self.stage == STAGE_INSTALL and self.reason.startswith(ENVIRONMENT_CAUSES)

    def result_for(self, mode: str) -> CaseResult | None:
        """The mode's result on the primary target the matrix compares (simulated SM120 unless real)."""
        ran = [r for r in self.results if r.mode == mode]
        for variant in targets.PRECEDENCE:  # real hardware outranks the simulation
            hit = next((r for r in ran if r.variant == variant and r.verdict.ran), None)
            if hit is not None:
                return hit
        return ran[0] if ran else None

    def to_dict(self) -> dict:
        return {
            "schema": CELL_SCHEMA,
            # companions may be `name @ https://user:pass@host/x.whl`: redacted here, while the stored
            # definition_hash (computed above from the real pins) still identifies the cell for resume
            "cell": redact_tree(self.cell.to_dict()),
            "status": self.status,
            "stage": self.stage,
            "reason": self.reason,
            "log_tail": self.log_tail,
            "duration_s": round(self.duration_s, 3),
            "versions": self.versions,
            "results": [r.to_dict() for r in self.results],
            "provenance": self.provenance,
            "where": self.where.to_dict() if self.where else None,
            "costs": self.costs,
            "installed": self.installed,
            "lock": self.lock,
            "finished": self.finished or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        }

    @classmethod
    def from_dict(cls, data: dict, from_cache: bool = False) -> CellOutcome:
        if data.get("schema") != CELL_SCHEMA:
            raise ValueError(f"cell outcome schema {data.get('schema')!r}, expected {CELL_SCHEMA!r}")
        # every field typed: a crafted cell.json is one error row naming the field, never a crash in a writer
        what = "cell.json"
        status = untrusted.text(data, "status", what, default=None)
        if status not in (RAN, ERROR):
            raise ValueError(f"{what}.status {status!r:.40}: expected {RAN!r} or {ERROR!r}")
        plain = ("stage", "reason", "log_tail", "finished", "provenance", "costs", "installed", "lock")
        return cls(
            cell=Cell.from_dict(data["cell"]),
            status=status,
            duration_s=untrusted.finite_number(data, "duration_s", what),
            versions=untrusted.str_map(data.get("versions"), f"{what}.versions"),
            results=tuple(CaseResult.from_dict(r) for r in _list(data, "results", what)),
            from_cache=from_cache,
            where=Where.from_dict(untrusted.mapping(data, "where", what)) if data.get("where") else None,
            **untrusted.typed_fields(cls, data, plain, what),
        )


def _list(data: dict, key: str, what: str) -> list:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise ValueError(f"{what}.{key}: expected a list, got {type(value).__name__}")
    return value


def with_where(outcome: CellOutcome, where: Where) -> CellOutcome:
    """The outcome stamped with where it ran, unless it already says (a cached result keeps its own). Pure."""
    return outcome if outcome.where is not None else dataclasses.replace(outcome, where=where)


def write_outcome(path: Path, outcome: CellOutcome) -> None:
    # atomic: concurrent writers never share a temp file, a killed run never leaves half a cell.json
    atomic.write_json(path, outcome.to_dict())


def load_outcome(path: Path, from_cache: bool = False) -> CellOutcome:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"top level is {type(data).__name__}, expected an object")
    return CellOutcome.from_dict(data, from_cache=from_cache)


def read_outcome(path: Path, from_cache: bool = False) -> CellOutcome | None:
    """The outcome, or None when the file is missing or unreadable (resume then reruns the cell)."""
    try:
        return load_outcome(path, from_cache)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def not_run_outcome(cell_id: str, reason: str) -> CellOutcome:
    """A planned cell whose job did not deliver a result: a row saying so, no verdict, not an error of the kit."""
    return CellOutcome(Cell(id=cell_id), ERROR, 0.0, STAGE_NOT_RUN, reason)


def unreadable_outcome(path: Path, why: str) -> CellOutcome:
    """A visible error row for a cell.json that cannot be read: the cell id is its folder's name."""
    return CellOutcome(Cell(id=path.parent.name), ERROR, 0.0, STAGE_READ, f"unreadable result: {path}: {why}")


def read_outcome_row(path: Path) -> CellOutcome:
    """For the report: the outcome, or an error row saying why the file could not be read."""
    try:
        return load_outcome(path)
    except UnicodeDecodeError as exc:
        return unreadable_outcome(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})")
    except json.JSONDecodeError as exc:
        return unreadable_outcome(path, f"not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}; truncated?)")
    except OSError as exc:
        return unreadable_outcome(path, exc.strerror or str(exc))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        detail = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
        return unreadable_outcome(path, detail.splitlines()[0] if detail else type(exc).__name__)


# The resolver's own words for the install failures worth naming.
_INSTALL_CAUSES: tuple[tuple[str, str], ...] = (
    # offline (UV_OFFLINE, --offline) wears uv's "No solution found" words: the machine's state, not the pins
    (r"network was disabled|was not found in the cache|needs to be downloaded from a registry", NETWORK),
    (r"there is no version of|no matching distribution|versions? of .* (is|are) available|not found in the package registry",
     "unknown version"),
    (r"no solution found|conflicting|incompatible|ResolutionImpossible|unsatisfiable", "resolver conflict"),
    (r"No interpreter found|no python|could not find python", INTERPRETER_MISSING),
    (r"timed out|failed to fetch|connection|network", NETWORK),
)


def classify_install_failure(log_text: str) -> str:
    """A short cause for a failed install, from the installer's output. Pure."""
    for pattern, cause in _INSTALL_CAUSES:
        if re.search(pattern, log_text, re.IGNORECASE):
            return cause
    return "install failed"


_MISSING_DEPENDENCY = re.compile(r"there is no version of (\S+?)(?:,| and) (\S+) depends on (\S+?)(?:,|$)", re.MULTILINE)
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b.*)$", re.MULTILINE)


def install_failure_detail(log_text: str) -> str:
    """The resolver's own culprit when a dependency, not a pinned package, is missing ('flashinfer-python==0.4.1
    depends on apache-tvm-ffi==0.1.0b15, which the index does not have'), '' otherwise. Pure."""
    match = _MISSING_DEPENDENCY.search(log_text)
    return f"{match[2]} depends on {match[1]}, which the index does not have" if match else ""


_UV_ERROR = re.compile(r"^\s*(?:error|×):?\s*(?P<what>.+)$", re.MULTILINE)
_UV_CAUSE = re.compile(r"^\s*(?:cause:|Caused by:|╰─▶)\s*(?P<why>.+)$", re.MULTILINE)


def uv_culprit(log_text: str) -> str:
    """uv's last `error:` line and the first cause after it ('Failed to parse: `torch==abc` (expected version
    to start with a number, ...)' says what to change; "install failed" does not); '' without one. Pure."""
    errors = list(_UV_ERROR.finditer(log_text))
    if not errors:
        return ""
    last = errors[-1]
    what = last["what"].strip().rstrip(":")
    cause = _UV_CAUSE.search(log_text, last.end())
    why = f": {cause['why'].strip()}" if cause else ""
    return (what + why)[:400]


def last_exception_line(log_text: str) -> str:
    """The last 'SomeError: message' line of a traceback, for a reason that says what broke. Pure."""
    lines = _EXCEPTION_LINE.findall(log_text)
    return lines[-1].strip()[:300] if lines else ""


def cells_root(reports: Path) -> Path:
    """Where the matrix keeps one folder per cell under a reports folder (reports/matrix/cells)."""
    return reports / "matrix" / "cells"
