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
    deprecated: tuple[str, ...] = ()  # switches that are accepted but do nothing (0.5.10-0.5.12's --enable-...)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "PiecewiseFlags":
        return cls(**{**data, "other": tuple(data.get("other", ())), "deprecated": tuple(data.get("deprecated", ()))})


def _is_switch(action: argparse.Action) -> bool:
    return action.nargs == 0  # store_true / store_false / BooleanOptionalAction's --no- form


_UNSET = object()


def switch_value(action: argparse.Action, option: str) -> object:
    """What giving the switch stores in its destination (True, a const such as "tc_piecewise"), or
    _UNSET when it stores nothing: a deprecated no-op (SGLang's DeprecatedAction only warns)."""
    import contextlib
    import io

    namespace = argparse.Namespace()
    setattr(namespace, action.dest, _UNSET)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        action(argparse.ArgumentParser(), namespace, None, option)
    return getattr(namespace, action.dest)


def _switch_does_something(action: argparse.Action, option: str) -> bool:
    return switch_value(action, option) is not _UNSET


def switches_in_effect(parser: argparse.ArgumentParser, namespace: argparse.Namespace, options) -> dict[str, bool]:
    """For each given switch, whether the parsed namespace holds the value that switch stores.

    Works whatever the destination is called: 0.5.16-0.5.19 keep --enforce-/--disable-piecewise-cuda-graph
    as aliases that store "tc_piecewise" / "disabled" into cuda_graph_backend_prefill."""
    found = {}
    for option in options:
        action = parser._option_string_actions[option]
        found[option] = getattr(namespace, action.dest, _UNSET) == switch_value(action, option)
    return found


def flags_from_parser(
    version: str, parser: argparse.ArgumentParser, field_default: Callable[[str], object]
) -> PiecewiseFlags:
    """Classify every --*piecewise-cuda-graph* option of a parser; `field_default(dest)` reads ServerArgs."""
    enable = disable = force = None
    other: list[str] = []
    deprecated: list[str] = []
    for action in parser._actions:  # argparse has no public iterator over its actions
        for option in action.option_strings:
            if "piecewise" not in option:
                continue
            name = option.lstrip("-")
            if _is_switch(action) and not _switch_does_something(action, option):
                deprecated.append(option)
            elif _is_switch(action) and name.startswith("enable-piecewise-cuda-graph"):
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
    return PiecewiseFlags(version, enable, disable, force, default_on, tuple(sorted(other)), tuple(sorted(deprecated)))


def piecewise_flags() -> PiecewiseFlags:
    """The installed SGLang's flags (imports sglang.srt.server_args, which imports torch)."""
    import importlib.metadata

    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    try:
        defaults = {f.name: f.default for f in dataclasses.fields(ServerArgs)}
    except TypeError:  # 0.5.22+: ServerArgs is assembled from arg_groups/fields, not a dataclass
        defaults = {}
    return flags_from_parser(
        importlib.metadata.version("sglang"), parser, lambda dest: defaults.get(dest, getattr(ServerArgs, dest, None))
    )
