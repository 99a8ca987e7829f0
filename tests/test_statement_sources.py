"""Every statement the kit prints is measured or dated-sourced, and none is older than its threshold
(lab.staleness documents the thresholds). When this fails on fresh data, refresh the data
(`bin/pcgkit lab refresh-upstream`, `read-releases`, the matrix) rather than raising a threshold."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
from pathlib import Path

import pytest
import tomllib

from lab.staleness import STALE_AFTER_DAYS, statement_problems, upstream_file_problems
from pcgkit import resources
from pcgkit.advice import Versions, advise, cost_statement, load_evidence
from pcgkit.advice.summary import mode2_condition, upstream_states, where_fixed
from pcgkit.advice.values import SOURCE_KINDS, Source, Statement
from pcgkit.report.upstream import load_upstream


def _every_statement(evidence) -> list[Statement]:
    statements = [*where_fixed(evidence), *upstream_states(evidence), mode2_condition(evidence), cost_statement(evidence)]
    for release in evidence.releases:
        for arch in ("sm120", "sm90", None):
            statements += advise(Versions(sglang=release.sglang), arch, evidence).statements()
    flashinfers = sorted({m.versions.flashinfer for m in evidence.measurements if m.versions.flashinfer})
    for flashinfer in flashinfers:
        statements += advise(Versions(flashinfer=flashinfer), "sm120", evidence).statements()
    return [s for s in statements if s is not None]


def test_every_statement_is_sourced_dated_and_fresh():
    """Every statement the advice model makes from the committed evidence has sources, each dated within its threshold."""
    evidence = load_evidence()
    statements = _every_statement(evidence)
    assert len(statements) > 100
    assert statement_problems(statements, _dt.date.today()) == []


def test_every_upstream_entry_has_a_read_or_a_measurement():
    """Each link of upstream.toml has a dated read; each workaround and dead end is measured by a snapshot case."""
    evidence = load_evidence()
    upstream = tomllib.loads(resources.fixture("upstream.toml").read_text())
    measured = {m.case for m in evidence.measurements if m.verdict not in ("error", "skipped")}
    assert upstream_file_problems(upstream, {r.id for r in evidence.reads}, measured) == []
    load_upstream()  # and the report's loader accepts it


def test_every_read_is_dated_and_says_how():
    """Every upstream read and quote carries an ISO date and how it was read; no state is 'unknown'."""
    evidence = load_evidence()
    for read in evidence.reads:
        assert read.as_of and read.how.strip() and read.state != "unknown", read.id
    for quote in evidence.cost_quotes:
        assert quote.as_of and quote.url.startswith("https://") and quote.phase


def test_upstream_figures_are_only_quotes_with_their_source():
    """Upstream's '2-3x decode' figure appears only as a quote with its link and read date, worded as unmeasured, on the
    cost page under "Upstream says, not measured by the kit"; never in the kit's own cost sentence."""
    for name in ("upstream.toml",):
        assert "2-3x" not in resources.fixture(name).read_text()
    evidence = load_evidence()
    quotes = [q for q in evidence.cost_quotes if "2-3x" in q.text]
    assert quotes and all("no measurement" in q.text and q.url.startswith("https://") for q in quotes)
    assert "2-3x" not in cost_statement(evidence).text
    page = (Path(__file__).resolve().parent.parent / "docs" / "answers.md").read_text()
    claim = page.split("Upstream says, not measured by the kit:")[1]
    assert "2-3x" not in page.split("Upstream says")[0] and "2-3x decode throughput" in claim and quotes[0].as_of in claim


@pytest.mark.parametrize("as_of, problem", [
    ("2026-12-01", None), ("", "undated"), ("last week", "undated"), ("2027-01-01", "future"), ("2026-01-01", "stale"),
])
def test_staleness_check_fails_when_it_should(as_of, problem):
    """The walker flags undated, future and too-old sources, and passes a fresh one (so the tests above can fail)."""
    found = statement_problems([Statement("x", (Source("upstream", "r", as_of),), False)], _dt.date(2026, 12, 1))
    assert (found == []) if problem is None else (len(found) == 1 and problem in found[0])


def test_each_source_kind_has_a_threshold():
    """A threshold is defined for every source kind a statement can cite."""
    assert set(STALE_AFTER_DAYS) == set(SOURCE_KINDS)


def test_upstream_walker_flags_unsourced_entries():
    """A link without a read, an unmeasured workaround and retired hand-typed sections are each reported."""
    problems = upstream_file_problems({"link": [{"id": "nope"}], "workaround": [{"what": "w", "cases": ["x"]}],
                                       "dead_end": [{"case": "y", "links": ["nope"]}], "fixed_in": []}, set(), set())
    assert len(problems) == 5


# A statement claims a release works when it names it after one of these (up to the next ')' or ';').
_WORKS_CLAIM = re.compile(r"(?:traces from|fixed in|fixed from|runs from|upgrade to|measured fixed)\b([^);]*)")
_RELEASE = re.compile(r"\b\d+\.\d+\.\d+(?:\.post\d+)?\b")
_PINS = re.compile(r"\((?:sglang|flashinfer) [^()]*\)")  # a cell's pins, "(sglang 0.5.13, flashinfer 0.6.12, ...)"


def _claimed_working(text: str) -> set[str]:
    return {v for span in _WORKS_CLAIM.findall(_PINS.sub("", text)) for v in _RELEASE.findall(span)}


def _op_broken_below(evidence, first_working: str):
    """The evidence with every fix-upstream-op measurement below `first_working` turned `traces-but-fails`
    (what the argument audit measures on 0.6.12-0.7.0.post1), and those releases."""
    from pcgkit.advice.model import FLASHINFER_OP_CASE
    from pcgkit.util.ranges import version_key

    broken: set[str] = set()
    measurements = []
    for m in evidence.measurements:
        if (m.case == FLASHINFER_OP_CASE and m.versions.flashinfer and m.verdict in ("fixed", "traces-but-fails")
                and version_key(m.versions.flashinfer) < version_key(first_working)):
            m = dataclasses.replace(m, verdict="traces-but-fails")
            broken.add(m.versions.flashinfer)
        measurements.append(m)
    return dataclasses.replace(evidence, measurements=tuple(measurements)), broken


def test_no_statement_says_fixed_where_the_run_failed():
    """Where the op traces but its call path fails (traces-but-fails), no statement of the walk names that
    release as one where it traces, is fixed, or as an upgrade target."""
    evidence, broken = _op_broken_below(load_evidence(), "0.7.1")
    assert broken, "the committed evidence has no fix-upstream-op measurement below 0.7.1 to turn"
    wrong = [(sorted(_claimed_working(s.text) & broken), s.text[:200]) for s in _every_statement(evidence)
             if _claimed_working(s.text) & broken]
    assert wrong == []


def test_the_claim_reader_finds_a_planted_false_claim():
    """The reader above sees a release named as working, in each phrasing the statements use (so it can fail)."""
    assert _claimed_working("`torch.ops.flashinfer.fp4_quantize` traces from 0.6.12 (fix-upstream-op, measured "
                            "0.6.12, 0.7.0): callers must switch") == {"0.6.12", "0.7.0"}
    assert _claimed_working("so upgrade to 0.6.18.post1 or later and call the op.") == {"0.6.18.post1"}
    assert _claimed_working("reproduces on every measured release through 0.6.11; nothing else") == set()
    assert _claimed_working("sglang-compile-sm120 fixed in cell s (sglang 0.5.13, flashinfer 0.6.12, torch 2.11.0)") == set()


_FIXED_CLAIM = re.compile(r"\b(?:is fixed in|fixed in|fixed from|fixed there)\s+(?:FlashInfer |SGLang )?(\d+\.\d+\.\d+(?:\.post\d+)?)")


def _works(evidence) -> set[str]:
    return {v for m in evidence.measurements if m.works for v in (m.versions.sglang, m.versions.flashinfer) if v}


def test_fixed_is_said_only_where_the_call_path_ran():
    """Every 'fixed in/from X' a statement makes names a release with a `fixed` whose call path ran; a `fixed` measured
    before the run rule (it only traced) is never called fixed, on the committed evidence and on the audited one."""
    evidence = load_evidence()
    audited, _ = _op_broken_below(evidence, "0.7.1")
    audited = dataclasses.replace(audited, measurements=tuple(
        dataclasses.replace(m, ran=True) if m.case == "fix-upstream-op" and m.verdict == "fixed"
        and m.versions.flashinfer in ("0.7.1", "0.7.4") else m for m in audited.measurements))
    for ev in (evidence, audited):
        works = _works(ev)
        wrong = [(claim, s.text[:160]) for s in _every_statement(ev) for claim in _FIXED_CLAIM.findall(s.text)
                 if claim not in works]
        assert wrong == []
    assert any("fixed in FlashInfer 0.7.1, measured" in s.text for s in _every_statement(audited))  # the reader can pass


def test_breakable_is_never_offered_as_measured():
    """Every statement that offers SGLang's breakable runner says the kit has not run it where the bug is (SM120,
    NVFP4); its cost is stated only with the release and device it was measured on, or as not measured."""
    statements = _every_statement(load_evidence())
    offers = [s.text for s in statements if "First try" in s.text and s.topic == "switch"]
    assert offers and all("The kit has not run it on SM120 or with NVFP4" in text for text in offers)
    costs = [s.text for s in statements if s.topic == "first-try-cost"]
    measured = re.compile(r"^The breakable runner against piecewise off: (?P<release>\S+) \((?:H100|H200)\) up to ")
    assert costs and all(("not measured on" in t and "measured on 0.5.12" in t and "%" not in t)
                         or measured.match(t) for t in costs), costs


def test_cost_statement_never_pools_models():
    """The cost table has one column per measured model (never a range pooled across them); the sentence names the
    worst case with its model."""
    evidence = load_evidence()
    assert len(evidence.cost_table.models) == 2 and all(len(row.cells) == 2 for row in evidence.cost_table.rows)
    assert "8.03 B" in cost_statement(evidence).text and "random-weight bf16" in cost_statement(evidence).text


