"""`pcgkit e2e ...`: the end-to-end piecewise launch's tools (checkpoint, validate-launch)."""

from __future__ import annotations


def register(subparsers) -> None:
    from pcgkit.e2e import checkpoint, payload, validate

    e2e = subparsers.add_parser("e2e", help="end-to-end piecewise launch tools: tiny checkpoint, launch validation, device payload",
                             description="Tools for the end-to-end piecewise launch case: the tiny checkpoint, the launch validation and the payload for a GPU machine without network.",
                             epilog="example:\n  %(prog)s checkpoint --out /tmp/tiny-nvfp4")
    sub = e2e.add_subparsers(dest="e2e_command", required=True)
    checkpoint.register(sub)
    validate.register(sub)
    payload.register(sub)
