"""The end-to-end verdict, read from a server's log and what the lifecycle saw. Pure: no I/O.

  crashed (died or hung) with the known dynamo failure in capture -> reproduced, with the signature
  crashed with another dynamo failure                           -> drifted (the bug changed shape)
  crashed because SGLang refused the quantization on this GPU   -> skipped (hardware), naming both capabilities
  crashed with no dynamo failure (OOM, import error, ...)         -> error: the run says nothing about the bug
  ready, piecewise capture ran, one /generate answered            -> fixed
  ready but piecewise capture never ran or was turned off        -> error: the launch did not test the path
  any process of the server's group still alive after the stop   -> error: the kit leaked a server
The known failure is mode 1's (E2E_MODE matches as pcgkit.verdicts.modes.MODE1 does: dynamo dies in
FlashInfer's nvcc subprocess), the one a stock install shows (seeds 000/004).
"""

from __future__ import annotations

import dataclasses
import re

from pcgkit.e2e.server import Readiness, ServerRun
from pcgkit.values.logread import CaptureEvent, parse_log, read_log
from pcgkit.values.signature import Signature
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.modes import MODE1, MODE_WORDS, Mode

E2E_MODE = Mode("e2e-piecewise-launch", *MODE_WORDS["e2e-piecewise-launch"], matches=MODE1.matches)

# Capture begin/end and "Disable piecewise CUDA graph because ..." are read by the one log engine
# (pcgkit.values.signature.read_log), the same reader `pcgkit triage` uses.
# sglang/srt/model_loader/loader.py (0.5.12), before any weight is loaded or graph captured.
_HARDWARE_REFUSAL_RE = re.compile(
    r"The quantization method (?P<method>\S+) is not supported for the current GPU\. "
    r"Minimum capability: (?P<minimum>\d+)\. Current capability: (?P<current>\d+)"
)
# model_runner / cuda_graph_runner: "Capture piecewise CUDA graph end. Time elapsed: 3.04 s. ...",
# "Capture cuda graph end. Time elapsed: 50.71 s. ..."
_TIMING_RES = {
    "piecewise_capture_s": re.compile(r"Capture piecewise CUDA graph end\. Time elapsed: ([0-9.]+) s"),
    "cuda_graph_capture_s": re.compile(r"Capture cuda graph end\. Time elapsed: ([0-9.]+) s"),
}


def log_timings(log: str) -> dict[str, float]:
    """The capture times SGLang logs (seconds), for the ones present in the log."""
    found = {name: pattern.search(log) for name, pattern in _TIMING_RES.items()}
    return {name: float(match.group(1).rstrip(".")) for name, match in found.items() if match}


@dataclasses.dataclass(frozen=True)
class Classification:
    verdict: Verdict
    reason: str
    signature: Signature | None = None
    capture_began: bool = False
    capture_ended: bool = False


def _is_dynamo_failure(signature: Signature) -> bool:
    return signature.exception_type.startswith("torch._dynamo.") or signature.exception_type.endswith("Unsupported")


def _crash(run: ServerRun, log: str, mode: Mode, began: bool, ended: bool) -> Classification:
    how = (
        f"server exited (status {run.exit_status}) after {run.waited_s:.0f} s"
        if run.readiness is Readiness.DIED
        else f"server not ready after {run.waited_s:.0f} s (process group killed)"
    )
    signature = parse_log(log)

    def verdict(word: Verdict, reason: str) -> Classification:
        return Classification(word, reason, signature, began, ended)

    refusal = _HARDWARE_REFUSAL_RE.search(log)
    if refusal and not began:
        return verdict(
            Verdict.SKIPPED,
            f"{how}: SGLang refuses {refusal['method']} on this GPU before any capture (minimum capability "
            f"{refusal['minimum']}, current {refusal['current']}): nothing about the bug was tested",
        )
    if signature is None:
        return verdict(Verdict.ERROR, f"{how}; no exception in its log")
    if not _is_dynamo_failure(signature):
        reason = f"{how} with {signature.exception_type}: {signature.message_head[:160]} (not a compile failure)"
        return verdict(Verdict.ERROR, reason)
    where = "during piecewise capture" if began and not ended else "outside a logged piecewise capture"
    mismatch = mode.matches(signature)
    if mismatch is None:
        inner = f"; at {signature.innermost_library_frame}" if signature.innermost_library_frame else ""
        return verdict(Verdict.REPRODUCED, f"{how}: {mode.known_signature} {where}{inner}")
    return verdict(Verdict.DRIFTED, f"{how}: dynamo failure {where}, but {mismatch}")


def classify_run(run: ServerRun, log: str, mode: Mode = E2E_MODE) -> Classification:
    """Verdict and reason for one server run, from its log text and lifecycle."""
    verdict = _classify_server(run, log, mode)
    if run.group_left:
        return dataclasses.replace(
            verdict,
            verdict=Verdict.ERROR,
            reason=f"processes of the server's group still alive after stop: {', '.join(run.group_left)} "
            f"(the run itself: {verdict.verdict}: {verdict.reason})",
        )
    return verdict


def _classify_server(run: ServerRun, log: str, mode: Mode) -> Classification:
    reading = read_log(log)
    began, ended = reading.capture_began, reading.capture_ended
    if run.readiness is not Readiness.READY:
        return _crash(run, log, mode, began, ended)

    def error(reason: str, signature: Signature | None = None) -> Classification:
        return Classification(Verdict.ERROR, reason, signature, began, ended)

    disabled = reading.events(CaptureEvent.DISABLED)
    if disabled:
        text = disabled[0].text.strip()[-200:]
        return error(f"server came up with piecewise CUDA graphs turned off by SGLang: {text}", parse_log(log))
    if not began:
        return error("server came up but its log shows no piecewise CUDA graph capture")
    generation = run.generation
    if generation is None or not generation.ok:
        detail = generation.detail if generation else "no request was sent"
        return error(f"server ready but /generate failed: {detail[:200]}")
    return Classification(
        Verdict.FIXED,
        f"piecewise CUDA graphs captured, server ready after {run.waited_s:.0f} s, "
        f"/generate answered {len(generation.detail)} chars in {generation.duration_s:.1f} s",
        capture_began=began,
        capture_ended=ended,
    )
