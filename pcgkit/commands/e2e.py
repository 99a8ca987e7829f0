"""`pcgkit e2e checkpoint`: the end-to-end piecewise launch's tiny checkpoint. The launch validation and the GPU payload
are the workshop's (`bin/pcgkit lab validate-launch`, `bin/pcgkit lab payload build`)."""

from __future__ import annotations

from pathlib import Path

from pcgkit.commands import add_command
from pcgkit.e2e.checkpoint import (
    BF16,
    FORMATS,
    NAMED_SHAPES,
    NVFP4,
    TINY,
    TinyLlamaShape,
    write_checkpoint,
)
from pcgkit.errors import UsageError
from pcgkit.util.argtypes import add_force


def _cmd_checkpoint(args) -> int:
    if args.shape == TINY:
        shape = TinyLlamaShape(layers=args.layers or TinyLlamaShape.layers)
    elif args.layers is not None:
        raise UsageError(f"--layers is for the tiny shape; {args.shape} has its published {NAMED_SHAPES[args.shape].layers}")
    else:
        shape = NAMED_SHAPES[args.shape]
    fmt = args.format or (NVFP4 if shape.name == TINY else BF16)
    out = write_checkpoint(Path(args.out), shape, seed=args.seed, fmt=fmt, device=args.device,
                           force=args.force)
    print(f"pcgkit: wrote a {shape.layers}-layer {fmt} checkpoint ({shape.name}, {shape.parameter_count() / 1e6:.2f} M "
          f"parameters) to {out}")
    return 0


def register(subparsers) -> None:
    e2e = add_command(subparsers, "e2e", "the end-to-end launch's checkpoint: the tiny NVFP4 one, its bf16 control, or "
                      "a published shape", "The end-to-end piecewise launch case's tiny checkpoint: NVFP4 in ModelOpt "
                      "layout, or its bf16 control.", "checkpoint --out /tmp/tiny-nvfp4")
    sub = e2e.add_subparsers(dest="e2e_command", required=True)
    cmd = add_command(sub, "checkpoint", "write the tiny Llama checkpoint (NVFP4 in ModelOpt layout, or bf16)",
                      "Write the tiny 2-layer Llama-style checkpoint (NVFP4 in ModelOpt layout, or its bf16 twin), or a "
                      "published architecture (Llama-3.2-1B, Llama-3.1-8B) with random bf16 weights; local tokenizer, "
                      "no downloads.", "--out /tmp/tiny-nvfp4",
                      "--out /tmp/tiny-bf16 --format bf16   # the piecewise control",
                      "--out /tmp/llama-8b --shape llama-3.1-8b --device cuda   # 16 GB, random bf16")
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
