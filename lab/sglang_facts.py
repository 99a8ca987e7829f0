"""The workshop's reads of SGLang's flags beside the package's one reader (pcgkit.sglang.facts): the argv that makes an
installed release's prefill graphs SGLang's breakable CUDA graph (the cost run, the first try), and each validated
release's piecewise flags from the kit's launch validation (fixtures/sglang_launch_validation.json)."""

from __future__ import annotations

import argparse
import json
from typing import Iterable

from pcgkit import resources
from pcgkit.sglang import facts
from pcgkit.sglang.facts import ActionInfo, PiecewiseFlags

VALIDATION_FILE = "sglang_launch_validation.json"


def breakable_argv_from_actions(actions: Iterable[ActionInfo]) -> tuple[str, ...] | None:
    """The argv that makes the prefill graphs SGLang's breakable CUDA graph (no torch.compile) in this
    release, or None where it has none: the 0.5.11-0.5.13 switch, or the prefill backend choice. Pure."""
    actions = list(actions)
    if any(facts.BREAKABLE_SWITCH in a.option_strings for a in actions):
        return (facts.BREAKABLE_SWITCH,)
    for action in actions:
        if facts.PREFILL_BACKEND_FLAG in action.option_strings and facts.BREAKABLE in (action.choices or ()):
            return (facts.PREFILL_BACKEND_FLAG, facts.BREAKABLE)
    return None


def breakable_argv() -> tuple[str, ...] | None:
    """breakable_argv_from_actions over the installed release's own parser (raises if it does not import)."""
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(add_help=False)
    ServerArgs.add_cli_args(parser)
    return breakable_argv_from_actions(facts.action_info(a) for a in parser._actions)


def flags_from_validation(validation: dict) -> tuple[PiecewiseFlags, ...]:
    """Each validated release's piecewise flags, in the file's order (oldest first). Pure."""
    results = validation.get("results", ())
    return tuple(PiecewiseFlags.from_dict(r["probe"]["flags"]) for r in results if (r.get("probe") or {}).get("flags"))


def validated_flags() -> tuple[PiecewiseFlags, ...]:
    """flags_from_validation over the shipped validation file."""
    return flags_from_validation(json.loads(resources.fixture(VALIDATION_FILE).read_text()))
