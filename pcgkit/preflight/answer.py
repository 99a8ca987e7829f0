"""The preflight's answer, from the probe's document and the kit's failure modes. Pure.

`will crash`: the traced region raised dynamo's Unsupported under fullgraph (what kills piecewise capture),
named by the first failure mode (catalog order, the same rules triage applies to a crash log) that matches;
`ok`: piecewise capture is off for this launch, or the compiled region traced (`with_call_path` then says whether
the kit measured the release's call path running); `unknown`: something could not be resolved or judged, and the
answer says what. The modes arrive as values from the catalog, so a new failure mode needs no change here.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from pcgkit.preflight.resolve import BREAKABLE
from pcgkit.sweep.classify import SweepClass
from pcgkit.values.signature import Signature
from pcgkit.values.verdict import Word
from pcgkit.verdicts.modes import is_dynamo_exception

SCHEMA = "pcgkit.preflight/1"
TRACED_CLASSES = tuple(c.value for c in SweepClass if c.traced)


class Answer(Word):
    OK = "ok"
    WILL_CRASH = "will crash"
    UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True)
class Preflight:
    answer: Answer
    reason: str  # one sentence: why this answer
    mode: str | None  # the failure mode id when it will crash with a known signature
    signature: Signature | None
    probe: Mapping[str, Any]  # the probe's whole document: versions, device, parsed flags, evidence
    advice: Mapping[str, Any] | None = None  # the advice model's answer for these versions (when available)

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, "answer": self.answer.value, "reason": self.reason, "mode": self.mode,
                "signature": self.signature.to_dict() if self.signature else None,
                "device": self.probe.get("device"), "simulated": self.probe.get("simulated", True),
                "versions": self.probe.get("versions"), "advice": self.advice, "probe": dict(self.probe)}


def with_call_path(result: Preflight, ran: bool | None, measured: str) -> Preflight:
    """A traced `ok` said with what the kit measured of the release's call path (the probe only traces): `ran` False
    (the release's case measured failing, e.g. traces-but-fails) makes it `unknown`. Pure."""
    traced = result.answer is Answer.OK and (result.probe.get("piecewise") or {}).get("on") is not False
    if not traced:
        return result
    if ran is True:
        return dataclasses.replace(result, reason=f"{result.reason}, and its call path runs ({measured})")
    if ran is False:
        return dataclasses.replace(result, answer=Answer.UNKNOWN, reason=f"{result.reason}, but the kit measured this "
                                   f"release's call path failing when run ({measured}): not ok")
    return dataclasses.replace(result, reason=f"{result.reason}; whether its call path runs is not measured ({measured})")


def matching_mode(signature: Signature, modes: Mapping[str, Any]) -> str | None:
    """The first mode (in the order given) whose rule accepts the signature. Pure."""
    return next((mode_id for mode_id, mode in modes.items() if mode.matches(signature) is None), None)


def decide(probe: Mapping[str, Any], modes: Mapping[str, Any]) -> Preflight:
    """The answer for one probe document (see the module docstring). Pure."""
    if probe.get("unresolved"):
        return Preflight(Answer.UNKNOWN, str(probe["unresolved"]), None, None, probe)
    piecewise = probe.get("piecewise") or {}
    if piecewise.get("runner") == BREAKABLE:  # no torch.compile at all: nothing of this bug's can run
        limit = f"; {piecewise['limit']}" if piecewise.get("limit") else ""
        return Preflight(Answer.OK, f"will not hit this bug: {piecewise.get('why')} (read from "
                         f"{piecewise.get('runner_source') or 'the release'}){limit}", None, None, probe)
    if piecewise.get("on") is False:
        return Preflight(Answer.OK, f"piecewise CUDA graph capture is off for this launch ({piecewise.get('why')}): "
                         "nothing is compiled under torch.compile(fullgraph=True) at start-up", None, None, probe)
    if piecewise.get("on") is None:
        return Preflight(Answer.UNKNOWN, f"whether piecewise capture is on could not be read: {piecewise.get('why')}",
                         None, None, probe)
    dense = probe.get("dense") or {}
    observation = dense.get("observation") or {}
    cls, where = observation.get("class"), observation.get("where", "")
    moe = (probe.get("model") or {}).get("moe") or []
    sig_data = dense.get("signature")
    signature = Signature.from_dict(sig_data) if sig_data else None
    compiled = f"install_torch_compiled(fullgraph={(probe.get('compile') or {}).get('fullgraph')})"
    if signature is not None and is_dynamo_exception(signature) is None:
        mode = matching_mode(signature, modes)
        if mode is None and signature.innermost_library_frame is None:
            # Refused with no FlashInfer frame and no known shape: e.g. apply calls a kernel binding that is None
            # because an import-time hardware check was not answered here (gb0147 "function `None`"). That says
            # nothing about the launch on real hardware: not judged.
            return Preflight(Answer.UNKNOWN, f"dynamo refused {signature.short()} with no FlashInfer frame "
                             f"({(signature.explanation or signature.message_head)[:160]}): not judged here",
                             None, signature, probe)
        known = f"the kit's {mode} signature" if mode else "a signature none of the kit's modes names (new shape)"
        return Preflight(Answer.WILL_CRASH, f"{dense.get('linear_method', 'the linear method')}.apply under "
                         f"{compiled} raises {signature.short()}: {known}", mode, signature, probe)
    if cls in TRACED_CLASSES:
        if moe:
            return Preflight(Answer.UNKNOWN, f"the dense layers trace ({dense.get('linear_method')}), but the model "
                             f"routes to experts ({', '.join(moe)}) and the kit does not trace MoE methods yet",
                             None, None, probe)
        return Preflight(Answer.OK, f"{dense.get('linear_method')}.apply traces under {compiled}", None, None, probe)
    return Preflight(Answer.UNKNOWN, f"the compiled region could not be judged here ({cls}): {where}",
                     None, signature, probe)
