"""`bin/pcgkit lab certificates [--release X ...] [--jobs N] [--out DIR]`: re-make every committed simulated
trace-safety certificate, one command for what PROVENANCE.md describes.

For each release of fixtures/certificates/recipe.toml (or those named): its environment from PyPI, built once into
the kit's cache; `lab certificate-inputs` against FlashInfer's tests at the recipe's ref of a git mirror; `lab
certify` with the recipe's arch and unroll budget; the four files copied to fixtures/certificates/ (or --out)
when both ran and the checks held. Prints one row per release (judged / listed, input sources, wall and CPU time,
what changed against the committed files, times aside); a failing release is an error row with its one line and
the others still finish (exit 3 when any did). Logs, each environment's freeze and the staged files stay in --work.
lab.certificates.plan plans it (pure); lab.certificates.run runs it."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import tomllib

from pcgkit import resources
from pcgkit.errors import ExitCode, Interrupted, UsageError
from pcgkit.util import atomic

RECIPE = ("certificates", "recipe.toml")
COMMITTED = ("certificates",)


def _mirror(path: Path | None) -> Path:
    if path is None:
        raise UsageError("--upstream-git DIR is needed: a git mirror of github:flashinfer-ai/flashinfer (the `fetch` "
                         "tool's copy, or `git clone --mirror`); the recipe reads FlashInfer's tests in it")
    if (path / ".git").is_dir():  # a working clone: its git directory is what `git --git-dir` reads
        path = path / ".git"
    if not (path / "HEAD").is_file():
        raise UsageError(f"--upstream-git {path}: not a git repository (no HEAD)")
    return path.resolve()


def _summary(rows, arch: str, started: float, note: str) -> str:
    from lab.certificates.plan import render_table

    return (render_table(rows) + f"\n\nsimulated {arch} on CPU; whole run {time.monotonic() - started:.0f} s wall;"
            f" {note}; CPU = user + system of the command and its children")


def _certificates(args: argparse.Namespace) -> int:
    from lab.certificates import run
    from lab.certificates.plan import kit_copy, not_remade, parse_recipe, plan_jobs

    checkout = resources.checkout_root()
    if checkout is None:
        raise UsageError("certificates runs the checkout's kit in each release's environment: run it in a checkout")
    recipe_path = resources.fixture(*RECIPE)
    recipe = parse_recipe(tomllib.loads(recipe_path.read_text()), str(recipe_path))
    if args.jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: give 1 or more")
    committed = resources.fixture(*COMMITTED)
    out = args.out.resolve() if args.out else committed
    work = args.work.resolve()
    try:
        kit = run.kit_requirements(recipe.kit_extras)
    except run.JobFailed as exc:
        raise UsageError(str(exc)) from None
    jobs = plan_jobs(recipe, args.release or (), kit_requirements=kit,
                     mirror=_mirror(args.upstream_git) if not args.dry_run else (args.upstream_git or Path("MIRROR")),
                     out=out, committed=committed, work=work, envs_root=run.envs_root())
    if args.dry_run:
        for job in jobs:
            print(f"{job.release.flashinfer}: environment {job.env.folder} ({' '.join(job.env.requirements)})")
            for step in job.steps:
                print(f"  {step.name}: {' '.join(step.argv)}")
            print(f"  then: {', '.join(str(dst) for _src, dst in job.copies)}")
        return int(ExitCode.SUCCESS)
    atomic.ensure_dir(work, "--work")
    started = time.monotonic()
    run.copy_kit(checkout, kit_copy(work))
    rows = []

    def said(row) -> None:
        rows.append(row)
        print(f"pcgkit lab certificates: {row.release}: "
              + (f"{row.callables[0]}/{row.callables[1]} callables judged" if row.status == "ok" else f"error: {row.reason}"),
              file=sys.stderr, flush=True)

    try:
        rows = run.run_jobs(jobs, args.jobs, said)
    except Interrupted:
        print(_summary(rows, recipe.arch, started, "interrupted: the releases above finished, the others were stopped"))
        raise
    text = _summary(rows, recipe.arch, started, run.environ_note())
    others = not_remade([p.name for p in committed.glob("certificate-*.json")], recipe)
    if others:
        text += f"\nnot re-made (no recipe: a GPU run, fixtures/certificates/PROVENANCE.md): {', '.join(others)}"
    if out == committed and any(r.status == "ok" for r in rows):
        text += ("\nnext: `python docs/gen_facts.py` (the generated certificate counts), then the matrix sample's "
                 "certificate page (`reports/samples/matrix-2026-12-01/regenerate.sh --report-only`)")
    atomic.write_text(work / "summary.md", text + "\n")
    atomic.write_text(work / "summary.json", json.dumps({"schema": "pcgkit.lab-certificates/1", "out": str(out),
                                                         "rows": [r.to_dict() for r in rows]}, indent=1))
    print(text)
    return int(ExitCode.ERROR_CELLS if any(r.status != "ok" for r in rows) else ExitCode.SUCCESS)


def register(subparsers) -> None:
    cmd = subparsers.add_parser(
        "certificates", help="re-make every committed simulated certificate (a venv per release, inputs, certificate)",
        description="Re-make the committed simulated trace-safety certificates from fixtures/certificates/recipe.toml:"
                    " one environment per FlashInfer release (built once, in the kit's cache), its derived inputs,"
                    " its certificate; a table of what each judged, its times and what changed against the"
                    " committed files.",
        epilog="examples:\n  %(prog)s --upstream-git ~/flashinfer.git   # a `git clone --mirror` of github:flashinfer-ai/flashinfer\n"
               "  %(prog)s --upstream-git DIR --release 0.6.1 --out /tmp/certs   # compare without overwriting\n"
               "  %(prog)s --dry-run --release 0.7.4        # the environment and commands, run nothing")
    cmd.add_argument("--upstream-git", type=Path, metavar="DIR",
                     help="a git mirror of github:flashinfer-ai/flashinfer (FlashInfer's tests are read at each release's ref)")
    cmd.add_argument("--release", action="append", metavar="X", help="only this FlashInfer release (repeatable; default: all)")
    cmd.add_argument("--jobs", type=int, default=1, metavar="N", help="releases at once (default 1; each takes about one core)")
    cmd.add_argument("--out", type=Path, metavar="DIR", help="where the certificates and inputs/ go (default fixtures/certificates/)")
    cmd.add_argument("--work", type=Path, default=Path("reports/lab-certificates"), metavar="DIR",
                     help="logs, each environment's freeze, the staged files (default reports/lab-certificates)")
    cmd.add_argument("--dry-run", action="store_true", help="print each release's environment and commands, run nothing")
    cmd.set_defaults(func=_certificates)
