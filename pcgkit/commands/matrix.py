"""`pcgkit matrix` and `pcgkit bisect`: plan -> run cells -> merge and render. What regenerates the matrix's data (pins,
locks, discovered releases, the tox section) is the workshop's (lab/commands/: pins, lock, discover, tox)."""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import sys
from pathlib import Path

from pcgkit import resources
from pcgkit.catalog import all_modes, modes_in_scope
from pcgkit.commands.report import BISECT_ID_MARK, matrix_status, report
from pcgkit.errors import Interrupted, UsageError
from pcgkit.matrix import backends, torchbuild
from pcgkit.matrix import pins as pins_mod
from pcgkit.matrix.backends.base import BackendConfig
from pcgkit.matrix.bisect import bisect, versions_between
from pcgkit.matrix.cells import SCOPE_ALL, SCOPES, TORCH_BUILD_CUDA, TORCH_BUILDS, Cell
from pcgkit.matrix.outcome import cells_root
from pcgkit.matrix.plan import DEFAULT_MATRIX_FILE, planned_cells
from pcgkit.matrix.runner import default_jobs, run_matrix
from pcgkit.matrix.uninstallable import expected_failure, load_uninstallable, unexpectedly_installed
from pcgkit.preflight.case import ENV_VAR as PREFLIGHT_ENV_VAR
from pcgkit.preflight.case import PREFLIGHT_LAUNCH
from pcgkit.preflight.case import load as load_launch_file
from pcgkit.report.compat import BUG_VERDICTS, mode_entry
from pcgkit.util import atomic
from pcgkit.util.argtypes import marker_expression, positive_int, positive_seconds
from pcgkit.util.diskuse import TYPICAL_STACK_ENV_GB
from pcgkit.values import targets
from pcgkit.values.axes import BISECTABLE_AXES


def preflight_launch(args) -> tuple[str, str] | None:
    """`--preflight FILE`: (its absolute path, a digest of its content), validated here (a bad file is one line)."""
    path = getattr(args, "preflight", None)
    if not path:
        return None
    launch = load_launch_file(path)
    return str(Path(path).resolve()), hashlib.sha256(repr(launch.to_dict()).encode()).hexdigest()[:16]


def backend_config(args) -> BackendConfig:
    backend = getattr(args, "backend", backends.DEFAULT)
    if getattr(args, "torch_build", TORCH_BUILD_CUDA) != TORCH_BUILD_CUDA and backend != backends.DEFAULT:
        raise UsageError(f"--torch-build {args.torch_build}: the venv backend's option; the {backend} backend's torch "
                         "comes from its image (give its build a wheelhouse of CPU wheels with --wheelhouse)")
    # checked once here, not discovered by every cell: a file or a read-only folder at --envs is one line
    envs = atomic.check_writable_dir(Path(args.envs), "--envs (where cell environments go)")
    preflight = preflight_launch(args)
    expected = (*all_modes(), *((PREFLIGHT_LAUNCH.id,) if preflight else ()))
    return BackendConfig(
        cells_root=cells_root(Path(args.reports)), envs_root=envs, timeout_s=args.timeout,
        case_timeout_s=min(args.timeout, 600.0), backend=backend,
        select=getattr(args, "select", None), require_hardware=tuple(getattr(args, "require_hardware", None) or ()),
        force=bool(getattr(args, "force", False)), expected_modes=expected,
        torch_cpu_index=getattr(args, "torch_cpu_index", None) or torchbuild.DEFAULT_CPU_INDEX,
        scope_modes={scope: tuple(modes_in_scope(scope)) for scope in SCOPES if scope != SCOPE_ALL},
        case_env=((PREFLIGHT_ENV_VAR, preflight[0]),) if preflight else (),
        answers_for=(("preflight", preflight[1]),) if preflight else (),
    )


def cell_runner(args):
    """The chosen backend's RunCell, from the registry (a backend's module is imported only when chosen)."""
    return backends.runner(getattr(args, "backend", backends.DEFAULT), args)


def _cmd_matrix(args) -> int:
    cells = planned_cells(args)
    if not cells:  # never "no cells: run `pcgkit matrix` first" from the report of the run that planned none
        raise UsageError(f"--matrix {args.matrix}: the plan has no cells (no [[cell]] table and no [sglang_releases] "
                         "range); add one, or drop --matrix for the kit's own matrix")
    if args.list:
        import datetime as dt

        from pcgkit.matrix.uninstallable import planned_cannot_run

        today = dt.datetime.now(dt.timezone.utc).date()
        cannot = planned_cannot_run(cells, load_uninstallable(), today, getattr(args, "retry_cannot_run", False))
        for cell in cells:
            scope = "" if cell.scope == SCOPE_ALL else f" [{cell.scope} cases only]"
            rule = cannot.get(cell.id)
            state = f" [cannot-run: last tried {rule.tried}, next retry {rule.next_retry(today)}]" if rule else ""
            print(f"{cell.id:<24} {cell.pin_status:<8} {cell.label():<52} {cell.pin_note}{scope}{state}")
        return 0
    reports = Path(args.reports)
    atomic.check_writable_dir(reports)  # before an hour of installs, not after
    print(f"pcgkit matrix: {len(cells)} cell(s); each runs in its own environment under {args.envs}, reused while "
          f"the cell's definition holds (a new one is about {TYPICAL_STACK_ENV_GB} GB as du counts it, mostly "
          "hardlinks into uv's cache); `pcgkit cache` lists them", file=sys.stderr)
    try:
        outcomes = run_matrix(cells, backend_config(args), jobs=args.jobs, force=args.force, run=cell_runner(args),
                              retry_cannot_run=getattr(args, "retry_cannot_run", False))
    except Interrupted:
        report(reports)  # the finished cells and the interrupted rows, then exit 130/143
        raise
    report(reports)
    cell_problems(outcomes)  # prints error cells, cannot-run ones and contradicted expectations
    # this run's cells decide its status; other cells on disk are in the report, judged by `pcgkit report`
    return int(matrix_status(outcomes))


def cell_problems(outcomes) -> list[str]:
    """Printed lines for cells that make the run fail: error cells (unless cannot-run, as
    fixtures/expectations.toml records) and cells that installed although recorded as cannot-run."""
    rules = load_uninstallable()
    problems = []
    for o in outcomes:
        expected = expected_failure(o, rules)
        if expected is not None:
            print(f"  {o.cell.id}: {expected.describe()}")
        elif o.is_error:
            problems.append(f"  error cell {o.cell.id} ({o.stage}): {o.reason}")
        elif (contradicted := unexpectedly_installed(o, rules)) is not None:
            problems.append(f"  changed: cell {o.cell.id} installed although {contradicted.describe()}; "
                            "remove or re-date that [[cannot-run]] entry in fixtures/expectations.toml")
    for line in problems:
        print(line)
    return problems


def _axis_cell(base: Cell, axis: str, version: str, planned: list[Cell]) -> Cell:
    field, short = {"flashinfer-python": ("flashinfer", "fi"), "torch": ("torch", "torch"),
                    "sglang": ("sglang", "sglang")}[axis]
    if getattr(base, field) == version:
        return base  # the base cell itself, with its cached result
    companions = base.companions
    if axis == "flashinfer-python" and base.flashinfer:
        # flashinfer-cubin==<base's flashinfer> follows flashinfer-python: pinning it beside another
        # flashinfer release would test a mismatched pair (and such a cubin may not exist).
        companions = tuple(c for c in companions if not (c.startswith("flashinfer-") and c.endswith(f"=={base.flashinfer}")))
    changes: dict = {field: version}  # typed loosely: `field` names one of three str fields
    cell = dataclasses.replace(base, id=f"{base.id}{BISECT_ID_MARK}{short}-{version}", companions=companions,
                               covers_sglang=(), **changes)
    # Reuse a planned cell (and so its cached result) that installs exactly this.
    twin = next((c for c in planned if c.definition_hash == cell.definition_hash), None)
    return twin or cell


def _cmd_bisect(args) -> int:
    planned = planned_cells(argparse.Namespace(**{**vars(args), "cell": None}))  # the whole plan: reusable cells
    base = next((c for c in planned if c.id == args.base), None)
    if base is None:
        raise UsageError(f"--base {args.base}: not a cell of {args.matrix}")
    index = pins_mod.load_pins(Path(args.pins))
    known = index.known_versions.get(args.axis) or tuple(r.version for r in index.releases)
    try:
        versions = versions_between(known, args.first, args.last)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    config = backend_config(args)
    evidence: dict[str, dict] = {}

    def evaluate(version: str) -> str | None:
        cell = _axis_cell(base, args.axis, version, planned)
        outcome = run_matrix([cell], config, jobs=1, force=args.force, run=cell_runner(args))[0]
        entry = mode_entry(outcome, args.mode)
        evidence[version] = {"cell": cell.id, **entry}
        print(f"  {args.axis} {version}: {entry['verdict']} {entry.get('signature', '')} [{cell.id}]")
        return bisect_key(entry, args.on)

    print(f"pcgkit bisect: {args.mode} ({args.on}) along {args.axis}, {len(versions)} versions "
          f"{versions[0]}..{versions[-1]}, other pins from cell {base.id}")
    result = bisect(versions, evaluate)
    print(f"\n{result.message}  ({len(result.probes)} of {len(versions)} versions evaluated)")
    for side, probe in (("before", result.before), ("after", result.after)):
        if probe is not None:
            e = evidence[probe.version]
            print(f"  {side}: {args.axis} {probe.version} [{e['cell']}]: {e['verdict']} {e.get('signature', '')}")
            print(f"         reason: {e.get('reason', '')}")
    if args.every:
        return _check_every(args, base, versions, planned, config, result)
    return 0 if result.found else 1


def bisect_key(entry: dict, on: str) -> str | None:
    """What bisection compares for one cell x mode (None: no statement). Pure. "frame" adds the innermost FlashInfer
    frame's file and function (not its line: lines move with unrelated edits), so a failure that moved elsewhere in
    the library is a change even when the verdict stays "reproduced"."""
    if entry["verdict"] not in BUG_VERDICTS:
        return None
    if on == "verdict":
        return entry["verdict"]
    frame = entry.get("innermost_frame") or ""
    parts = frame.split(":")
    where = f"{parts[0]}:{parts[-1]}" if len(parts) >= 3 else (frame or "no FlashInfer frame")
    return f"{entry['verdict']} at {where}"


def first_change(keys: list[str | None]) -> int | None:
    """Index of the first key that differs from the first usable one (None keys skipped). Pure."""
    usable = [(i, k) for i, k in enumerate(keys) if k is not None]
    return next((i for i, k in usable if k != usable[0][1]), None) if usable else None


def _check_every(args, base: Cell, versions: list[str], planned: list[Cell], config, result) -> int:
    """Evaluate every version on the axis (cached cells reused) and compare its boundary with bisection's."""
    cells = [_axis_cell(base, args.axis, v, planned) for v in versions]
    outcomes = run_matrix(cells, config, jobs=args.jobs, force=False, show_progress=False, run=cell_runner(args))
    keys = [bisect_key(mode_entry(o, args.mode), args.on) for o in outcomes]
    print(f"\nevery version ({len(versions)} cells):")
    for version, key, outcome in zip(versions, keys, outcomes):
        print(f"  {args.axis} {version}: {key or 'no verdict (' + (outcome.reason or 'error')[:80] + ')'}")
    index = first_change(keys)
    exhaustive = versions[index] if index is not None else None
    bisected = result.after.version if result.after is not None else None
    agree = exhaustive == bisected
    print(f"first change, every version: {exhaustive}; bisection: {bisected} -> "
          + ("same boundary" if agree else "DIFFERENT boundaries (more than one change on the axis?)"))
    return 0 if agree and result.found else 1


def _common(parser) -> None:
    parser.add_argument("--matrix", default=str(DEFAULT_MATRIX_FILE), help="matrix definition (TOML)")
    parser.add_argument("--pins", default=str(pins_mod.DEFAULT_PINS_FILE), help="cached SGLang Requires-Dist")
    parser.add_argument("--reports", default="reports", help="reports folder (default: reports/)")
    parser.add_argument("--envs", default=str(resources.default_envs_root()), help="where cell environments live")
    parser.add_argument("--timeout", type=positive_seconds, default=1800, help="seconds per cell, install included")
    parser.add_argument("--force", action="store_true", help="rerun cells even when a result for them exists, and rebuild their environments")
    parser.add_argument("-m", dest="select", type=marker_expression(tuple(targets.PYTEST_MARKERS)), help="pytest marker expression passed into every cell, e.g. 'cpu_sim'")
    parser.add_argument("--require-hardware", action="append", choices=targets.HARDWARE_MARKERS,
                        help="in every cell: fail instead of skip when this hardware is missing (GPU runners)")
    parser.add_argument("--preflight", metavar="FILE",
                        help="a team's SGLang launch (pcgkit.preflight-launch/1 TOML): every cell also answers "
                             "`pcgkit preflight` for it (case preflight-launch), e.g. before an upgrade")
    build = parser.add_argument_group("torch build (venv backend)")
    build.add_argument("--torch-build", choices=TORCH_BUILDS, default=TORCH_BUILD_CUDA,
                       help="which build of each cell's locked torch to install: cuda (default) = the committed lock as "
                            "it is (PyPI's Linux wheel, nvidia-* and triton with it); cpu = PyTorch's CPU-only build of "
                            "the same version, every other pin as locked: no CUDA wheels, but FlashInfer answers differently "
                            "under it (docs/ci.md), and its results are kept apart from the cuda build's")
    build.add_argument("--torch-cpu-index", default=os.environ.get(torchbuild.INDEX_VAR) or torchbuild.DEFAULT_CPU_INDEX,
                       metavar="URL|DIR",
                       help=f"with --torch-build cpu: where the CPU wheels are, read as uv's --find-links (a page of "
                            f"links or a folder of wheels); default ${torchbuild.INDEX_VAR}, else {torchbuild.DEFAULT_CPU_INDEX}")
    backends.add_options(parser)


def register(subparsers) -> None:
    matrix = subparsers.add_parser("matrix", help="run the version matrix (one environment per cell), then report",
                                description="Run every cell of the version matrix (fixtures/matrix.toml), one environment each, then write the compatibility report.",
                                epilog="examples:\n  %(prog)s --list                 # the planned cells\n  %(prog)s --cell seed --jobs 2   # one cell\n  %(prog)s                        # every cell, resumed from cache")
    _common(matrix)
    matrix.add_argument("--cell", action="append", help="run only this cell id (repeatable)")
    matrix.add_argument("--jobs", type=positive_int, default=default_jobs(), help="cells in parallel (default: cores)")
    matrix.add_argument("--list", action="store_true", help="print the planned cells and their pin labels")
    matrix.add_argument("--retry-cannot-run", action="store_true",
                        help="run the cells fixtures/expectations.toml records as cannot-run now, not only on their "
                             "retry days (every retry-days after the date last tried)")
    matrix.set_defaults(func=_cmd_matrix)

    bis = subparsers.add_parser("bisect", help="find where a mode's verdict changes along one axis",
                             description="Find the release where a case's verdict (or innermost FlashInfer frame) changes along one version axis.",
                             epilog="example:\n  %(prog)s --mode mode2 --on frame --from 0.6.16 --to 0.7.0 --base fi-0.7.0")
    _common(bis)
    bis.add_argument("--mode", required=True, choices=sorted(all_modes()), help="case id (failure or fix mode)")
    bis.add_argument("--axis", default="flashinfer-python", choices=BISECTABLE_AXES)
    bis.add_argument("--from", dest="first", required=True, help="first version (oldest)")
    bis.add_argument("--to", dest="last", required=True, help="last version (newest)")
    bis.add_argument("--base", default="seed", help="cell whose other pins stay fixed (default: seed)")
    bis.add_argument("--on", choices=("verdict", "frame"), default="verdict",
                     help="what counts as a change: the verdict, or the verdict and the innermost FlashInfer frame")
    bis.add_argument("--every", action="store_true",
                     help="then evaluate every version on the axis too and compare the boundaries")
    bis.add_argument("--jobs", type=positive_int, default=default_jobs(), help="cells in parallel for --every")
    bis.set_defaults(func=_cmd_bisect)
