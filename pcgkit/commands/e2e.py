"""`pcgkit e2e checkpoint`: the end-to-end piecewise launch's tiny checkpoint. The launch validation and the GPU payload
are the workshop's (`bin/pcgkit lab validate-launch`, `bin/pcgkit lab payload build`)."""

from __future__ import annotations

from pathlib import Path

from pcgkit.e2e.checkpoint import FORMATS, NVFP4, TinyLlamaShape, write_checkpoint


def register(subparsers) -> None:
    e2e = subparsers.add_parser("e2e", help="the end-to-end piecewise launch's tiny checkpoint (NVFP4 or its bf16 control)",
                             description="The end-to-end piecewise launch case's tiny checkpoint: NVFP4 in ModelOpt layout, or its bf16 control.",
                             epilog="example:\n  %(prog)s checkpoint --out /tmp/tiny-nvfp4")
    sub = e2e.add_subparsers(dest="e2e_command", required=True)
    _add_checkpoint(sub)


def _cmd_checkpoint(args) -> int:
    out = write_checkpoint(Path(args.out), TinyLlamaShape(layers=args.layers), seed=args.seed, fmt=args.format)
    print(f"pcgkit: wrote a {args.layers}-layer {args.format} checkpoint to {out}")
    return 0


def _add_checkpoint(e2e_subparsers) -> None:
    cmd = e2e_subparsers.add_parser("checkpoint", help="write the tiny Llama checkpoint (NVFP4 in ModelOpt layout, or bf16)",
                                    description="Write the tiny 2-layer Llama-style checkpoint: NVFP4 in ModelOpt layout, or its bf16 twin (local tokenizer, no downloads).",
                                    epilog="examples:\n  %(prog)s --out /tmp/tiny-nvfp4\n  %(prog)s --out /tmp/tiny-bf16 --format bf16   # the piecewise control")
    cmd.add_argument("--out", required=True, help="directory to write into")
    cmd.add_argument("--layers", type=int, default=2, choices=(2, 4))
    cmd.add_argument("--seed", type=int, default=0)
    cmd.add_argument("--format", default=NVFP4, choices=FORMATS, help="nvfp4 (default) or bf16 (the piecewise control)")
    cmd.set_defaults(func=_cmd_checkpoint)
