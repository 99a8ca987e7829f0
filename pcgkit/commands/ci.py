"""`pcgkit ci github` (write the workflow) and `pcgkit ci local` (run its fan-out on this machine)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pcgkit import resources
from pcgkit.ci.plan import CiPlan, CiPlanError, parse_runner_labels, plan_ci
from pcgkit.errors import UsageError
from pcgkit.matrix import pins as pins_mod
from pcgkit.matrix.cells import TORCH_BUILD_CUDA, TORCH_BUILDS
from pcgkit.matrix.plan import DEFAULT_MATRIX_FILE, planned_cells
from pcgkit.util import atomic
from pcgkit.util.argtypes import add_force, cron_schedule, deprecated_alias, positive_int, positive_seconds


def _plan(args, matrix_args: list[str], local: bool = False) -> CiPlan:
    try:
        return plan_ci(planned_cells(args), parse_runner_labels(args.runner_labels or ()),
                       hardware_cells=args.hardware_cell or (), matrix_args=matrix_args, local=local,
                       hosted_torch_build=args.hosted_torch_build)
    except CiPlanError as exc:
        raise UsageError(str(exc)) from exc


def _cache_budget(plan: CiPlan) -> str:
    """The uv cache entries the workflow saves, against GitHub's 10 GB: a line to print, or a refusal."""
    from pcgkit.ci.costs import UV_CACHE_MEASUREMENTS, CacheBudgetError, cache_budget, measured_bytes_per_build

    try:
        budget = cache_budget(plan, measured_bytes_per_build(json.loads(resources.fixture(UV_CACHE_MEASUREMENTS).read_text())))
    except CacheBudgetError as exc:
        raise UsageError(str(exc)) from exc
    if budget.over:
        raise UsageError(f"{budget.describe()}: over the limit, GitHub would evict entries every night; plan fewer "
                         "torch versions on hosted runners, or measure again if the workflow's cache changed")
    return budget.describe()


def nightly_cost_of(plan: CiPlan, gpu_wait: int | None = None, hosted_concurrency: int | None = None):
    """The plan's cost per night (pcgkit.ci.costs) from the committed measurements: the matrix snapshot's
    cell times and the uv cache measurement (the edge: reads the two package data files)."""
    from pcgkit.advice.load import SNAPSHOT_FILE
    from pcgkit.ci.costs import (
        DEFAULT_HOSTED_CONCURRENCY,
        GPU_MEASUREMENTS,
        UV_CACHE_MEASUREMENTS,
        gpu_measured_from,
        measured_from,
        nightly_cost,
    )
    from pcgkit.ci.github import gpu_wait_minutes

    measured = measured_from(json.loads(resources.fixture(SNAPSHOT_FILE).read_text()),
                             json.loads(resources.fixture(UV_CACHE_MEASUREMENTS).read_text()),
                             f"fixtures/{SNAPSHOT_FILE}", f"fixtures/{UV_CACHE_MEASUREMENTS}")
    gpu = gpu_measured_from(json.loads(resources.fixture(GPU_MEASUREMENTS).read_text()), f"fixtures/{GPU_MEASUREMENTS}")
    return nightly_cost(plan, measured, gpu, _cache_budget(plan), gpu_wait_minutes(plan, gpu_wait),
                        hosted_concurrency or DEFAULT_HOSTED_CONCURRENCY)


def _matrix_args(args, absolute: bool) -> list[str]:
    """--matrix/--pins for the jobs when not the defaults: absolute for local jobs; for CI, relative to the
    repository (the current folder), and only a regular file inside it -- a pipe (`<(...)`, /dev/fd/63) or a
    temp file would be baked into the workflow and exist nowhere on the runner (one usage line instead)."""
    out = []
    for flag, value, default in (("--matrix", args.matrix, DEFAULT_MATRIX_FILE), ("--pins", args.pins, pins_mod.DEFAULT_PINS_FILE)):
        path, here = Path(value).resolve(), Path.cwd().resolve()
        if path == Path(default).resolve():
            continue
        if not absolute and not (path.is_relative_to(here) and path.is_file()):
            raise UsageError(f"{flag} {value}: the workflow runs in your repository on GitHub, where this path does not "
                             f"exist: pass a file committed in the repository, relative to it (run from its root)")
        out += [flag, str(path) if absolute else path.relative_to(here).as_posix()]
    return out


def _cmd_github(args) -> int:
    from pcgkit.ci.github import DEFAULT_CRON, actionlint_config, render_workflow, to_yaml  # PyYAML: only here

    planned_cells(args)  # the matrix file's own problems first (they name its line), then where it lies
    plan = _plan(args, _matrix_args(args, absolute=False))
    budget = _cache_budget(plan)  # before writing anything: a plan over GitHub's cache limit is refused
    command = "pcgkit ci github" + "".join(f" --runner-labels {x}" for x in args.runner_labels or ())
    if args.hosted_torch_build != TORCH_BUILD_CUDA:
        command += f" --hosted-torch-build {args.hosted_torch_build}"
    if args.gpu_wait_minutes is not None:
        command += f" --gpu-wait-minutes {args.gpu_wait_minutes}"
    cost = nightly_cost_of(plan, args.gpu_wait_minutes, args.hosted_concurrency)
    from pcgkit.ci.costs import header_lines

    document = render_workflow(plan, name=args.name, cron=args.cron or DEFAULT_CRON, gpu_wait=args.gpu_wait_minutes)
    text = to_yaml(document, plan, command, notes=(budget, *header_lines(cost)))
    if args.out == atomic.STDOUT:
        sys.stdout.write(text)
    else:
        out = atomic.check_file_target(Path(args.out))
        lint = actionlint_config(plan)
        # beside the workflows folder, where actionlint looks for it; the org's own is never replaced unasked
        lint_folder = atomic.OutputFolder(out.parent.parent, force=args.force, what="actionlint config", ledger=True)
        if lint is not None:
            lint_folder.check(["actionlint.yaml"])  # both refusals before either file is written
        atomic.OutputFolder(out.parent, force=args.force, ledger=True).check([out.name])
        atomic.write_output(out, text, force=args.force)  # whole or old: a full disk keeps the previous workflow
        print(f"pcgkit ci: {len(plan.jobs)} cell jobs in {len(plan.groups)} group(s) -> {out}")
        print(f"  {budget}")
        for line in header_lines(cost):
            print(f"  {line.strip()}")
        if lint is not None:
            lint_path = lint_folder.write_text("actionlint.yaml", lint)
            print(f"  custom runner labels declared for actionlint -> {lint_path}")
        for cell_id, why in plan.excluded:
            print(f"  not on CI: {cell_id}: {why}")
        if not args.runner_labels:
            print("  no --runner-labels: simulated jobs only (add e.g. --runner-labels sm120=self-hosted,linux,sm120)")
    return 0


def _cmd_local(args) -> int:
    from pcgkit.ci.local import parse_job_args, plan_local, run_local

    plan = _plan(args, _matrix_args(args, absolute=True), local=True)
    try:
        job_args = parse_job_args(args.job_args or ())
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    if not args.reports:
        raise UsageError("pcgkit ci local: --reports DIR is required (the folder for jobs/, artifacts/, logs/, reports/)")
    out = Path(args.reports)
    jobs = plan_local(plan, out, job_args, archive=args.archive)
    done, report = run_local(jobs, out, timeout_s=args.timeout)
    for local, completed in done:
        print(f"  job {local.job.artifact}: {'ok' if completed.ok else completed.describe_failure()} "
              f"in {completed.duration_s:.1f} s -> {local.artifact}")
    print(report.output_tail[-3000:])
    print(f"pcgkit ci local: {len(done)} jobs, report {'ok' if report.ok else report.describe_failure()} -> {out / 'reports'}")
    return 0 if report.ok and all(c.ok for _, c in done) else 1


def _common(parser) -> None:
    parser.add_argument("--matrix", default=str(DEFAULT_MATRIX_FILE), help="matrix definition (TOML)")
    parser.add_argument("--pins", default=str(pins_mod.DEFAULT_PINS_FILE), help="cached SGLang Requires-Dist")
    parser.add_argument("--cell", action="append", help="only this cell id (repeatable; default: every planned cell)")
    parser.add_argument("--runner-labels", action="append", metavar="TARGET=LABEL,...",
                        help="real-hardware jobs for TARGET (sm120, gpu) on self-hosted runners with these labels, "
                             "e.g. sm120=self-hosted,linux,sm120 (repeatable; none: simulated jobs only)")
    parser.add_argument("--hardware-cell", action="append", metavar="ID",
                        help="limit the real-hardware jobs to these cells (repeatable; default: every cell)")
    parser.add_argument("--hosted-torch-build", choices=TORCH_BUILDS, default=TORCH_BUILD_CUDA,
                        help="the torch build the simulated jobs install (`pcgkit matrix --torch-build`): cuda "
                             "(default) = the committed locks; cpu = PyTorch's CPU-only build, no CUDA wheels, but "
                             "NOT the same answers (docs/ci.md: FlashInfer's traced path differs under a CPU torch)")


def register(subparsers) -> None:
    ci = subparsers.add_parser(
        "ci", help="the matrix fanned out on CI runners: generate the workflow, or run it here",
        description="Fan the version matrix out on CI runners: write a GitHub Actions workflow, or run its jobs here.",
        epilog="examples:\n  %(prog)s github --out .github/workflows/pcgkit-matrix.yml\n"
               "  %(prog)s local --reports /tmp/fanout --cell seed")
    sub = ci.add_subparsers(dest="ci_command", required=True)
    gh = sub.add_parser(
        "github", help="write a GitHub Actions workflow: one job per cell x target, then one report",
        description="Write a GitHub Actions workflow: one job per matrix cell x target, then one merged report and the dashboard.",
        epilog="examples:\n  %(prog)s --out .github/workflows/pcgkit-matrix.yml\n"
               "  %(prog)s --runner-labels sm120=self-hosted,gpu,sm120 --out -   # SM120 jobs on your runners")
    _common(gh)
    gh.add_argument("--out", default=".github/workflows/pcgkit-matrix.yml", help="workflow file ('-' for stdout)")
    add_force(gh)
    gh.add_argument("--name", default="pcgkit matrix", help="the workflow's name")
    gh.add_argument("--cron", type=cron_schedule, help="schedule (UTC cron; default: nightly at 03:17)")
    gh.add_argument("--gpu-wait-minutes", type=positive_int, metavar="N",
                    help="how long the report job waits for the GPU jobs before naming the rest `not run` (default: "
                         "the slowest GPU job's timeout-minutes; the repository variable PCGKIT_GPU_WAIT_MINUTES "
                         "overrides it at run time)")
    gh.add_argument("--hosted-concurrency", type=positive_int, metavar="N",
                    help="concurrent hosted jobs your GitHub plan allows, for the cost per night in the header (default 20)")
    gh.set_defaults(func=_cmd_github)
    local = sub.add_parser(
        "local", help="run the workflow's jobs here, each into its own artifact, then merge them",
        description="Run the workflow's jobs on this machine, each into its own artifact folder, then merge them with report --from.",
        epilog="examples:\n  %(prog)s --reports /tmp/fanout --cell seed\n  %(prog)s --reports /tmp/fanout --archive")
    _common(local)
    # required, but checked in _cmd_local: argparse's own check would not count the deprecated --out
    local.add_argument("--reports", help="folder for jobs/, artifacts/, logs/ and the merged reports/ (required)")
    local.add_argument("--out", dest="reports", action=deprecated_alias("--reports"), help=argparse.SUPPRESS)
    local.add_argument("--job-args", action="append", metavar="CELL=ARGS",
                       help="extra `pcgkit matrix` arguments for one cell's (or one artifact's) jobs, e.g. "
                            "'seed=--backend docker --gpus none'")
    local.add_argument("--archive", action="store_true", help="upload each cell folder as a .tar.gz (as an archive download)")
    local.add_argument("--timeout", type=positive_seconds, default=3600, help="seconds per job")
    local.set_defaults(func=_cmd_local)
