"""The end-to-end case's steps (launch plan, one server run and its verdict, the CaseResult every report reads),
outside pytest so they can be tested with a stand-in server."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Mapping, Sequence

from pcgkit.e2e import launch as launch_mod
from pcgkit.e2e.checkpoint import NVFP4
from pcgkit.e2e.launch import QUANTIZATION, LaunchPlan, server_args_from_env
from pcgkit.e2e.logclass import E2E_MODE, Classification, classify_run, log_timings
from pcgkit.e2e.server import ServerRun, free_loopback_port, serve_once
from pcgkit.sglang.facts import ARGPARSE_SOURCE, PiecewiseFlags, derived_port_offsets
from pcgkit.values import targets
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import CaseResult

VARIANT = targets.SM120.id  # never simulated: this case only runs on a real SM120 GPU


def broken_install_reason(flags: PiecewiseFlags) -> str | None:
    """Why this install cannot launch a server, or None. Pure. Flags read as source text (server_args does not
    import) are enough for a report, but `python -m sglang.launch_server` would die importing the same module."""
    if flags.source == ARGPARSE_SOURCE:
        return None
    return f"SGLang's server_args does not import, its flags were only read as text: {flags.source}"


@dataclasses.dataclass(frozen=True)
class E2EOutcome:
    run: ServerRun
    classification: Classification
    timings: dict = dataclasses.field(default_factory=dict)  # capture times from the log (logclass.log_timings)


def plan_for_checkpoint(
    flags: PiecewiseFlags,
    *,
    python: str,
    fmt: str,
    model_path: str,
    port: int,
    env: Mapping[str, str],
    target_args: Sequence[str] = (),
    piecewise: bool = True,
) -> LaunchPlan:
    """The one launch every e2e case and the cost benchmark use: --quantization only for NVFP4, the
    environment's extra flags, then the target's own (the hybrid's --disable-cuda-graph) last."""
    return launch_mod.build_launch(  # through the module: tests stand a server in for it
        flags,
        python=python,
        model_path=model_path,
        port=port,
        quantization=QUANTIZATION if fmt == NVFP4 else None,
        extra_args=(*server_args_from_env(env), *target_args),
        piecewise=piecewise,
    )


def launch_port() -> tuple[int, dict]:
    """A --port whose every SGLang-derived port is valid and free, and the evidence of how it was chosen."""
    offsets, source = derived_port_offsets()
    port = free_loopback_port(offsets)
    return port, {"port": port, "derived_port_offsets": list(offsets), "offsets_from": source}


def launch_and_classify(
    argv: Sequence[str],
    *,
    port: int,
    log_path: Path,
    env: Mapping[str, str] | None,
    ready_timeout_s: float,
    poll_s: float = 1.0,
    classify=classify_run,
) -> E2EOutcome:
    run = serve_once(argv, port=port, log_path=log_path, env=env, ready_timeout_s=ready_timeout_s, poll_s=poll_s)
    log = log_path.read_bytes().decode("utf-8", "replace") if log_path.exists() else ""
    return E2EOutcome(run, classify(run, log), log_timings(log))


def to_case_result(
    outcome: E2EOutcome,
    *,
    device: dict,
    versions: dict,
    duration_s: float,
    nodeid: str,
    evidence: dict,
    expected: str | None = None,
    mode_id: str = E2E_MODE.id,
    variant: str = VARIANT,
    classification: Classification | None = None,
) -> CaseResult:
    """classification: the verdict to record when it differs from the run's own (judged with the control)."""
    c = classification or outcome.classification
    generation = outcome.run.generation
    return CaseResult(
        mode=mode_id,
        variant=variant,
        verdict=c.verdict,
        reason=c.reason,
        device=device,
        versions=versions,
        duration_s=round(duration_s, 3),
        signature=c.signature,
        expected=expected,
        evidence={
            **evidence,
            "server": outcome.run.to_dict(),
            "server_log": str(outcome.run.log_path),
            "piecewise_capture_began": c.capture_began,
            "piecewise_capture_ended": c.capture_ended,
            "generation": dataclasses.asdict(generation) if generation else None,
            "timings": {
                **outcome.timings,
                "ready_s": outcome.run.waited_s,
                "first_generate_s": round(generation.duration_s, 3) if generation else None,
            },
            "group_left_after_stop": list(outcome.run.group_left) if outcome.run.group_left is not None else None,
        },
        nodeid=nodeid,
    )


def not_applicable_result(
    reason: str, *, device: dict, versions: dict, nodeid: str, evidence: dict, expected: str | None = None,
    variant: str = VARIANT,
) -> CaseResult:
    """The row for a release that has no way to turn piecewise CUDA graphs on: nothing was launched."""
    return CaseResult(
        mode=E2E_MODE.id,
        variant=variant,
        verdict=Verdict.NOT_APPLICABLE,
        reason=reason,
        device=device,
        versions=versions,
        duration_s=0.0,
        expected=expected,
        evidence=evidence,
        nodeid=nodeid,
    )
