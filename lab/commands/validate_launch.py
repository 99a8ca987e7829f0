"""`bin/pcgkit lab validate-launch`: the e2e launch command parsed by every matrix SGLang release's own parser and the
tiny checkpoint loaded through its ModelOpt FP4 layer, recorded in fixtures/sglang_launch_validation.json
(lab.e2e.validate; lab.e2e.probe runs inside each release's environment)."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import shutil
from pathlib import Path

from lab.e2e.validate import DEFAULT_OUT, default_matrix_versions, run_validation, summarize, version_key
from pcgkit.errors import EnvironmentSetupError, UsageError
from pcgkit.util import atomic, proc
from pcgkit.util.argtypes import deprecated_alias
from pcgkit.util.interpreters import find_python


def _cmd_validate(args) -> int:
    versions = args.sglang or default_matrix_versions()
    if not versions:
        raise UsageError("no SGLang versions to validate (the matrix has none and none were given)")
    workdir = Path(args.workdir)
    python = find_python(args.python_version)
    if python is None:
        raise EnvironmentSetupError(f"no Python {args.python_version} interpreter found for the probe environment")
    try:
        reports = run_validation(versions, workdir, python)
        venv_python = workdir / "probe-venv" / "bin" / "python"
        frozen = proc.run([*proc.uv_command(), "pip", "freeze", "--python", str(venv_python)], echo=False)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    environment = {
        "generated": _dt.date.today().isoformat(),
        "python": args.python_version,
        "probe_environment": sorted(
            line for line in frozen.output_tail.splitlines() if "==" in line and not line.startswith("nvidia")
        ),
    }
    out = Path(args.out)
    if args.sglang and out.exists():
        # A partial re-run (--sglang X) replaces those releases' rows and keeps the others.
        previous = json.loads(out.read_text())
        kept = {r["sglang"]: r["probe"] for r in previous.get("results", []) if r["sglang"] not in reports}
        reports = dict(sorted({**kept, **reports}.items(), key=lambda item: version_key(item[0])))
    data = summarize(reports, environment)
    atomic.write_json(out, data, indent=2)
    counts = {s: sum(r["status"] == s for r in data["results"]) for s in ("ok", "not-applicable", "failed")}
    print(f"pcgkit: wrote {out}: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    return 0 if data["all_ok"] else 1


def register(subparsers) -> None:
    cmd = subparsers.add_parser(
        "validate-launch", help="parse the launch command with every matrix SGLang's own parser; check the checkpoint",
        description="Parse the e2e launch command with every matrix SGLang release's own parser and load the checkpoint through its ModelOpt FP4 layer (needs PyPI).",
        epilog="example:\n  %(prog)s --sglang 0.5.8",
    )
    cmd.add_argument("--sglang", action="append", help="only this SGLang version (repeatable; default: the matrix's)")
    cmd.add_argument("--out", default=str(DEFAULT_OUT), help=f"data file to write (default {DEFAULT_OUT.name})")
    cmd.add_argument("--workdir", default="/tmp/pcgkit-launch-validation", help="where the environments go")
    cmd.add_argument("--python-version", default="3.12", help="Python version of the probe environment (default 3.12)")
    # --python names an interpreter (a path) in every other command; here it was the version
    cmd.add_argument("--python", dest="python_version", action=deprecated_alias("--python-version"), help=argparse.SUPPRESS)
    cmd.add_argument("--keep", action="store_true", help="keep the environments afterwards")
    cmd.set_defaults(func=_cmd_validate)
