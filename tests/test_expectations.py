"""The recorded baseline: which expectation applies to which installed versions."""

from __future__ import annotations

import pytest

from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.expectations import DEFAULT_EXPECTATIONS, Expectation, expected_for, load_expectations

REFERENCE_VERSIONS = {"torch": "2.9.1", "flashinfer-python": "0.6.1", "sglang": None, "python": "3.12.1"}


def _rule(mode="mode1", expect=Verdict.REPRODUCED, **when) -> Expectation:
    return Expectation(mode, expect, tuple(sorted(when.items())), why="test")


@pytest.mark.parametrize(
    ("installed", "applies"),
    [
        ("2.9.1", True),
        ("2.6.0", True),
        ("2.5.1", False),
        ("3.0.0", False),
        ("2.9.1+cu128", True),
        ("2.5.1+cu124", False),
    ],
)
def test_rule_matches_by_specifier_ignoring_local_label(installed, applies):
    """Specifiers decide; a local label like +cu128 does not change which release it is."""
    rule = _rule(torch=">=2.6,<3")
    assert rule.applies_to({"torch": installed}) is applies


def test_all_specifiers_must_match():
    """A rule with two distributions applies only when both are in range."""
    rule = _rule(torch=">=2.9", **{"flashinfer-python": "==0.6.1"})
    assert rule.applies_to({"torch": "2.9.1", "flashinfer-python": "0.6.1"})
    assert not rule.applies_to({"torch": "2.9.1", "flashinfer-python": "0.5.3"})


def test_missing_distribution_means_the_rule_does_not_apply():
    """A rule about flashinfer says nothing about an environment without flashinfer."""
    rule = _rule(**{"flashinfer-python": ">=0.5"})
    assert not rule.applies_to({"torch": "2.9.1", "flashinfer-python": None})
    assert not rule.applies_to({"torch": "2.9.1"})


def test_unparseable_version_does_not_apply():
    """An installed version that is not PEP 440 matches no rule rather than crashing."""
    assert not _rule(torch=">=2.6").applies_to({"torch": "not-a-version"})


def test_first_matching_rule_wins():
    """Rules are read top to bottom; rules for other modes are ignored."""
    rules = (
        _rule("mode2", Verdict.FIXED, torch=">=2.0"),
        _rule("mode1", Verdict.FIXED, torch=">=2.10"),
        _rule("mode1", Verdict.REPRODUCED, torch=">=2.0"),
    )
    assert expected_for("mode1", {"torch": "2.10.0"}, rules) is rules[1]
    assert expected_for("mode1", {"torch": "2.9.1"}, rules) is rules[2]
    assert expected_for("mode3", {"torch": "2.9.1"}, rules) is None


def test_shipped_baseline_covers_all_modes_at_reference_versions():
    """fixtures/expectations.toml loads and expects 'reproduced' for mode1..mode4 on the reference stack."""
    rules = load_expectations(DEFAULT_EXPECTATIONS)
    for mode in ("mode1", "mode2", "mode3", "mode4"):
        rule = expected_for(mode, REFERENCE_VERSIONS, rules)
        assert rule is not None, f"no baseline for {mode}"
        assert rule.expect is Verdict.REPRODUCED
        assert rule.why


def test_load_expectations_from_a_file(tmp_path):
    """A TOML file of [[rule]] tables loads into Expectations with verdicts and sorted specifiers."""
    path = tmp_path / "expectations.toml"
    path.write_text(
        '[[rule]]\nmode = "mode4"\nexpect = "fixed"\nwhen = { torch = ">=3.0", "flashinfer-python" = ">=0.7" }\n'
        'why = "https://example.invalid/issue/1"\n'
    )
    (rule,) = load_expectations(path)
    assert rule == Expectation(
        "mode4", Verdict.FIXED, (("flashinfer-python", ">=0.7"), ("torch", ">=3.0")), "https://example.invalid/issue/1"
    )


def test_a_target_limited_rule_only_binds_its_targets(tmp_path):
    """A rule limited to GPU targets binds there; the simulated target falls through to the next rule."""
    path = tmp_path / "expectations.toml"
    path.write_text(
        '[[rule]]\nmode = "fix-upstream-op"\nexpect = "drifted"\nwhen = { "flashinfer-python" = ">=0.6.12" }\n'
        'targets = ["gpu", "sm120"]\nwhy = "on a GPU"\n\n'
        '[[rule]]\nmode = "fix-upstream-op"\nexpect = "fixed"\nwhen = { "flashinfer-python" = ">=0.6.12" }\nwhy = "traced"\n'
    )
    rules = load_expectations(path)
    versions = {"flashinfer-python": "0.7.0", "torch": "2.11.0"}
    assert expected_for("fix-upstream-op", versions, rules, "gpu").expect is Verdict.DRIFTED
    assert expected_for("fix-upstream-op", versions, rules, "sim-sm120").expect is Verdict.FIXED


def test_the_upstream_op_traces_but_fails_through_0_7_0_on_every_target():
    """FlashInfer 0.6.12-0.7.0.post1's op misbinds enable_pdl (argument audit, any target); 0.7.1 is fixed."""
    rules = load_expectations()
    versions = {"flashinfer-python": "0.7.0", "torch": "2.11.0"}
    for target in ("gpu", "sim-sm120", "sm120"):
        assert expected_for("fix-upstream-op", versions, rules, target).expect is Verdict.TRACES_BUT_FAILS
    assert expected_for("fix-upstream-op", {**versions, "flashinfer-python": "0.7.1"}, rules, "gpu").expect is Verdict.FIXED


def test_expectation_is_frozen():
    """A baseline rule is data read once: it cannot be edited after loading."""
    import dataclasses

    rule = Expectation(mode="mode1", expect=Verdict.REPRODUCED, when=(), why="seed")
    with pytest.raises(dataclasses.FrozenInstanceError):
        rule.why = "edited"  # type: ignore[misc]
