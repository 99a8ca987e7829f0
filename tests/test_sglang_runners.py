"""Which runner each SGLang release's piecewise/prefill capture builds (pcgkit.sglang.runners), read from the
release's own code: the reader on excerpts of the wheels (tests/data/sglang_source, each file names its wheel and
lines), and the table `bin/pcgkit lab read-releases` wrote from the whole wheels (fixtures/sglang_releases.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pcgkit import resources
from pcgkit.sglang.releases import parse_table, runner_facts
from pcgkit.sglang.runners import PREFILL_BACKEND, SWITCH, runner_facts_from_texts

SOURCES = Path(__file__).resolve().parent / "data" / "sglang_source"
EXECUTOR = "sglang/srt/model_executor/"
TABLE = parse_table(json.loads(resources.fixture("sglang_releases.json").read_text()))


def _texts(release: str, **files: str) -> dict[str, str]:
    return {f"{EXECUTOR}{path}": (SOURCES / release / name).read_text() for path, name in files.items()}


def test_0_5_11_swaps_the_runner_inside_piecewise_capture_and_refuses_many_requests():
    """0.5.11: `if self.server_args.enable_breakable_cuda_graph` builds BreakableCudaGraphRunner; its can_run
    refuses batch_size > 1 (the eager extend path serves those prefills)."""
    facts = runner_facts_from_texts(_texts("0.5.11", **{"model_runner.py": "model_runner_piecewise.py.txt",
                                                         "breakable_cuda_graph_runner.py": "breakable_can_run.py.txt"}))
    assert (facts.selector, facts.switch_field) == (SWITCH, "enable_breakable_cuda_graph")
    assert facts.selected_at.startswith(f"{EXECUTOR}model_runner.py:")
    assert facts.one_request_only is True and "breakable_cuda_graph_runner.py:" in facts.one_request_at


def test_0_5_13_post1_breakable_runner_takes_many_requests():
    """0.5.13.post1's BreakableCudaGraphRunner.can_run has no batch_size > 1 refusal (the table says where it looked)."""
    facts = runner_facts_from_texts(_texts("0.5.13.post1", **{"breakable_cuda_graph_runner.py": "breakable_can_run.py.txt"}))
    assert facts.one_request_only is None  # no selection in these files: nothing claimed about a runner
    with_selection = runner_facts_from_texts({**_texts("0.5.11", **{"model_runner.py": "model_runner_piecewise.py.txt"}),
                                              **_texts("0.5.13.post1", **{"breakable_cuda_graph_runner.py":
                                                                          "breakable_can_run.py.txt"})})
    assert with_selection.one_request_only is False and "BreakableCudaGraphRunner.can_run" in with_selection.one_request_at


def test_0_5_14_picks_the_prefill_backend_not_the_decode_one():
    """0.5.14's runner_backend/utils.py builds BreakableCudaGraphBackend in both resolvers; the prefill one decides."""
    facts = runner_facts_from_texts({**_texts("0.5.14", **{"runner_backend/utils.py": "runner_backend_utils.py.txt",
                                                            "cuda_graph_config.py": "cuda_graph_config.py.txt"})})
    assert facts.selector == PREFILL_BACKEND and "Backend.BREAKABLE" in facts.breakable_when
    lines = (SOURCES / "0.5.14" / "runner_backend_utils.py.txt").read_text().splitlines()
    line = int(facts.selected_at.rsplit(":", 1)[1])
    assert "def resolve_prefill_backend" in "\n".join(lines[line - 15:line])
    assert facts.prefill_default == "tc_piecewise" and facts.prefill_backends == ("breakable", "tc_piecewise", "disabled")


@pytest.mark.parametrize("release, selector, one_request, default, tc_allowed", [
    ("0.5.10.post1", None, None, None, None),  # before the breakable runner
    ("0.5.11", SWITCH, True, None, None),
    ("0.5.12", SWITCH, False, None, None),
    ("0.5.13.post1", SWITCH, False, None, None),
    ("0.5.14", PREFILL_BACKEND, False, "tc_piecewise", True),
    ("0.5.15", PREFILL_BACKEND, False, "breakable", True),
    ("0.5.22", PREFILL_BACKEND, False, "breakable", False),  # tc_piecewise no longer a prefill backend
])
def test_the_table_read_from_the_wheels(release, selector, one_request, default, tc_allowed):
    """The committed table, read from each whole wheel, says where each generation changes, with file:line."""
    facts, source = runner_facts(TABLE, release)
    assert facts is not None and release in source and "read 20" in source
    assert (facts.selector, facts.one_request_only, facts.prefill_default) == (selector, one_request, default)
    if tc_allowed is not None:
        assert ("tc_piecewise" in facts.prefill_backends) is tc_allowed
    if selector:
        assert facts.selected_at and facts.selected_at.split(":")[-1].isdigit()


def test_every_release_in_the_table_has_runner_facts():
    """No release row lacks them (a row without would leave preflight with nothing to say without an environment)."""
    assert all(row.runners is not None for row in TABLE)
    assert runner_facts(TABLE, "0.4.0")[0] is None and "not in fixtures" in runner_facts(TABLE, "0.4.0")[1]
