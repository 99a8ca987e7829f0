"""`bin/pcgkit lab certify`: the trace-safety certificate of the installed FlashInfer release (every discovered
public callable and registered op judged under torch.compile(fullgraph=True), stacks unrolled: lab.sweep.certify),
written as certificate-<release>-<arch>.json/.md into --reports; `--discover` prints the discovery counts only.

Run it in the release's environment, after `bin/pcgkit lab certificate-inputs` (its derived inputs);
`bin/pcgkit lab certificates` runs both for every release of fixtures/certificates/recipe.toml. It was
`pcgkit sweep --certificate` / `--discover` before the builder left the package (docs/reference/layout.md)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from unittest import mock

from pcgkit import resources
from pcgkit.commands.sweep import real_device, toolkit_env
from pcgkit.errors import PcgkitError
from pcgkit.harness.hardware import SIMULATED_ARCHES
from pcgkit.util import atomic

INPUTS_DIR = ("certificates", "inputs")


def register(subparsers) -> None:
    parser = subparsers.add_parser("certify", help="the trace-safety certificate of the installed FlashInfer release",
                                   description="The trace-safety certificate of the installed FlashInfer release: every discovered public "
                                               "callable and registered op judged under torch.compile(fullgraph=True), stacks unrolled.",
                                   epilog="example:\n  %(prog)s --arch sm120 --reports reports/certificate\n"
                                          "  %(prog)s --discover")
    parser.add_argument("--reports", type=Path, default=Path("reports/certificate"),
                        help="where the certificate (or discovery-<release>.json) goes (default reports/certificate)")
    parser.add_argument("--arch", action="append", choices=sorted(SIMULATED_ARCHES), help="repeatable; default sm120")
    parser.add_argument("-k", dest="only", action="append", help="spec id or target to judge (repeatable); default: all")
    parser.add_argument("--real", action="store_true",
                        help="on the real GPU (its own arch), nothing simulated; pre-builds really build")
    parser.add_argument("--discover", action="store_true",
                        help="print the discovery counts (public callables, registered ops, judged, not judged); "
                             "write discovery-<release>.json")
    parser.add_argument("--inputs", type=Path,
                        help="the derived inputs JSON (default fixtures/certificates/inputs/flashinfer-<installed>.json)")
    parser.add_argument("--unroll-budget", type=float, default=None,
                        help="seconds of full unrolling; later callables are traced once (default 240)")
    parser.add_argument("--ops-only", action="store_true",
                        help="judge the registered ops alone (the GPU run; no callable's module is built)")
    parser.add_argument("--op-inputs", type=Path,
                        help="a certificate JSON whose recorded op inputs are reused (the CPU one, for the GPU run)")
    parser.set_defaults(func=main)


def discover_main(args: argparse.Namespace) -> int:
    from lab.sweep.discover import discover
    from lab.sweep.discovery import plan_judgement, render_counts, spec_targets_for
    from pcgkit.sweep.specs import load_specs

    found = discover()
    plan = plan_judgement(found, spec_targets_for(load_specs(), found.flashinfer))
    atomic.ensure_dir(args.reports, "--reports")
    atomic.write_text(args.reports / f"discovery-{found.flashinfer}.json", json.dumps(found.to_dict(), indent=1))
    print(render_counts(found, plan))
    return 0


def inputs_for(path: Path | None) -> dict | None:
    """The derived inputs (--inputs, or the committed file of the installed release); None, said, when there is none."""
    from importlib import metadata

    # The distribution's version, not flashinfer.__version__: importing flashinfer before discovery
    # would hide which dispatcher namespaces it adds (lab.sweep.discover).
    explicit = path is not None
    path = path or resources.fixture(*INPUTS_DIR, f"flashinfer-{metadata.version('flashinfer-python')}.json")
    if not path.is_file():
        if explicit:  # the user named a file: judging without it would answer another question
            raise PcgkitError(f"--inputs {path}: no such file (write one with `bin/pcgkit lab certificate-inputs`)")
        print(f"pcgkit: no derived inputs at {path} (run `bin/pcgkit lab certificate-inputs`); hand specs only")
        return None
    try:
        return atomic.parse_json(atomic.read_user_bytes(path, "--inputs"), str(path))
    except (OSError, ValueError) as exc:
        raise PcgkitError(f"--inputs {path}: {exc}") from exc


def _op_inputs(path: Path | None) -> dict:
    from lab.sweep.certify import op_inputs_from

    if path is None:
        return {}
    try:
        return op_inputs_from(atomic.parse_json(atomic.read_user_bytes(path, "--op-inputs"), str(path)))
    except (OSError, ValueError) as exc:
        raise PcgkitError(f"--op-inputs {path}: {exc}") from exc


def main(args: argparse.Namespace) -> int:
    if args.discover:
        return discover_main(args)
    from lab.sweep.certificate_build import render_certificate
    from lab.sweep.certify import certify
    from pcgkit.sweep.engine import arch_of

    device = real_device() if args.real else None
    arches = [arch_of(device)] if device else (args.arch or ["sm120"])
    atomic.ensure_dir(args.reports, "--reports")
    op_inputs = _op_inputs(args.op_inputs)
    inputs = inputs_for(args.inputs)
    budget = {} if args.unroll_budget is None else {"unroll_budget_s": args.unroll_budget}
    with mock.patch.dict(os.environ, toolkit_env()):
        for arch in arches:
            cert = certify(arch, device or SIMULATED_ARCHES[arch], real=device is not None, only=args.only or (),
                           ops_only=args.ops_only, op_inputs=op_inputs, inputs=inputs, **budget)
            stem = f"certificate-{cert['flashinfer']}-{arch}{'' if device is None else '-real'}{'-ops' if args.ops_only else ''}"
            atomic.write_text(args.reports / f"{stem}.json", json.dumps(cert, indent=1))
            atomic.write_text(args.reports / f"{stem}.md", render_certificate(cert))
            print(f"{stem}: " + ", ".join(f"{k} {v}" for k, v in cert["coverage"].items()))
    return 0
