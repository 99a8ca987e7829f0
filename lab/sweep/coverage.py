"""What a certificate judged out of what it lists (its `coverage`, written by the builder, lab.sweep.certify) and
why a row is not judged, by class. The reader (pcgkit.sweep.certificate) shows the coverage each certificate
carries. Pure."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

# A not-judged row's reason, by class (NOT_JUDGED_REASONS, in the order they are tried). "refused on this arch by the
# release": the release's own check named the compute capability or the arch ("supports compute capability
# [(10, 0), (10, 3)] only, got (12, 0)", "does not support compute capability 120", "TGV GEMM requires SM100, SM103
# architecture", "requires compute capability 10.0 or 10.3"): no input on the simulated SM120 can change it, so the
# judgeable set is the listed callables less these.
# A backend refused on this arch ("mm_fp8 does not support backend 'trtllm_low_latency' with capability 120") is
# not: another backend is an input choice, so it stays with the release's checks on the inputs.
ARCH_REFUSAL = re.compile(r"compute capability|requires SM ?1\d\d|SM100|SM103|\barchitecture\b", re.IGNORECASE)
ARCH_REASON = "refused on this arch by the release"
NOT_JUDGED_REASONS = (ARCH_REASON, "the release's own check refused the inputs",
                      "simulation gap", "wrapper set-up", "no inputs", "other")


def not_judged_reason(row: Mapping) -> str:
    """The class of a not-judged row's reason (NOT_JUDGED_REASONS). Pure. The retry on the simulated device
    (`on_fake_cuda`) is the later word when the row has one: a CPU input refused there, then an arch check."""
    text = row.get("on_fake_cuda") or row.get("where", "")
    own = ("the release's own check" in text or "the release rejected" in text)
    if own and ARCH_REFUSAL.search(text):
        return "refused on this arch by the release"
    if own:
        return "the release's own check refused the inputs"
    if "simulation gap" in text:
        return "simulation gap"
    if text.startswith("set-up"):
        return "wrapper set-up"
    if "no inputs" in text:
        return "no inputs"
    return "other"


def coverage(callables: Sequence[Mapping], ops: Sequence[Mapping]) -> dict:
    """What the certificate judged out of what it lists, and where the inputs came from. Pure."""
    judged = [r for r in callables if r["status"] != "not-judged"]
    ops_judged = [r for r in ops if r.get("call") and r["status"] != "not-judged"]
    return {
        "callables listed": len(callables), "callables judged": len(judged),
        "ops listed": len(ops), "ops judged with inputs": len(ops_judged),
        "callables judged by input source": dict(sorted(Counter(r.get("inputs_from", "hand spec") for r in judged).items())),
        "ops judged by input source": dict(sorted(Counter(
            (r["call"].get("caller", "") if r["call"].get("caller", "").startswith("op schema") else
             "hand spec" if r["call"].get("caller", "").startswith("spec ") else "a traced callable's graph")
            for r in ops_judged).items())),
        "callables judgeable on this arch (listed less refused on this arch)": len(callables) - sum(
            1 for r in callables if r["status"] == "not-judged" and not_judged_reason(r) == ARCH_REASON),
        "callables not judged by reason": dict(Counter(not_judged_reason(r) for r in callables
                                                       if r["status"] == "not-judged").most_common()),
        "callables whose fake run returned": sum(1 for r in judged if (r.get("run") or {}).get("runs")),
        "unroll capped (time budget)": sum(1 for r in judged if r.get("unroll_capped")),
    }
