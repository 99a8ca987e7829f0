"""`pcgkit e2e ...`: the end-to-end piecewise launch's tools (checkpoint, validate-launch, payload build)."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import shutil
from pathlib import Path

from pcgkit.e2e.checkpoint import (
    BF16,
    FORMATS,
    NAMED_SHAPES,
    NVFP4,
    TINY,
    TinyLlamaShape,
    named_shape,
    write_checkpoint,
)
from pcgkit.e2e.payload import SPEC_PATH, build, load_spec
from pcgkit.e2e.validate import DEFAULT_OUT, _version_key, default_matrix_versions, run_validation, summarize
from pcgkit.errors import EnvironmentSetupError, UsageError
from pcgkit.util import atomic, proc
from pcgkit.util.argtypes import add_force, deprecated_alias
from pcgkit.util.interpreters import find_python


def register(subparsers) -> None:
    e2e = subparsers.add_parser("e2e", help="end-to-end piecewise launch tools: tiny checkpoint, launch validation, device payload",
                             description="Tools for the end-to-end piecewise launch case: the tiny checkpoint, the launch validation and the payload for a GPU machine without network.",
                             epilog="example:\n  %(prog)s checkpoint --out /tmp/tiny-nvfp4")
    sub = e2e.add_subparsers(dest="e2e_command", required=True)
    _add_checkpoint(sub)
    _add_validate(sub)
    _add_payload(sub)


def _cmd_checkpoint(args) -> int:
    if args.shape == TINY:
        shape = TinyLlamaShape(layers=args.layers or TinyLlamaShape.layers)
    elif args.layers is not None:
        raise UsageError(f"--layers is for the tiny shape; {args.shape} has its published {named_shape(args.shape).layers}")
    else:
        shape = named_shape(args.shape)
    fmt = args.format or (NVFP4 if shape.name == TINY else BF16)
    out = write_checkpoint(Path(args.out), shape, seed=args.seed, fmt=fmt, device=args.device,
                           force=args.force)
    print(f"pcgkit: wrote a {shape.layers}-layer {fmt} checkpoint ({shape.name}, {shape.parameter_count() / 1e6:.2f} M "
          f"parameters) to {out}")
    return 0


def _add_checkpoint(e2e_subparsers) -> None:
    cmd = e2e_subparsers.add_parser("checkpoint", help="write the tiny Llama checkpoint (NVFP4 in ModelOpt layout, or bf16)",
                                    description="Write the tiny 2-layer Llama-style checkpoint (NVFP4 in ModelOpt layout, or its bf16 twin), or a published architecture (Llama-3.2-1B, Llama-3.1-8B) with random bf16 weights; local tokenizer, no downloads.",
                                    epilog="examples:\n  %(prog)s --out /tmp/tiny-nvfp4\n  %(prog)s --out /tmp/tiny-bf16 --format bf16   # the piecewise control\n"
                                           "  %(prog)s --out /tmp/llama-8b --shape llama-3.1-8b --device cuda   # 16 GB, random bf16")
    cmd.add_argument("--out", required=True, help="directory to write into")
    add_force(cmd)
    cmd.add_argument("--shape", default=TINY, choices=(TINY, *NAMED_SHAPES),
                     help="tiny (default), or a published architecture with random bf16 weights (cited in pcgkit.e2e.checkpoint)")
    cmd.add_argument("--layers", type=int, default=None, choices=(2, 4), help="the tiny shape's layers (default 2)")
    cmd.add_argument("--seed", type=int, default=0)
    cmd.add_argument("--format", default=None, choices=FORMATS,
                     help="nvfp4 (the tiny default) or bf16 (the piecewise control; the only format of the named shapes)")
    cmd.add_argument("--device", default="cpu", help="where the bf16 weights are generated (cuda on a GPU machine: an 8B model in a minute)")
    cmd.set_defaults(func=_cmd_checkpoint)


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
        reports = dict(sorted({**kept, **reports}.items(), key=lambda item: _version_key(item[0])))
    data = summarize(reports, environment)
    atomic.write_json(out, data, indent=2)
    counts = {s: sum(r["status"] == s for r in data["results"]) for s in ("ok", "not-applicable", "failed")}
    print(f"pcgkit: wrote {out}: " + ", ".join(f"{n} {s}" for s, n in counts.items()))
    return 0 if data["all_ok"] else 1


def _add_validate(e2e_subparsers) -> None:
    cmd = e2e_subparsers.add_parser(
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


def _cmd_build(args) -> int:
    import tempfile

    specs = [load_spec(Path(path)) for path in (args.spec or [str(SPEC_PATH)])]
    with tempfile.TemporaryDirectory(prefix="pcgkit-payload-", dir=args.work) as work:
        manifest = build(specs, Path(args.out), Path(work))
    total = sum(p["bytes"] for p in manifest["parts"])
    print(f"pcgkit: payload for sglang {', '.join(s.sglang for s in specs)}: {len(manifest['files'])} files, "
          f"{len(manifest['parts'])} parts, {total / 2**20:.1f} MiB in {args.out}")
    return 0


def _add_payload(e2e_subparsers) -> None:
    cmd = e2e_subparsers.add_parser("payload", help="the SGLang payload for a GPU machine without network",
                                    description="Build the SGLang payload (trimmed wheels in chunks) for a GPU machine without network.",
                                    epilog="example:\n  %(prog)s build --out /tmp/payload")
    sub = cmd.add_subparsers(dest="payload_command", required=True)
    build_cmd = sub.add_parser("build", help="download, trim and chunk the payload (fixtures/e2e_payload.toml)",
                               description="Download, trim and chunk the payload that fixtures/e2e_payload.toml describes, with a MANIFEST.json.",
                               epilog="example:\n  %(prog)s --out /tmp/payload")
    build_cmd.add_argument("--out", required=True, help="directory for the parts and MANIFEST.json")
    build_cmd.add_argument("--spec", action="append", default=None,
                           help="a release's payload spec; repeat for several releases in one payload "
                                "(default: fixtures/e2e_payload.toml, SGLang 0.5.12; 0.5.11's: fixtures/e2e_payload_sglang-0.5.11.toml)")
    build_cmd.add_argument("--work", default=None, help="where the temporary staging folder goes (default: TMPDIR)")
    build_cmd.set_defaults(func=_cmd_build)
