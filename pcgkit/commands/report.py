"""`pcgkit report`: merge the matrix cells (or other hosts' results, or a compat.json) into compat.md/json, index.html and one JUnit file; the matrix and bisect commands end with it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from pcgkit.errors import ExitCode, UsageError, status_for_results, worst
from pcgkit.matrix.outcome import STAGE_NOT_RUN, cells_root, not_run_outcome, read_outcome_row
from pcgkit.matrix.plan import default_axis_releases
from pcgkit.matrix.runner import CELL_FILE
from pcgkit.matrix.uninstallable import expected_failure, load_uninstallable, unexpectedly_installed
from pcgkit.report.compat import build_compat
from pcgkit.report.sources import annotate, find_disagreements, load_sources, local_rows, remove_unpacked, stage_cells
from pcgkit.report.writers import publish
from pcgkit.util import atomic, signals
from pcgkit.util.untrusted import is_safe_id

BISECT_ID_MARK = "~"  # bisect's probe cells are named "<base>~<axis>-<version>"


def matrix_status(outcomes) -> ExitCode:
    """Error cells (or error rows), else a change against a baseline, else success. A cell recorded as cannot-run
    ([[cannot-run]] in fixtures/expectations.toml) is not an error; one that installed although so recorded is a change."""
    rules = load_uninstallable()
    # a cell whose job never delivered (not run, with its reason) says nothing about the bug or the kit
    judged = [o for o in outcomes if expected_failure(o, rules) is None and o.stage != STAGE_NOT_RUN]
    if any(o.is_environment_error for o in judged):  # no interpreter, no index: the machine's fault, exit 4
        return ExitCode.ENVIRONMENT
    if any(o.is_error for o in judged):
        return ExitCode.ERROR_CELLS
    return worst(status_for_results(r for o in judged for r in o.results), _contradicted(outcomes, rules))


def _contradicted(outcomes, rules) -> ExitCode:
    """CHANGED when a cell installed although [[cannot-run]] records it as unable to."""
    return ExitCode.CHANGED if any(unexpectedly_installed(o, rules) is not None for o in outcomes) else ExitCode.SUCCESS


def parse_not_run(items: Sequence[str]) -> list[tuple[str, str]]:
    """'ID=REASON' -> (id, reason); a clear usage error otherwise. Pure."""
    out = []
    for item in items:
        cell_id, sep, reason = item.partition("=")
        if not sep or not cell_id.strip() or not reason.strip():
            raise UsageError(f"--not-run {item!r}: expected CELL_ID=REASON")
        if not is_safe_id(cell_id.strip()):  # the rule every reader applies: never write a compat.json --compat refuses
            raise UsageError(f"--not-run {item!r}: {cell_id.strip()!r} is not a cell id (letters, digits and ._+@-, "
                             "starting with a letter or digit, at most 128 characters)")
        out.append((cell_id.strip(), reason.strip()))
    return out


def report(reports: Path, with_bisect: bool = False, sources: Sequence[str] = (), compat: Path | None = None,
           not_run: Sequence[tuple[str, str]] = (), over: Path | None = None) -> int:
    """Merge cells (merge_cells says which) into compat.md/json, the dashboard and the merged JUnit, keep the
    history, and return the matrix status (pcgkit.errors.ExitCode). `compat`: render that compat.json instead;
    `over`: the cells in place of the same cells of that compat.json (pcgkit.report.compat.splice), the status
    judged on the whole. Bisection's probe cells stay out unless asked. Written under signals.deferred(): a stop
    waits until the files are done."""
    atomic.check_writable_dir(reports)
    if over is not None and compat is not None:
        raise UsageError("--over and --compat: pass one (--over splices cells into a compat.json; --compat renders one)")
    if compat is not None:
        merged = Merged(_read_compat(compat), [], cells_root(reports), [], [], [])
    else:
        merged = merge_cells(reports, with_bisect, sources, not_run, over)
    typed, outcomes, root, bad_inputs, notes, disagreements = merged
    with signals.deferred():
        try:
            typed, written = publish(typed, reports, outcomes, root)
            if over is not None and written.get("junit"):
                _splice_junit(over, written["junit"][0])
        except RuntimeError as exc:  # the merged JUnit failed validation: a kit bug, said loudly
            print(f"pcgkit report: {exc}")
            return int(ExitCode.ERROR_CELLS)
    paths = [str(p) for name in ("markdown", "json", "dashboard", "junit", "history") for p in written.get(name, ())]
    print(f"pcgkit report: {len(typed.cells)} cells -> " + ", ".join(paths))
    for o in outcomes:
        if o.stage == "read":
            print(f"  error row {o.cell.id}: {o.reason}")
    for ch in typed.changes:
        print(f"  changed: {ch.cell} {ch.case}: {ch.previous} -> {ch.current}")
    for d in disagreements:
        print(f"  disagree: {d.describe()}")
    for line in bad_inputs + notes:
        print(f"  input: {line}")
    # the same cells give the same status whatever the entry point: a compat.json's cannot-run
    # cells are not errors, exactly as matrix_status judges the cells themselves
    # (with --over, the whole spliced table is judged, plus a re-run cell that contradicts a cannot-run record)
    status = matrix_status(outcomes) if outcomes and over is None else worst(
        ExitCode.ERROR_CELLS if any(c.broken for c in typed.cells) else ExitCode.SUCCESS,
        _contradicted(outcomes, load_uninstallable()))
    return int(worst(status, ExitCode.ERROR_CELLS if bad_inputs else ExitCode.SUCCESS))


class Merged(NamedTuple):
    """What the report renders: the typed table and what it was built from."""

    typed: Any  # pcgkit.report.model.CompatReport
    outcomes: list
    root: Path  # the cells' folder
    bad_inputs: list[str]
    notes: list[str]
    disagreements: list


def merge_cells(reports: Path, with_bisect: bool, sources: Sequence[str], not_run: Sequence[tuple[str, str]],
                over: Path | None) -> Merged:
    """The cells on disk, or from `sources` (folders and archives from any number of hosts, staged under
    reports/matrix/merged), as one typed table, spliced into `over`'s when given; an unreadable or foreign input
    is an error row with the reason."""
    root = cells_root(reports)
    if sources:
        loaded = load_sources(sources, reports / "matrix" / "merged")
        root = reports / "matrix" / "merged" / "cells"
    else:
        if not root.is_dir():
            raise UsageError(f"no cells under {root}: run `pcgkit matrix` first (or pass --compat compat.json)")
        # every cell.json, bisection's too (filtered below); an unreadable one is an error row, never dropped
        loaded = local_rows([read_outcome_row(p) for p in sorted(root.glob(f"*/{CELL_FILE}"))], root)
    if not with_bisect:
        loaded = dataclasses.replace(loaded, rows=tuple(r for r in loaded.rows if BISECT_ID_MARK not in r.cell_id))
    if sources:
        try:
            stage_cells(loaded.rows, root)
        finally:
            remove_unpacked(reports / "matrix" / "merged")
    present = {r.outcome.cell.id for r in loaded.rows}
    outcomes = [r.outcome for r in loaded.rows] + [not_run_outcome(i, why) for i, why in not_run if i not in present]
    if not outcomes:
        raise UsageError(f"no cells under {root}: run `pcgkit matrix` first (or pass --compat compat.json)")
    disagreements = find_disagreements(loaded.rows)
    typed = annotate(build_compat(outcomes, releases=default_axis_releases()), loaded, disagreements)
    if over is not None:
        from pcgkit.report.compat import splice

        typed = splice(_read_compat(over), typed, releases=default_axis_releases())
    return Merged(typed, outcomes, root, [f"{s.source}: {p}" for s in loaded.sources for p in s.problems],
                  list(loaded.notes), disagreements)


def _splice_junit(over: Path, merged: Path) -> None:
    """The merged JUnit beside `over` (matrix-junit.xml[.gz]), with this run's cells in place of its own."""
    from pcgkit.report.junit_merge import splice_merged, validated

    beside = next((p for p in (over.with_name(merged.name + ".gz"), over.with_name(merged.name)) if p.is_file()), None)
    if beside is None:
        print(f"  input: no {merged.name}[.gz] beside {over}: {merged} holds this run's cells only")
        return
    problems = validated(splice_merged(beside, merged))
    if problems:
        raise RuntimeError(f"{merged} is NOT xunit2-valid after splicing {beside}: {problems[:3]}")


def _read_compat(path: Path):
    from pcgkit.report.model import CompatSchemaError, from_json

    try:
        data = atomic.parse_json(atomic.read_user_bytes(path, "--compat", allow_pipe=True), str(path))
        return from_json(data, releases_if_absent=default_axis_releases())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable compat.json: {exc}") from exc
    except CompatSchemaError as exc:
        raise UsageError(f"{path}: {exc}") from exc


def _cmd_report(args) -> int:
    return report(Path(args.reports), with_bisect=args.with_bisect, sources=args.sources or (),
                  compat=Path(args.compat) if args.compat else None, not_run=parse_not_run(args.not_run or ()),
                  over=Path(args.over) if args.over else None)


def register(subparsers) -> None:
    rep = subparsers.add_parser("report", help="merge the matrix cells into compat.md/json, index.html, JUnit",
                             description="Merge the matrix cells under REPORTS/matrix/ into compat.md, compat.json, index.html and one JUnit file.",
                             epilog="example:\n  %(prog)s --reports reports")
    rep.add_argument("--reports", default="reports", help="reports folder (default: reports/)")
    rep.add_argument("--with-bisect", action="store_true", help="include bisection's probe cells (id base~axis-version)")
    rep.add_argument("--from", dest="sources", action="append", metavar="DIR|ARCHIVE",
                     help="merge cell results from this folder or .tar[.gz]/.zip archive instead of reports/matrix/cells "
                          "(repeatable; e.g. one CI artifact per cell, from many hosts)")
    rep.add_argument("--not-run", action="append", metavar="CELL_ID=REASON",
                     help="a planned cell whose job delivered nothing (e.g. its GPU runner was offline): shown as "
                          "'not run' with the reason, not an error (repeatable; CI's report job passes these)")
    rep.add_argument("--compat", help="render this compat.json (schema pcgkit.compat/1 or /2) instead of the cells on disk")
    rep.add_argument("--over", metavar="COMPAT_JSON",
                     help="put the cells read (from --reports or --from) in place of the same cells of this compat.json "
                          "and keep its others as measured: re-run a few cells of a sample without the rest")
    rep.set_defaults(func=_cmd_report)
