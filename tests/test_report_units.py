"""Pure pieces of the report layer: the attribution interval rule, path scrubbing, upstream.toml errors,
history timelines (fast; no venvs, no browser)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomllib

from pcgkit import resources
from pcgkit.advice import load_evidence
from pcgkit.errors import UsageError
from pcgkit.report import attribution as attr
from pcgkit.report.history import HISTORY_FILE, RunSummary, load_history, timelines
from pcgkit.report.model import relative_paths
from pcgkit.report.upstream import load_upstream, parse_upstream
from pcgkit.sglang import facts as sglang_facts

AXES = ("torch", "flashinfer-python")


def obs(cell: str, torch: str, flashinfer: str, outcome: str) -> attr.Observation:
    return attr.Observation(cell, {"torch": torch, "flashinfer-python": flashinfer}, outcome)


# --- attribution -------------------------------------------------------------------------------------


def test_controlled_pair_names_the_axis_and_the_two_cells():
    """Two cells differing only in torch with different verdicts: torch matters (controlled), flashinfer no effect."""
    a = attr.attribute("m", [obs("a", "2.8.0", "0.6.1", "drifted"), obs("b", "2.9.1", "0.6.1", "reproduced"),
                             obs("c", "2.9.1", "0.7.4", "reproduced")], AXES)
    assert a.basis == attr.CONTROLLED and a.explaining == ("torch",)
    torch = a.finding("torch")
    assert torch is not None and torch.effect == attr.MATTERS and torch.pair == ("a", "b")
    flashinfer = a.finding("flashinfer-python")
    assert flashinfer is not None and flashinfer.effect == attr.NO_EFFECT
    assert flashinfer.intervals == (("0.6.1", "0.7.4"),)
    assert [s.outcome for s in a.spans["torch"]] == ["drifted", "reproduced"]


def test_no_effect_interval_lets_a_version_inside_it_stand_in_for_a_controlled_pair():
    """flashinfer shown irrelevant on 0.5.0-0.7.0; a torch change at 0.6.0 (inside) is controlled by that."""
    a = attr.attribute("m", [obs("a", "2.8.0", "0.5.0", "reproduced"), obs("b", "2.8.0", "0.7.0", "reproduced"),
                             obs("c", "2.9.1", "0.6.0", "fixed")], AXES)
    assert a.basis == attr.CONTROLLED and a.explaining == ("torch",)
    finding = a.finding("torch")
    assert finding is not None and "c" in (finding.pair or ()) and finding.held == ("flashinfer-python",)


def test_no_effect_does_not_extend_outside_the_shown_interval():
    """The same cells with the changed one at flashinfer 0.8.0 (outside 0.5.0-0.7.0): not controlled, confounded."""
    a = attr.attribute("m", [obs("a", "2.8.0", "0.5.0", "reproduced"), obs("b", "2.8.0", "0.7.0", "reproduced"),
                             obs("c", "2.9.1", "0.8.0", "fixed")], AXES)
    assert a.basis == attr.CONFOUNDED
    assert set(a.explaining) == {"torch", "flashinfer-python"}
    flashinfer = a.finding("flashinfer-python")
    assert flashinfer is not None and flashinfer.effect == attr.NO_EFFECT
    assert flashinfer.intervals == (("0.5.0", "0.7.0"),)


def test_no_effect_intervals_are_ordered_by_both_ends():
    """Two intervals starting at one version come out shortest first, whatever the process's hash seed."""
    a = attr.attribute("m", [obs("a", "2.8.0", "0.5.0", "reproduced"), obs("b", "2.8.0", "0.7.0", "reproduced"),
                             obs("c", "2.9.1", "0.5.0", "fixed"), obs("d", "2.9.1", "0.6.0", "fixed")], AXES)
    flashinfer = a.finding("flashinfer-python")
    assert flashinfer is not None and flashinfer.intervals == (("0.5.0", "0.6.0"), ("0.5.0", "0.7.0"))


def test_axes_that_changed_together_are_confounded_not_attributed():
    """Two cells that differ on both axes: neither is named alone; both are candidates."""
    a = attr.attribute("m", [obs("a", "2.8.0", "0.5.0", "drifted"), obs("b", "2.9.1", "0.6.0", "reproduced")], AXES)
    assert a.basis == attr.CONFOUNDED and a.explaining == AXES
    assert all(f.effect == attr.UNTESTED for f in a.findings)


def test_one_outcome_everywhere_is_same_and_no_cells_is_none():
    """Every cell agrees: basis 'same', nothing explaining; no observation at all: 'none'."""
    same = attr.attribute("m", [obs("a", "2.8.0", "0.5.0", "fixed"), obs("b", "2.9.1", "0.6.0", "fixed")], AXES)
    assert same.basis == attr.SAME and same.explaining == ()
    assert attr.attribute("m", [], AXES).basis == attr.NONE


# --- scrub -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "scrubbed"), [
    ("/root/.venv/lib/python3.12/site-packages/flashinfer/jit/cpp_ext.py:69:get_cuda_version",
     "flashinfer/jit/cpp_ext.py:69:get_cuda_version"),
    ("/usr/lib/python3/dist-packages/torch/_dynamo/eval_frame.py:12", "torch/_dynamo/eval_frame.py:12"),
    ("/root/.pyenv/versions/3.12.1/lib/python3.12/subprocess.py:466:check_output", "python3.12/subprocess.py:466:check_output"),
    ("see /home/alice/notes.txt", "see ~/notes.txt"),
    ("open /Users/bob/x/y.log", "open ~/x/y.log"),
    ("/tmp/pytest-of-ci/pytest-17/test_a0/cell.json", "<tmp>/test_a0/cell.json"),
    ("/work/wt-x/pcgkit/report/scrub.py:3", "pcgkit/report/scrub.py:3"),
], ids=["site-packages", "dist-packages", "stdlib", "home", "macos-home", "pytest-tmp", "checkout"])
def test_machine_paths_are_made_relative(raw: str, scrubbed: str):
    """Site-packages, stdlib, home and pytest tmp prefixes are dropped; what remains names the file."""
    assert relative_paths(raw) == scrubbed


def test_text_that_is_not_a_path_is_left_alone():
    """A message with slashes that are not machine paths (a URL, a ratio, a version range) is unchanged."""
    text = "see https://github.com/flashinfer-ai/flashinfer/issues/2999; 3/4 cells; torch 2.8/2.9"
    assert relative_paths(text) == text


# --- upstream.toml -----------------------------------------------------------------------------------


def shipped() -> dict:
    return tomllib.loads(resources.fixture("upstream.toml").read_text())


def test_shipped_upstream_file_parses_with_every_project_and_https_links():
    """fixtures/upstream.toml loads: the three projects, links all https, each state read on a date."""
    facts = load_upstream()
    assert {p.id for p in facts.projects} == {"sglang", "flashinfer", "pytorch"}
    assert facts.links and all(link.read.url.startswith("https://") and link.read.as_of for link in facts.links)
    # the switch is derived from every release's wheel (the evidence), not from the TOML
    on = next(r.flags for r in facts.evidence.releases if r.sglang == "0.5.12")
    assert sglang_facts.switch_wording(on) == ("on by default", "pass `--disable-piecewise-cuda-graph`")
    assert on.breakable == "--enable-breakable-cuda-graph"


@pytest.mark.parametrize("section", ["switch", "fixed_in", "piecewise_off"])
def test_hand_typed_sections_are_refused(section: str):
    """[[switch]], [[fixed_in]] and [piecewise_off] (hand-typed prose of schema 1) are errors naming where the fact lives now."""
    data = {**shipped(), section: [{"x": 1}]}
    with pytest.raises(ValueError, match="is not part of pcgkit.upstream/2: it comes from"):
        parse_upstream(data, load_evidence(), "upstream.toml")


@pytest.mark.parametrize(("table", "change", "named"), [
    ("link", {"colour": "red"}, "[[link]] 0: keys id, cases, relation only"),
    ("link", {"state": "closed"}, "[[link]] 0: keys id, cases, relation only"),
    ("link", {"id": "flashinfer-1"}, "'flashinfer-1': no dated read"),
    ("workaround", {"project": "vllm"}, "project 'vllm'"),
    ("workaround", {"cases": []}, "names no case that measures it"),
], ids=["unknown-key", "hand-typed-state", "no-read", "bad-project", "unmeasured-workaround"])
def test_a_bad_upstream_entry_is_one_value_error_naming_it(table: str, change: dict, named: str):
    """Each kind of bad entry raises one ValueError whose message names the entry and the bad value."""
    data = shipped()
    data[table][0] = {**data[table][0], **change}
    with pytest.raises(ValueError) as caught:
        parse_upstream(data, load_evidence(), "upstream.toml")
    assert named in str(caught.value) and str(caught.value).startswith("upstream.toml")
    assert "\n" not in str(caught.value)


def test_a_broken_upstream_file_is_a_usage_error_with_its_path(tmp_path: Path):
    """A file given explicitly that is not TOML: UsageError naming the file, not a traceback."""
    bad = tmp_path / "upstream.toml"
    bad.write_text("schema = \n")
    with pytest.raises(UsageError, match="upstream.toml: not a valid upstream facts file"):
        load_upstream(bad)


# --- history -----------------------------------------------------------------------------------------


def run(created: str, **verdicts: str) -> RunSummary:
    return RunSummary(created, "0", {"c1": dict(verdicts)}, {"c1": True})


def test_timeline_counts_flips_and_says_since_when_the_verdict_holds():
    """reproduced, fixed, fixed over three runs: one flip, fixed since the second run; unchanged: no flip."""
    lines = timelines([run("2026-01-03", m1="fixed", m2="drifted"), run("2026-01-01", m1="reproduced", m2="drifted"),
                       run("2026-01-02", m1="fixed", m2="drifted")])
    m1 = lines[("c1", "m1")]
    assert m1.dates == ("2026-01-01", "2026-01-02", "2026-01-03")
    assert [m1.verdicts[c] for c in m1.codes] == ["reproduced", "fixed", "fixed"]
    assert (m1.flips, m1.since, m1.flipped_last) == (1, "2026-01-02", False)
    m2 = lines[("c1", "m2")]
    assert (m2.flips, m2.since) == (0, "2026-01-01")


def test_timeline_flip_back_counts_twice_and_flags_the_latest_run():
    """fixed, reproduced, fixed: two flips, since the third run, flipped in the latest run."""
    line = timelines([run("1", m1="fixed"), run("2", m1="reproduced"), run("3", m1="fixed")])[("c1", "m1")]
    assert (line.flips, line.since, line.flipped_last) == (2, "3", True)


def test_unreadable_history_line_is_reported_and_the_others_kept(tmp_path: Path, capsys):
    """A torn line in history.jsonl is named with its line number; the runs around it still load."""
    good = [json.dumps(run(c, m1="fixed").to_json()) for c in ("2026-01-01", "2026-01-03")]
    (tmp_path / HISTORY_FILE).write_text(good[0] + "\n{\"schema\": \"pcgkit.compat-hist\n" + good[1] + "\n")
    runs = load_history(tmp_path)
    assert [r.created for r in runs] == ["2026-01-01", "2026-01-03"]
    said = capsys.readouterr().out
    assert f"{HISTORY_FILE}:2: unreadable history line, skipped" in said


def test_regenerating_a_run_replaces_its_history_line_instead_of_adding_one(tmp_path: Path):
    """append_history twice for the same run leaves one line for it (the newer); another run is appended."""
    from pcgkit.report.compat import build_compat
    from pcgkit.report.history import append_history

    append_history(tmp_path, build_compat([], created="2026-01-01T00:00:00+00:00"))
    append_history(tmp_path, build_compat([], created="2026-01-02T00:00:00+00:00"))
    append_history(tmp_path, build_compat([], created="2026-01-01T00:00:00+00:00"))
    created = [json.loads(line)["created"] for line in (tmp_path / HISTORY_FILE).read_text().splitlines()]
    assert created == ["2026-01-02T00:00:00+00:00", "2026-01-01T00:00:00+00:00"]


def test_sglang_facts_row_gives_one_piecewise_state_per_release():
    """A cell that could not read the default (`unknown`) shows the state its release's wheel reads, said so; a cell
    whose read disagrees with the wheel shows both; compat.md's 0.5.14 row (in compat-cells.md when compat.md moves the
    facts out to stay within its budget) no longer says 'unknown'."""
    from pcgkit.report.sglang_section import piecewise_state

    wheel = {"0.5.14": "on-by-default"}
    assert piecewise_state({"default_state": "unknown"}, "0.5.14", wheel).startswith("on-by-default (read from the release wheel")
    assert piecewise_state({"default_state": "opt-in"}, "0.5.14", wheel) == "opt-in (the release wheel reads on-by-default)"
    assert piecewise_state({"default_state": "unknown"}, "0.5.99", wheel) == "unknown"
    sample = resources.fixtures_dir().parent / "reports" / "samples" / "matrix-2026-12-01"
    compat = "".join((sample / name).read_text() for name in ("compat.md", "compat-cells.md"))  # the facts may move out
    row = next(line for line in compat.splitlines() if line.startswith("| `sglang-0.5.14` | 0.5.14 | ") and "--" in line)
    assert "| unknown |" not in row and "on-by-default" in row


def test_workaround_summary_counts_only_fixes_whose_call_path_ran():
    """compat.md's 'works in N cells' counts a `fixed` only when its reason says the call path ran; a `fixed` from
    before the run rule is named as traced, not shown to run."""
    import types

    from pcgkit.report.markdown import _fix_summary

    def cell(reason: str, works: str = "yes"):
        return types.SimpleNamespace(entries={"fix-x": types.SimpleNamespace(fix_works=works, reason=reason)})

    report = types.SimpleNamespace(cells=[cell("traced cleanly; call path ran (argument audit)"), cell("traced cleanly"),
                                          cell("traced, but the call path fails when run", "no")])
    assert _fix_summary(report, "fix-x") == ("works in 1 of 3 cells that judged it (call path ran); 1 more traced, "
                                             "measured before the kit ran call paths, so not shown to run")
