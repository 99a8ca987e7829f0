"""The installed SGLang's piecewise CUDA graph flags, read from its own argument parser.

`piecewise_flags()` is the name part A (pcgkit/sglang_facts.py) exposes; until that lands this
module reads the flags the same way, so the merge is a one-line import change. `flags_from_parser`
is pure (an argparse parser and a field-default lookup in, facts out) and is what the tests pin down.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Callable


@dataclasses.dataclass(frozen=True)
class PiecewiseFlags:
    sglang_version: str
    enable: str | None  # "--enable-piecewise-cuda-graph" where piecewise is opt-in
    disable: str | None  # "--disable-piecewise-cuda-graph" where it is on by default
    force: str | None  # a flag that forces it on past SGLang's own auto-disable checks, if any
    default_on: bool  # on without any flag (per the ServerArgs field defaults)
    other: tuple[str, ...] = ()  # the remaining piecewise options (tokens, compiler, ...), for the record

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "PiecewiseFlags":
        return cls(**{**data, "other": tuple(data.get("other", ()))})


def _is_switch(action: argparse.Action) -> bool:
    return action.nargs == 0  # store_true / store_false / BooleanOptionalAction's --no- form


def flags_from_parser(
    version: str, parser: argparse.ArgumentParser, field_default: Callable[[str], object]
) -> PiecewiseFlags:
    """Classify every --*piecewise-cuda-graph* option of a parser; `field_default(dest)` reads ServerArgs."""
    enable = disable = force = None
    other: list[str] = []
    for action in parser._actions:  # argparse has no public iterator over its actions
        for option in action.option_strings:
            if "piecewise" not in option:
                continue
            name = option.lstrip("-")
            if _is_switch(action) and name.startswith("enable-piecewise-cuda-graph"):
                enable = option
            elif _is_switch(action) and name.startswith("disable-piecewise-cuda-graph"):
                disable = option
            elif _is_switch(action) and name.startswith(("enforce-piecewise", "force-piecewise")):
                force = option
            else:
                other.append(option)
    if enable is not None:
        default_on = bool(field_default("enable_piecewise_cuda_graph"))
    else:
        default_on = disable is not None and not bool(field_default("disable_piecewise_cuda_graph"))
    return PiecewiseFlags(version, enable, disable, force, default_on, tuple(sorted(other)))


def piecewise_flags() -> PiecewiseFlags:
    """The installed SGLang's flags (imports sglang.srt.server_args, which imports torch)."""
    import importlib.metadata

    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    defaults = {f.name: f.default for f in dataclasses.fields(ServerArgs)}
    return flags_from_parser(importlib.metadata.version("sglang"), parser, lambda dest: defaults.get(dest))
