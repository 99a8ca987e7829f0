"""compat.md's and the dashboard's "fixed from" count only releases whose call path ran (issue 34): a `fixed`
that only traced is named apart, over the committed matrix sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[1] / "reports/samples/matrix-2026-12-01/compat.json"


@pytest.fixture(scope="module")
def report():
    from pcgkit.report.model import from_json

    return from_json(json.loads(SAMPLE.read_text()))


def test_fixed_from_skips_releases_that_only_traced(report):
    """fix-custom-op traced on 0.5.5.post3-0.5.11 (before the run rule) and ran from 0.5.12: fixed from 0.5.12."""
    from pcgkit.report.wording import fixed_from, traced_only

    assert fixed_from(report, "fix-custom-op", "sglang") == "0.5.12"
    assert traced_only(report, "fix-custom-op", "sglang") == ("0.5.5.post3", "0.5.8", "0.5.10.post1", "0.5.11")


def test_a_case_that_only_traced_is_never_fixed_from_anything(report):
    """sglang-compile-sm90 is `fixed` only by trace in every release: no fixed-from, every release traced only."""
    from pcgkit.report.wording import fixed_from, traced_only

    assert fixed_from(report, "sglang-compile-sm90", "sglang") is None
    assert "0.5.10" in traced_only(report, "sglang-compile-sm90", "sglang")


def test_a_release_counts_when_one_of_its_fixed_cells_ran(report):
    """FlashInfer 0.7.4: fi-0.7.4's call path ran (torch-2.15.0's only traced): counted, like the snapshot's `ran`."""
    from pcgkit.report.wording import fixed_from, traced_only

    assert fixed_from(report, "fix-upstream-op", "flashinfer-python") == "0.7.1"
    assert traced_only(report, "fix-upstream-op", "flashinfer-python") == ()


def test_answers_and_compat_md_name_traced_only_releases_apart(report):
    """The first-answers rows carry the traced-only releases apart; compat.md's thread lines say 'traced only'."""
    from pcgkit.report.answers import answers
    from pcgkit.report.markdown import render_upstream
    from pcgkit.report.upstream import load_upstream

    upstream = load_upstream()
    rows = {a.case: a for a in answers(report, upstream)}
    assert rows["sglang-compile-sm120"].first_fixed_measured == "0.5.12"
    assert "0.5.13" in rows["sglang-compile-sm120"].traced_only
    text = "\n".join(render_upstream(report, upstream))
    assert "traced only, call path not run: not counted" in text


def test_the_dashboard_names_traced_only_releases_beside_first_fixed(report):
    """The dashboard's first-answers row lists the releases whose `fixed` only traced, apart from the first fixed."""
    from pcgkit.report.dashboard import build_page
    from pcgkit.report.upstream import load_upstream

    html = build_page(report, upstream=load_upstream()).html
    assert "(traced only, call path not run: 0.5.12.post1, 0.5.13," in html
