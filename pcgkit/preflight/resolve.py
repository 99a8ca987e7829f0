"""What a launch turns on, from SGLang's parsed arguments and its per-release piecewise facts. Pure.

`piecewise_state` answers "does this launch capture piecewise CUDA graphs with torch.compile?" from the
release's own flag facts (pcgkit.sglang.facts.PiecewiseFlags, as a dict) and the argument values the
release's own parser produced; SGLang's start-up auto-disable checks are applied separately by the probe
(they run SGLang's code) and reach this module as `auto_disabled`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

OPT_IN = "opt-in"
ON_BY_DEFAULT = "on-by-default"
NOT_SHIPPED = "not-shipped"
PREFILL_BACKEND_DEST = "cuda_graph_backend_prefill"
TC_PIECEWISE = "tc_piecewise"


@dataclasses.dataclass(frozen=True)
class PiecewiseState:
    on: bool | None  # None: the release's facts could not say
    why: str  # one sentence: which flag or default decided it

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _dest(flag: str | None) -> str | None:
    if not flag:
        return None
    return flag.split(" ")[0].split("=")[0].removeprefix("--").replace("-", "_")


def piecewise_state(flags: Mapping[str, Any], parsed: Mapping[str, Any],
                    auto_disabled: str | None = None) -> PiecewiseState:
    """On or off for this command line (flags: PiecewiseFlags.to_dict(); parsed: vars(namespace)). Pure."""
    state = flags.get("default_state")
    release = flags.get("sglang") or "this release"
    if state == NOT_SHIPPED:
        return PiecewiseState(False, f"sglang {release} has no torch.compile piecewise CUDA graph backend")
    enable = flags.get("enable") or ""
    if enable.startswith("--cuda-graph-backend-prefill"):
        chosen = parsed.get(PREFILL_BACKEND_DEST)
        if chosen is None:
            default_on = state == ON_BY_DEFAULT
            how = f"no {PREFILL_BACKEND_DEST.replace('_', '-')} given; the release's CUDA default is " + (
                TC_PIECEWISE if default_on else "another backend")
            on = default_on if state in (ON_BY_DEFAULT, OPT_IN) else None
        else:
            on, how = chosen == TC_PIECEWISE, f"--cuda-graph-backend-prefill={chosen}"
    else:
        enable_dest, disable_dest = _dest(flags.get("enable")), _dest(flags.get("disable"))
        force_dest = _dest(flags.get("force"))
        if force_dest and parsed.get(force_dest) is True:
            return PiecewiseState(True, f"--{force_dest.replace('_', '-')} keeps piecewise CUDA graphs on "
                                  "(SGLang's auto-disable checks are skipped)")
        if state == ON_BY_DEFAULT:
            off = bool(disable_dest and parsed.get(disable_dest))
            on, how = not off, (f"{flags.get('disable')} given" if off
                                else "on by default in this release and not disabled")
        elif state == OPT_IN:
            on = bool(enable_dest and parsed.get(enable_dest))
            how = (f"{flags.get('enable')} given" if on
                   else f"opt-in in this release and {flags.get('enable')} not given")
        else:
            return PiecewiseState(None, f"the default state of piecewise CUDA graphs in sglang {release} was not read")
    if on and auto_disabled:
        return PiecewiseState(False, f"{how}, but SGLang turns it off at start-up: {auto_disabled}")
    return PiecewiseState(on, how)


@dataclasses.dataclass(frozen=True)
class ModelShape:
    """What the trace takes from config.json: tiny shapes that keep the checkpoint's constraints."""

    architectures: tuple[str, ...]
    hidden_size: int | None
    is_moe: bool
    moe_keys: tuple[str, ...]


MOE_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")


def model_shape(config: Mapping[str, Any]) -> ModelShape:
    """Architectures, hidden size and whether the model routes to experts (any of MOE_KEYS > 1). Pure."""
    text_config = config.get("text_config")
    text: dict = text_config if isinstance(text_config, dict) else {}
    merged = {**config, **{k: v for k, v in text.items() if k not in config}}
    moe = tuple(k for k in MOE_KEYS if isinstance(merged.get(k), int) and merged[k] > 1)
    hidden = merged.get("hidden_size")
    return ModelShape(tuple(config.get("architectures") or ()), hidden if isinstance(hidden, int) else None,
                      bool(moe), moe)


def tiny_features(hidden_size: int | None, group: int = 16, cap: int = 128) -> int:
    """A small input width that a real layer of this model could have: a multiple of the quantization group
    (and of 128 where the hidden size is, since block-scaled kernels tile by it), never more than the model's. Pure."""
    if not hidden_size:
        return cap
    for width in (cap, 64, 32, group):
        if hidden_size % width == 0 and width % group == 0:
            return min(width, hidden_size)
    return hidden_size


def capability_refusal(quantization: str | None, minimum: int | None,
                       current: tuple[int | None, int | None] | None) -> str | None:
    """The refusal SGLang's model loader raises before any weight or graph when the GPU is older than the
    quantization method needs (`_get_quantization_config`: capability < `get_min_capability()`), in the
    release's own words; None when it would load. Like the loader, no capability read means no check. Pure."""
    if not quantization or minimum is None or current is None:
        return None
    major, minor = current
    if major is None or minor is None:
        return None
    capability = major * 10 + minor
    if capability >= minimum:
        return None
    return (f"The quantization method {quantization} is not supported for the current GPU. "
            f"Minimum capability: {minimum}. Current capability: {capability}.")
