"""The committed preflight answers carry today's answer, not a superseded one (issue 44: they quoted the 2026-12-01
tiny-model cost after the 2026-12-05 measurement at real model sizes replaced it). Their probes stay as measured on
2026-12-01; `benchmarks/preflight_releases.py --readvise` re-derives the advice from them."""

from __future__ import annotations

import json
from pathlib import Path

from pcgkit.advice import cost_statement, load_evidence

SAMPLES = Path(__file__).resolve().parents[1] / "reports" / "samples" / "preflight-2026-12-01"


def test_every_committed_preflight_answer_quotes_the_current_cost():
    """Each answer that states the cost states the model's one cost sentence, and none the tiny-model figures."""
    current = cost_statement(load_evidence())
    assert current is not None
    quoted = 0
    for path in sorted(SAMPLES.glob("sglang-*.json")):
        advice = json.loads(path.read_text())["answer"].get("advice") or {}
        costs = [s["text"] for s in advice.get("statements", ()) if s.get("topic") == "cost"]
        assert all(text == current.text for text in costs), path.name
        assert "tiny random-weight" not in json.dumps(advice) and "1.31 M-parameter" not in json.dumps(advice), path.name
        quoted += len(costs)
    assert quoted >= 2  # the answers for releases with piecewise on by default state it (0.5.10.post1, 0.5.11)
