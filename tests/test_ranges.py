"""Ranges stated only over measured releases, gaps named (pcgkit.util.ranges), and the report's use of them."""

from __future__ import annotations

import pytest

from pcgkit.report import attribution as attr
from pcgkit.report.wording import spans_text
from pcgkit.util.ranges import measured_ranges, measured_runs

SGLANG = ("0.5.5", "0.5.6", "0.5.7", "0.5.8", "0.5.8.post1", "0.5.9", "0.5.10", "0.5.11", "0.5.12")


@pytest.mark.parametrize(
    "measured, text",
    [
        (("0.5.6", "0.5.7", "0.5.8", "0.5.8.post1", "0.5.9"), "0.5.6–0.5.9"),
        (("0.5.6", "0.5.7", "0.5.9", "0.5.10", "0.5.11"),
         "0.5.6–0.5.7, 0.5.9–0.5.11 (not measured: 0.5.8–0.5.8.post1 (2 releases))"),
        (("0.5.6", "0.5.8", "0.5.8.post1", "0.5.9"), "0.5.6, 0.5.8–0.5.9 (not measured: 0.5.7)"),
        (("0.5.11",), "0.5.11"),
        ((), "no release measured"),
    ],
)
def test_range_printed_over_measured_releases_with_gaps_named(measured, text):
    """A run is printed only where every release in it was measured; releases between runs are named."""
    assert measured_ranges(SGLANG, measured) == text


def test_input_order_does_not_matter_and_releases_sort_by_pep440():
    """0.5.10 sorts after 0.5.9 (not as text) whatever order the caller passes."""
    assert measured_ranges(reversed(SGLANG), ["0.5.10", "0.5.9", "0.5.11"]) == "0.5.9–0.5.11"


def test_releases_outside_the_measured_span_are_not_gaps():
    """Unmeasured releases before and after the span are not gaps of the statement."""
    found = measured_runs(SGLANG, ["0.5.7", "0.5.8"])
    assert found.complete and found.text() == "0.5.7–0.5.8"


def test_without_a_release_list_no_run_is_claimed():
    """When nothing says what lies between two measured versions, each is listed alone."""
    assert measured_ranges((), ["0.5.6", "0.5.11"]) == "0.5.6, 0.5.11"


def test_a_measured_version_outside_the_list_is_kept():
    """A local build measured but not a release of the range still counts as measured inside the span."""
    found = measured_runs(("2.9.1", "2.11.0"), ["2.9.1", "2.10.0+cpu", "2.11.0"])
    assert found.complete and found.text() == "2.9.1–2.11.0"


def _obs(cell: str, sglang: str | None, outcome: str) -> attr.Observation:
    return attr.Observation(cell, {"sglang": sglang}, outcome)


def test_report_span_names_releases_no_cell_ran():
    """compat.md's 'reproduced on A–B' and 'fixed from C (measured through D)' skip nothing silently."""
    obs = [_obs("a", "0.5.6", "reproduced"), _obs("b", "0.5.9", "reproduced"), _obs("c", "0.5.10", "reproduced"),
           _obs("d", "0.5.11", "fixed"), _obs("e", "0.5.12", "fixed")]
    text = spans_text("sglang", attr.spans_along(obs, "sglang"), SGLANG)
    assert text.startswith("reproduced on 0.5.6, 0.5.9–0.5.10 (not measured: 0.5.7–0.5.8.post1 (3 releases)) (3 cells)")
    assert "fixed from 0.5.11 (measured through 0.5.12) (2 cells)" in text


def test_report_names_an_unmeasured_release_at_the_boundary():
    """Where the change lies between two measured releases with others between them, those are named."""
    obs = [_obs("a", "0.5.7", "reproduced"), _obs("b", "0.5.9", "fixed")]
    text = spans_text("sglang", attr.spans_along(obs, "sglang"), SGLANG)
    assert "the change lies between 0.5.7 and 0.5.9, not measured: 0.5.8–0.5.8.post1 (2 releases)" in text
