"""The launch command for `python -m sglang.launch_server` with piecewise CUDA graphs on. Pure.

Version facts (pcgkit.sglang.facts.PiecewiseFlags, the one reader of SGLang's piecewise flags) in,
argv out: its clean `enable_argv` / `force_argv` tokens, never its human-readable fields. Every
flag used here was checked against each matrix SGLang's own parser by `bin/pcgkit lab validate-launch`
(fixtures/sglang_launch_validation.json).
"""

from __future__ import annotations

import dataclasses
import shlex
from typing import Mapping, Sequence

from pcgkit.sglang.facts import ON_BY_DEFAULT, PiecewiseFlags

LAUNCH_MODULE = "sglang.launch_server"
QUANTIZATION = "modelopt_fp4"  # SGLang's name for ModelOpt NVFP4 checkpoints
# Extra server flags an environment needs (a lean install: no FA3, no grammar backends), appended after
# the kit's own; argparse keeps the last value of a repeated flag. The device runner sets it from
# fixtures/e2e_payload.toml ([launch] server_args).
SERVER_ARGS_ENV = "PCGKIT_E2E_SERVER_ARGS"


def server_args_from_env(env: Mapping[str, str]) -> tuple[str, ...]:
    """The extra server flags named in PCGKIT_E2E_SERVER_ARGS (shell words), or none. Pure."""
    return tuple(shlex.split(env.get(SERVER_ARGS_ENV, "")))


class LaunchPlanError(ValueError):
    """This SGLang has no way to turn piecewise CUDA graphs on: there is nothing to launch."""


@dataclasses.dataclass(frozen=True)
class LaunchPlan:
    argv: tuple[str, ...]
    how: str  # one line: which of the version's flags did it, for the evidence

    @property
    def server_args(self) -> tuple[str, ...]:
        """argv without `python -m sglang.launch_server`: what ServerArgs' parser sees."""
        return self.argv[3:]


def piecewise_on_args(flags: PiecewiseFlags) -> tuple[tuple[str, ...], str]:
    """The argv that turns piecewise CUDA graphs on for this version, and a line saying why."""
    notes: list[str] = []
    if flags.enable_argv:
        notes.append(f"{flags.default_state}: {' '.join(flags.enable_argv)}")
    elif flags.default_state == ON_BY_DEFAULT:
        notes.append("on by default" + (f" (never passing {flags.disable})" if flags.disable else ""))
    if flags.force_argv:
        # Some releases switch piecewise off by themselves in some configurations; the case is
        # about the capture, so it asks for it outright where the version has a (non-deprecated) way.
        notes.append(f"forced: {' '.join(flags.force_argv)}")
    args = (*flags.enable_argv, *flags.force_argv)
    if not flags.enable_argv and flags.default_state != ON_BY_DEFAULT:
        raise LaunchPlanError(f"sglang {flags.sglang} has no flag that turns piecewise CUDA graphs on"
                              f" ({flags.default_state}{': ' + flags.note if flags.note else ''})")
    return args, "; ".join(notes)


def piecewise_off_args(flags: PiecewiseFlags) -> tuple[tuple[str, ...], str]:
    """The argv that turns piecewise CUDA graphs off (the workaround), and a line saying why."""
    if flags.default_state == ON_BY_DEFAULT:
        if not flags.disable:
            raise LaunchPlanError(f"sglang {flags.sglang} has piecewise on by default and no flag to turn it off")
        return (flags.disable,), f"off: {flags.disable}"
    return (), "off: opt-in and not asked for"


def build_launch(
    flags: PiecewiseFlags,
    *,
    python: str,
    model_path: str,
    port: int,
    host: str = "127.0.0.1",
    mem_fraction_static: float = 0.5,
    quantization: str | None = QUANTIZATION,
    extra_args: Sequence[str] = (),
    piecewise: bool = True,
) -> LaunchPlan:
    """argv for one single-GPU server on the tiny checkpoint, piecewise CUDA graphs on (or off: the workaround, for
    measuring what it costs); quantization None: the bf16 control checkpoint, launched without --quantization."""
    piecewise_args, how = piecewise_on_args(flags) if piecewise else piecewise_off_args(flags)
    quant = ("--quantization", quantization) if quantization else ()
    server = ("--model-path", model_path, "--host", host, "--port", str(port), *quant, "--tp-size", "1")
    server += ("--mem-fraction-static", str(mem_fraction_static), "--log-level", "info", *piecewise_args, *extra_args)
    return LaunchPlan((python, "-m", LAUNCH_MODULE, *server), how)
