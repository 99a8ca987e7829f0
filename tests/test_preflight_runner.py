"""Preflight follows the runner the release's own code builds (issue 44): SGLang's breakable CUDA graph runner uses
no torch.compile, so a launch that builds it never "will crash" in this bug, and 0.5.11's one-request limit is said.

The recorded document is what `python -m pcgkit.preflight.probe` wrote in sglang 0.5.11's own release environment
(tests/data/preflight/PROVENANCE.md); the per-release flags and runner facts are the table read from each wheel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pcgkit import resources
from pcgkit.commands.preflight import ANSWER_EXIT, failure_modes, render
from pcgkit.errors import ExitCode
from pcgkit.preflight.answer import Answer, decide
from pcgkit.preflight.resolve import BREAKABLE, TORCH_COMPILE, piecewise_state
from pcgkit.sglang.releases import parse_table

DATA = Path(__file__).parent / "data"
RECORDED_0511 = "probe-sglang-0.5.11-nvfp4-default-sm120.json"  # real probe: NVFP4, default launch -> mode1
TABLE = {r.sglang: r for r in parse_table(json.loads(resources.fixture("sglang_releases.json").read_text()))}
TABLE_SOURCE = "the kit's table of release wheels"


def _facts(release: str) -> tuple[dict, dict]:
    row = TABLE[release]
    assert row.runners is not None
    return row.flags.to_dict(), row.runners.to_dict()


def _recorded() -> dict:
    return json.loads((DATA / "preflight" / RECORDED_0511).read_text())


def _relaunched(doc: dict, **parsed) -> dict:
    """The recorded 0.5.11 document with its piecewise state decided again for other launch flags."""
    state = piecewise_state(doc["piecewise_flags"], {**doc["parsed"], **parsed}, None, doc["runners"],
                            "the installed sglang 0.5.11's own code")
    return {**doc, "piecewise": state.to_dict()}


def test_the_recorded_0_5_11_default_launch_still_will_crash():
    """sglang 0.5.11 + NVFP4, default flags (piecewise on by default, torch.compile runner): will crash, mode1, exit 10."""
    doc = _recorded()
    assert doc["piecewise"]["runner"] == TORCH_COMPILE and "model_runner.py:" in doc["piecewise"]["runner_source"]
    result = decide(doc, failure_modes())
    assert (result.answer, result.mode) == (Answer.WILL_CRASH, "mode1")
    assert decide(_relaunched(doc), failure_modes()).answer is Answer.WILL_CRASH  # re-deciding changes nothing


def test_0_5_11_breakable_switch_will_not_hit_the_bug_and_says_multi_request_prefills_run_eagerly():
    """0.5.11 --enable-breakable-cuda-graph: ok (exit 0) although the dense trace fails, the reason says the breakable
    runner uses no torch.compile and that prefills of more than one request run eagerly; no switch advice printed."""
    result = decide(_relaunched(_recorded(), enable_breakable_cuda_graph=True), failure_modes())
    assert result.answer is Answer.OK and ANSWER_EXIT[result.answer] == ExitCode.SUCCESS
    assert "will not hit this bug" in result.reason and "no torch.compile" in result.reason
    assert "more than one request run eagerly" in result.reason and "breakable_cuda_graph_runner.py:317" in result.reason
    text = render(result)
    assert "WILL CRASH" not in text and "to launch without piecewise capture" not in text


def test_0_5_11_disable_is_still_off_and_enforce_with_breakable_is_still_breakable():
    """--disable-piecewise-cuda-graph: off, no runner; --enforce-... with the switch: the breakable runner."""
    off = decide(_relaunched(_recorded(), disable_piecewise_cuda_graph=True), failure_modes())
    assert off.answer is Answer.OK and off.probe["piecewise"]["runner"] is None and "off" in off.reason
    forced = _relaunched(_recorded(), enforce_piecewise_cuda_graph=True, enable_breakable_cuda_graph=True)
    assert forced["piecewise"]["runner"] == BREAKABLE


def test_auto_disable_comes_before_the_runner_choice():
    """SGLang's start-up check turns piecewise off before init_piecewise_cuda_graphs picks a runner: off, no runner."""
    flags, runners = _facts("0.5.11")
    state = piecewise_state(flags, {"enable_breakable_cuda_graph": True}, "ServerArgs._handle_piecewise_cuda_graph "
                            "sets disable_piecewise_cuda_graph", runners, "x")
    assert (state.on, state.runner) == (False, None) and "turns it off at start-up" in state.why


@pytest.mark.parametrize("release", ["0.5.12", "0.5.12.post1", "0.5.13", "0.5.13.post1"])
def test_later_switch_releases_are_breakable_without_the_one_request_limit(release):
    """0.5.12-0.5.13.post1: the same switch builds the breakable runner; their can_run takes many requests."""
    flags, runners = _facts(release)
    state = piecewise_state(flags, {"enable_breakable_cuda_graph": True}, None, runners, TABLE_SOURCE)
    assert (state.on, state.runner, state.limit) == (False, BREAKABLE, "")
    assert piecewise_state(flags, {}, None, runners, TABLE_SOURCE).runner == TORCH_COMPILE


class _BackendEnum:  # what 0.5.14's deprecated alias stores (SGLang's Backend enum member)
    value = "breakable"


@pytest.mark.parametrize("parsed, resolved, runner, on", [
    ({"cuda_graph_backend_prefill": "breakable"}, None, BREAKABLE, False),
    ({"cuda_graph_backend_prefill": _BackendEnum()}, None, BREAKABLE, False),  # --enable-breakable-cuda-graph alias
    ({}, "breakable", BREAKABLE, False),
    ({}, None, TORCH_COMPILE, True),  # 0.5.14's default prefill backend is tc_piecewise
    ({}, "tc_piecewise", TORCH_COMPILE, True),
    ({"cuda_graph_backend_prefill": "tc_piecewise"}, "disabled", None, False),  # the release's resolution wins
])
def test_0_5_14_follows_the_prefill_backend(parsed, resolved, runner, on):
    """0.5.14: the prefill backend (as parsed, or as the release's own _handle_cuda_graph_config resolved it)."""
    flags, runners = _facts("0.5.14")
    state = piecewise_state(flags, parsed, None, runners, TABLE_SOURCE, resolved)
    assert (state.runner, state.on, state.limit) == (runner, on, "")


def test_0_5_15_default_is_the_breakable_runner():
    """0.5.15+: no backend given, the CUDA default (read from the wheel) is breakable: ok, not "off"."""
    flags, runners = _facts("0.5.15")
    state = piecewise_state(flags, {}, None, runners, TABLE_SOURCE)
    assert state.runner == BREAKABLE and "default is breakable" in state.why


@pytest.mark.parametrize("runners", [None, {"selector": None, "one_request_at": "no breakable runner"}])
def test_a_breakable_launch_with_no_runner_facts_is_unknown_never_a_crash(runners):
    """Runner facts not read, or no selection found in the code read: a launch naming the breakable runner is
    `unknown` with the refresher named, never the torch.compile runner's crash."""
    doc = _recorded()
    state = piecewise_state(doc["piecewise_flags"], {**doc["parsed"], "enable_breakable_cuda_graph": True}, None,
                            runners, "the installed sglang 0.5.11's own code")
    result = decide({**doc, "piecewise": state.to_dict()}, failure_modes())
    assert result.answer is Answer.UNKNOWN and "read-releases" in result.reason


def test_the_probe_reads_the_installed_release_and_falls_back_to_the_table(tmp_path):
    """installed_runner_facts: the installed files when they are there (said so), else the wheel's table (said so)."""
    from pcgkit.preflight.probe import installed_runner_facts

    source = DATA / "sglang_source" / "0.5.11"
    executor = tmp_path / "sglang" / "srt" / "model_executor"
    executor.mkdir(parents=True)
    (executor / "model_runner.py").write_text((source / "model_runner_piecewise.py.txt").read_text())
    (executor / "breakable_cuda_graph_runner.py").write_text((source / "breakable_can_run.py.txt").read_text())
    facts, where = installed_runner_facts(tmp_path / "sglang", "0.5.11")
    assert facts and facts["one_request_only"] is True and where.startswith("the installed sglang 0.5.11's own code")
    facts, where = installed_runner_facts(tmp_path / "nothing", "0.5.11")
    assert facts == TABLE["0.5.11"].runners.to_dict() and TABLE_SOURCE in where and TABLE["0.5.11"].wheel in where
