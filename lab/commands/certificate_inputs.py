"""`bin/pcgkit lab certificate-inputs [--upstream-git DIR --upstream-ref REF]`: derive every public callable's inputs
from the installed FlashInfer release (its signatures and numpydoc sections; FlashInfer's own tests at REF of a git
mirror) into fixtures/certificates/inputs/ (or --out DIR), which `bin/pcgkit lab certify` judges with (lab.sweep.inputs_build).
Run it in the release's environment, one release at a time."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from pcgkit import resources
from pcgkit.errors import PcgkitError
from pcgkit.util import atomic

INPUTS_DIR = ("certificates", "inputs")


def _certificate_inputs(args: argparse.Namespace) -> int:
    from lab.sweep.inputs_build import UpstreamReadError, build_inputs, read_tests_at

    if bool(args.upstream_git) != bool(args.upstream_ref):
        raise PcgkitError("--upstream-git and --upstream-ref go together (or neither: no upstream tests)")
    folder = atomic.ensure_dir(args.out or resources.fixture(*INPUTS_DIR),
                              "--out" if args.out else "fixtures/certificates/inputs")
    upstream = None
    if args.upstream_git:
        try:
            upstream = read_tests_at(args.upstream_git, args.upstream_ref)
        except UpstreamReadError as exc:
            raise PcgkitError(str(exc)) from exc
        atomic.write_text(folder / f"upstream-tests-{args.upstream_ref}.json", json.dumps(upstream, indent=1))
    data = build_inputs(upstream)
    path = folder / f"flashinfer-{data['flashinfer']}.json"
    atomic.write_text(path, json.dumps(data, indent=1))
    sources = Counter(e.get("source", "not derived") for e in data["callables"].values())
    print(f"{path}: {len(data['callables'])} callables; " + ", ".join(f"{k} {v}" for k, v in sorted(sources.items())))
    return 0


def register(subparsers) -> None:
    cmd = subparsers.add_parser(
        "certificate-inputs", help="derive the certificate's inputs from the installed FlashInfer release",
        description="Derive every public FlashInfer callable's inputs from the installed release (signature, numpydoc"
                    " shapes and dtypes, FlashInfer's own tests at a tag) into fixtures/certificates/inputs/.",
        epilog="example:\n  %(prog)s --upstream-git /path/to/flashinfer.git --upstream-ref v0.6.12")
    cmd.add_argument("--upstream-git", type=Path,
                     help="a git mirror of github:flashinfer-ai/flashinfer (the fetch tool's copy)")
    cmd.add_argument("--upstream-ref", help="the tag (or commit) whose tests/ to read, e.g. v0.6.12")
    cmd.add_argument("--out", type=Path, help="where the two files go (default fixtures/certificates/inputs/)")
    cmd.set_defaults(func=_certificate_inputs)
