"""What a launch turns on, from SGLang's parsed arguments and its per-release piecewise facts. Pure.

`piecewise_state` answers "does this launch capture piecewise CUDA graphs with torch.compile?" (SGLang's breakable
CUDA graph runner uses no torch.compile, so a launch that builds it is never "on"). SGLang's start-up auto-disable
checks are run by the probe (they are SGLang's code) and reach this module as `auto_disabled` (0.5.10-0.5.13) or
inside `resolved_prefill` (0.5.14+).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from pcgkit.sglang.facts import BREAKABLE, NOT_SHIPPED, ON_BY_DEFAULT, OPT_IN, TC_PIECEWISE
from pcgkit.sglang.runners import SWITCH

PREFILL_BACKEND_DEST = "cuda_graph_backend_prefill"
TORCH_COMPILE = "torch.compile"  # the runner that compiles piecewise graphs (this bug's); BREAKABLE compiles nothing


@dataclasses.dataclass(frozen=True)
class PiecewiseState:
    on: bool | None  # torch.compile piecewise capture on for this launch; None: the release's facts could not say
    why: str  # one sentence: which flag or default decided it
    runner: str | None = None  # what piecewise/prefill capture builds: TORCH_COMPILE, BREAKABLE; None: nothing / unread
    runner_source: str = ""  # where the runner choice was read: the installed release's code, or the wheel's table
    limit: str = ""  # what the chosen runner leaves uncaptured (0.5.11's breakable runner: one request per prefill)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _dest(flag: str | None) -> str | None:
    if not flag:
        return None
    return flag.split(" ")[0].split("=")[0].removeprefix("--").replace("-", "_")


def _backend(value: Any) -> str | None:
    """A prefill backend as its name: the parser may hold SGLang's `Backend` enum (the 0.5.14 deprecated alias). Pure."""
    value = getattr(value, "value", value)
    return None if value is None else str(value)


def _breakable(how: str, runners: Mapping[str, Any], release: str, source: str) -> PiecewiseState:
    limit = ""
    if runners.get("one_request_only"):
        limit = (f"sglang {release}'s breakable runner replays one request per prefill: prefills of more than one "
                 f"request run eagerly ({runners.get('one_request_at')})")
    return PiecewiseState(False, f"{how}: piecewise capture builds SGLang's breakable CUDA graph runner, which uses "
                          "no torch.compile", BREAKABLE, source, limit)


def piecewise_state(flags: Mapping[str, Any], parsed: Mapping[str, Any], auto_disabled: str | None = None,
                    runners: Mapping[str, Any] | None = None, runners_source: str = "",
                    resolved_prefill: str | None = None) -> PiecewiseState:
    """Whether this command line captures with torch.compile, and which runner capture builds. Pure.

    flags: PiecewiseFlags.to_dict(); parsed: vars(namespace); runners: pcgkit.sglang.runners.RunnerFacts.to_dict()
    (None: not read, so a launch that names a breakable runner is not judged), read by the probe from the installed
    release, else from the wheel's table (`runners_source` says which); resolved_prefill: the prefill backend the
    release's own ServerArgs resolution gave (0.5.14+), which already holds its auto-disable rules."""
    state = flags.get("default_state")
    release = flags.get("sglang") or "this release"
    if state == NOT_SHIPPED:
        return PiecewiseState(False, f"sglang {release} has no torch.compile piecewise CUDA graph backend")
    asks_breakable = (any("breakable" in key and value is True for key, value in parsed.items())
                      or _backend(parsed.get(PREFILL_BACKEND_DEST)) == BREAKABLE)
    if asks_breakable and not (runners or {}).get("selector"):  # never a guess: unread is not "torch.compile"
        return PiecewiseState(None, f"the launch asks for SGLang's breakable CUDA graph runner, but where sglang "
                              f"{release} selects its runner was not found ({runners_source or 'no runner facts'}; "
                              "`bin/pcgkit lab read-releases` reads them from the wheel)")
    runners = runners or {}
    enable = flags.get("enable") or ""
    if enable.startswith("--cuda-graph-backend-prefill"):
        explicit = _backend(parsed.get(PREFILL_BACKEND_DEST))
        chosen: str | None
        if resolved_prefill is not None:
            chosen, how = resolved_prefill, (f"{'--cuda-graph-backend-prefill=' + explicit if explicit else 'the default'}"
                                             f", resolved by the release's own ServerArgs._handle_cuda_graph_config to "
                                             f"prefill.backend={resolved_prefill}")
        elif explicit is not None:
            chosen, how = explicit, f"--cuda-graph-backend-prefill={explicit}"
        else:
            chosen = runners.get("prefill_default") or (TC_PIECEWISE if state == ON_BY_DEFAULT else None)
            how = (f"no {PREFILL_BACKEND_DEST.replace('_', '-')} given; the release's CUDA default is "
                   f"{chosen or 'another backend'}")
            if state not in (ON_BY_DEFAULT, OPT_IN):
                return PiecewiseState(None, how)
        if chosen == BREAKABLE:
            return _breakable(how, runners, release, runners_source)
        on = chosen == TC_PIECEWISE
        if on and auto_disabled and resolved_prefill is None:
            return PiecewiseState(False, f"{how}, but SGLang turns it off at start-up: {auto_disabled}")
        return PiecewiseState(on, how, TORCH_COMPILE if on else None, runners_source)
    enable_dest, disable_dest = _dest(flags.get("enable")), _dest(flags.get("disable"))
    force_dest = _dest(flags.get("force"))
    forced = bool(force_dest and parsed.get(force_dest) is True)
    if forced:
        on, how = True, (f"--{(force_dest or '').replace('_', '-')} keeps piecewise CUDA graphs on "
                         "(SGLang's auto-disable checks are skipped)")
    elif state == ON_BY_DEFAULT:
        off = bool(disable_dest and parsed.get(disable_dest))
        on, how = not off, (f"{flags.get('disable')} given" if off else "on by default in this release and not disabled")
    elif state == OPT_IN:
        on = bool(enable_dest and parsed.get(enable_dest))
        how = (f"{flags.get('enable')} given" if on else f"opt-in in this release and {flags.get('enable')} not given")
    else:
        return PiecewiseState(None, f"the default state of piecewise CUDA graphs in sglang {release} was not read")
    if on and auto_disabled and not forced:
        return PiecewiseState(False, f"{how}, but SGLang turns it off at start-up: {auto_disabled}")
    switch = runners.get("switch_field")
    if on and runners.get("selector") == SWITCH and switch and parsed.get(switch) is True:
        return _breakable(f"{how}, and --{switch.replace('_', '-')} given", runners, release, runners_source)
    return PiecewiseState(on, how, TORCH_COMPILE if on else None, runners_source if on else "")


@dataclasses.dataclass(frozen=True)
class ModelShape:
    """What the trace takes from config.json: tiny shapes that keep the checkpoint's constraints."""

    architectures: tuple[str, ...]
    hidden_size: int | None
    moe_keys: tuple[str, ...]  # the MOE_KEYS whose expert count is > 1: the model routes to experts


MOE_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")


def model_shape(config: Mapping[str, Any]) -> ModelShape:
    """Architectures, hidden size and whether the model routes to experts (any of MOE_KEYS > 1). Pure."""
    text_config = config.get("text_config")
    text: dict = text_config if isinstance(text_config, dict) else {}
    merged = {**config, **{k: v for k, v in text.items() if k not in config}}
    moe = tuple(k for k in MOE_KEYS if isinstance(merged.get(k), int) and merged[k] > 1)
    hidden = merged.get("hidden_size")
    return ModelShape(tuple(config.get("architectures") or ()), hidden if isinstance(hidden, int) else None, moe)


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
