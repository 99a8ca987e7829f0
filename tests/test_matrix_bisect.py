"""Bisection along one axis, with a fake evaluator: O(log N) evaluations, errors stepped around."""

from __future__ import annotations

import math

import pytest

from pcgkit.matrix.bisect import bisect, versions_between

VERSIONS = [f"0.{i}" for i in range(33)]


def counting(verdict_of):
    calls = []

    def evaluate(version):
        calls.append(version)
        return verdict_of(version)

    return evaluate, calls


def first_fixed_at(index):
    return lambda v: "fixed" if VERSIONS.index(v) >= index else "reproduced"


@pytest.mark.parametrize("boundary", [1, 2, 16, 31, 32])
def test_finds_the_first_changed_version_in_log_n_evaluations(boundary):
    """The boundary is exact wherever it lies, with at most ceil(log2 N) + 2 evaluations."""
    evaluate, calls = counting(first_fixed_at(boundary))
    result = bisect(VERSIONS, evaluate)
    assert (result.before.version, result.after.version) == (VERSIONS[boundary - 1], VERSIONS[boundary])
    assert (result.before.verdict, result.after.verdict) == ("reproduced", "fixed")
    assert len(calls) == len(set(calls)) <= math.ceil(math.log2(len(VERSIONS))) + 2


def test_error_cells_are_stepped_around():
    """A version whose cell errors (None) is skipped; the boundary is still found exactly."""
    verdict = first_fixed_at(20)
    evaluate, calls = counting(lambda v: None if v in ("0.16", "0.17", "0.0") else verdict(v))
    result = bisect(VERSIONS, evaluate)
    assert (result.before.version, result.after.version) == ("0.19", "0.20")
    assert "0.0" in calls and result.probes[0].verdict is None


def test_boundary_between_errors_is_reported_as_a_gap():
    """When every version between two verdicts errors, the result names the gap instead of guessing."""
    verdict = first_fixed_at(10)
    result = bisect(VERSIONS, lambda v: None if v in ("0.8", "0.9", "0.10") else verdict(v))
    assert (result.before.version, result.after.version) == ("0.7", "0.11")
    assert "0.8, 0.9, 0.10" in result.message


def test_no_change_between_endpoints_is_not_a_boundary():
    """Equal verdicts at both ends: nothing found, and only the endpoints were evaluated."""
    evaluate, calls = counting(lambda v: "reproduced")
    result = bisect(VERSIONS, evaluate)
    assert not result.found and "no change" in result.message
    assert calls == ["0.0", "0.32"]


def test_all_errors_is_not_a_boundary():
    """Every cell broke: no verdict, no boundary, a message that says so."""
    result = bisect(VERSIONS[:3], lambda v: None)
    assert not result.found and "every cell errored" in result.message


def test_versions_between_uses_known_order_and_rejects_unknown():
    """The axis is the known releases between the two, inclusive; an unknown version is an error."""
    assert versions_between(["0.5.3", "0.6.0", "0.6.1", "0.7.0"], "0.6.0", "0.7.0") == ["0.6.0", "0.6.1", "0.7.0"]
    with pytest.raises(ValueError, match="not a known release: 9.9"):
        versions_between(["0.5.3"], "0.5.3", "9.9")


def test_bisect_command_holds_other_pins_and_reuses_planned_cells(monkeypatch, capsys, tmp_path):
    """`pcgkit bisect` varies only flashinfer, reuses the planned fi-0.5.3 cell, and prints the boundary."""
    import argparse

    from packaging.version import Version

    from pcgkit.commands import matrix as cli
    from pcgkit.matrix.cells import Cell
    from pcgkit.matrix.outcome import RAN, CellOutcome
    from pcgkit.values.verdict import Verdict
    from pcgkit.verdicts.modes import MODES
    from pcgkit.verdicts.result import CaseResult

    seen: list[Cell] = []

    def fake_run_matrix(cells, config, jobs=None, force=False, run=None):
        cell = cells[0]
        seen.append(cell)
        verdict = Verdict.FIXED if Version(cell.flashinfer) >= Version("0.6.5") else Verdict.REPRODUCED
        results = tuple(CaseResult(m, "sim-sm120", verdict, "r", {"label": "sim", "simulated": True}, {}, 0.1)
                        for m in MODES)
        return [CellOutcome(cell, RAN, 1.0, results=results)]

    monkeypatch.setattr(cli, "run_matrix", fake_run_matrix)
    args = argparse.Namespace(
        matrix=str(cli.DEFAULT_MATRIX_FILE), pins=str(cli.pins_mod.DEFAULT_PINS_FILE), reports=str(tmp_path),
        envs=str(tmp_path / "envs"), timeout=60.0, force=False, mode="mode1", axis="flashinfer-python",
        first="0.5.3", last="0.7.4", base="seed", cell=None, on="verdict", every=False, jobs=1,
    )
    assert cli._cmd_bisect(args) == 0
    out = capsys.readouterr().out
    assert "0.6.4 is the last reproduced; 0.6.5 is the first fixed" in out
    assert {(c.torch, c.sglang) for c in seen} == {("2.9.1", "0.5.8")}
    # the seed's flashinfer-cubin==0.6.1 follows flashinfer: never pinned beside another release
    assert all(c.companions == () for c in seen if c.flashinfer != "0.6.1"), [c.companions for c in seen]
    assert "fi-0.5.3" not in {c.id for c in seen}  # the seed's sglang makes it a different install
    assert len(seen) <= 8


def test_bisect_key_on_frame_ignores_line_numbers_but_not_the_function():
    """'frame' keys on verdict + file:function: a moved line is no change, a new function is one."""
    from pcgkit.commands.matrix import bisect_key

    core = {"verdict": "reproduced", "innermost_frame": "flashinfer/jit/core.py:259:is_aot"}
    core_moved = {"verdict": "reproduced", "innermost_frame": "flashinfer/jit/core.py:261:is_aot"}
    env = {"verdict": "reproduced", "innermost_frame": "flashinfer/jit/env.py:299:get_aot_artifacts"}
    assert bisect_key(core, "frame") == bisect_key(core_moved, "frame") == "reproduced at flashinfer/jit/core.py:is_aot"
    assert bisect_key(env, "frame") != bisect_key(core, "frame")
    assert bisect_key(env, "verdict") == "reproduced"
    assert bisect_key({"verdict": "error"}, "frame") is None
    assert bisect_key({"verdict": "reproduced", "innermost_frame": None}, "frame") == "reproduced at no FlashInfer frame"


def test_first_change_skips_cells_without_a_verdict():
    """The exhaustive boundary: first key unlike the first usable one; None when nothing changes."""
    from pcgkit.commands.matrix import first_change

    assert first_change([None, "a", None, "a", "b", "a"]) == 4
    assert first_change(["a", "a"]) is None and first_change([None, None]) is None


def test_bisect_every_agrees_with_bisection_on_one_change(monkeypatch, capsys, tmp_path):
    """--every evaluates all 19 versions 0.6.12..0.7.4 and finds bisection's boundary, with fewer probes."""
    import argparse

    from packaging.version import Version

    from pcgkit.commands import matrix as cli
    from pcgkit.matrix.outcome import RAN, CellOutcome
    from pcgkit.values.signature import Frame, Signature
    from pcgkit.values.verdict import Verdict
    from pcgkit.verdicts.modes import MODES
    from pcgkit.verdicts.result import CaseResult

    evaluated: list[str] = []

    def fake_run_matrix(cells, config, jobs=None, force=False, show_progress=True, run=None):
        out = []
        for cell in cells:
            evaluated.append(cell.flashinfer)
            where = ("jit/env.py", "get_aot_artifacts") if Version(cell.flashinfer) >= Version("0.7.0") else (
                "jit/core.py", "is_aot")
            sig = Signature("torch._dynamo.exc.Unsupported", "m", "gb0007",
                            innermost_library_frame=Frame(f"flashinfer/{where[0]}", 250, where[1]))
            results = tuple(CaseResult(m, "sim-sm120", Verdict.REPRODUCED, "r", {"label": "sim", "simulated": True},
                                       {}, 0.1, signature=sig) for m in MODES)
            out.append(CellOutcome(cell, RAN, 1.0, results=results))
        return out

    monkeypatch.setattr(cli, "run_matrix", fake_run_matrix)
    args = argparse.Namespace(
        matrix=str(cli.DEFAULT_MATRIX_FILE), pins=str(cli.pins_mod.DEFAULT_PINS_FILE), reports=str(tmp_path),
        envs=str(tmp_path / "envs"), timeout=60.0, force=False, mode="mode2", axis="flashinfer-python",
        first="0.6.12", last="0.7.4", base="fi-0.7.0", cell=None, on="frame", every=True, jobs=2,
    )
    assert cli._cmd_bisect(args) == 0
    out = capsys.readouterr().out
    assert "0.6.18.post1 is the last reproduced at flashinfer/jit/core.py:is_aot" in out
    assert "first change, every version: 0.7.0; bisection: 0.7.0 -> same boundary" in out
    import re

    probes, total = map(int, re.search(r"\((\d+) of (\d+) versions evaluated\)", out).groups())
    assert total == 19 and probes <= 7 and len(evaluated) == probes + total
