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


def test_device_answers_that_quote_a_superseded_cost_say_so():
    """The H200 sample's answers are the record of a device run and are kept as printed; where they quote the
    tiny-model cost, its RUN.md says that cost is superseded and where today's is."""
    folder = SAMPLES.parent / "preflight-h200-2026-12-02"
    stale = [p.name for p in sorted((folder / "answers").glob("*.json")) if "1.31 M parameters" in p.read_text()]
    run = " ".join((folder / "RUN.md").read_text().split())
    assert stale and "Dated sample" in run and "superseded" in run and "docs/answers.md#cost" in run, stale
