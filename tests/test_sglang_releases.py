"""The per-release switch table (fixtures/sglang_releases.json): a row for every SGLang release in the matrix
range, read from each release's own wheel, and in agreement with the releases whose parser the kit ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomllib

from lab.sglang_facts import flags_from_validation
from lab.sglang_releases import release_facts_from_texts
from pcgkit import resources
from pcgkit.advice import load_evidence
from pcgkit.sglang import facts
from pcgkit.sglang.releases import parse_table

SOURCES = Path(__file__).resolve().parent / "data" / "sglang_source"  # excerpts of the release wheels


def _table():
    return {r.sglang: r for r in parse_table(json.loads(resources.fixture("sglang_releases.json").read_text()))}


def test_a_row_for_every_release_in_range():
    """Every release the matrix range holds (its wheel ships piecewise graphs) has a row; no row is outside it."""
    requires = tomllib.loads(resources.fixture("sglang_requires.toml").read_text())
    in_range = [r["version"] for r in requires["release"] if r.get("piecewise_cuda_graph")]
    assert list(_table()) == in_range and len(in_range) > 30


def test_table_agrees_with_each_releases_own_parser():
    """For every release whose parser the kit ran (lab validate-launch, argparse), the wheel read gives the same switch."""
    validated = flags_from_validation(json.loads(resources.fixture("sglang_launch_validation.json").read_text()))
    table = _table()
    assert len(validated) >= 10
    for parsed in validated:
        read = table[parsed.sglang].flags
        assert (read.default_state, read.enable, read.disable) == (parsed.default_state, parsed.enable, parsed.disable), parsed.sglang
        assert facts.switch_wording(read) == facts.switch_wording(parsed), parsed.sglang


@pytest.mark.parametrize("release, state, turn_off", [
    ("0.5.9", facts.OPT_IN, "do not pass `--enable-piecewise-cuda-graph`"),
    ("0.5.10", facts.ON_BY_DEFAULT, "pass `--disable-piecewise-cuda-graph`"),  # the first release with it on by default
    ("0.5.14", facts.ON_BY_DEFAULT, "pass `--cuda-graph-backend-prefill=disabled`"),  # tc_piecewise default
    ("0.5.15", facts.OPT_IN, "do not pass `--cuda-graph-backend-prefill=tc_piecewise`"),  # breakable default
    ("0.5.22", facts.NOT_SHIPPED, "nothing to turn off"),  # tc_piecewise removed
])
def test_the_releases_where_the_switch_changes(release, state, turn_off):
    """The releases where the default or the flag changed read as upstream shipped them."""
    flags = _table()[release].flags
    assert flags.default_state == state and turn_off in facts.switch_wording(flags)[1]


def test_0_5_14_default_is_read_from_its_config_dataclass():
    """0.5.14 declares the prefill backend default in CudaGraphConfig (not default_prefill_backend): tc_piecewise."""
    text = (SOURCES / "0.5.14" / "cuda_graph_config.py.txt").read_text()
    assert facts.prefill_default_from_source(text) == "tc_piecewise"
    assert facts.prefill_default_from_source((SOURCES / "0.5.16" / "cuda_graph_config.py.txt").read_text()) == "breakable"


def test_own_fp4_op_is_found_in_0_5_12_and_not_in_0_5_10():
    """SGLang's own registered fp4 op is detected in 0.5.12's fp4_utils.py and absent from 0.5.10.post1's files."""
    new = {"sglang/srt/layers/quantization/fp4_utils.py": (SOURCES / "0.5.12" / "fp4_utils.py.txt").read_text()}
    old = {"sglang/srt/layers/quantization/fp4_utils.py": (SOURCES / "0.5.10.post1" / "fp4_utils.py.txt").read_text()}
    assert release_facts_from_texts("0.5.12", new, "w", "2026-12-01").registers_own_fp4_op
    assert not release_facts_from_texts("0.5.10.post1", old, "w", "2026-12-01").registers_own_fp4_op


def test_no_release_calls_flashinfers_op_and_own_op_starts_at_0_5_12():
    """Read from every wheel: no SGLang release calls torch.ops.flashinfer.fp4_quantize; its own op appears in 0.5.12."""
    table = _table()
    assert all(not r.calls_flashinfer_fp4_op for r in table.values())
    first_own = next(v for v, r in table.items() if r.registers_own_fp4_op)
    assert first_own == "0.5.12"


def test_table_rows_are_dated_and_name_their_wheel():
    """Each row names the wheel it was read from and the date of the read."""
    for release in load_evidence().releases:
        assert release.wheel.startswith(f"sglang-{release.sglang}-") and len(release.read_on) == 10


def test_broken_table_is_a_value_error():
    """A table with the wrong schema or a malformed row is refused with the file named."""
    with pytest.raises(ValueError, match="t.json"):
        parse_table({"schema": "x"}, "t.json")
    with pytest.raises(ValueError, match="malformed"):
        parse_table({"schema": "pcgkit.sglang-releases/1", "releases": [{"sglang": "1"}]}, "t.json")


def test_pip_is_this_interpreters_or_the_one_on_path():
    """Wheels are downloaded with this interpreter's pip, else the pip on PATH (uv venvs have none), else not at all."""
    from lab.sglang_releases import download_argv, pip_command

    assert pip_command("/v/python", True, "/usr/bin/pip3") == ["/v/python", "-m", "pip"]
    assert pip_command("/v/python", False, "/usr/bin/pip3") == ["/usr/bin/pip3"]
    assert pip_command("/v/python", False, None) is None
    argv = download_argv(["pip"], "0.5.14", Path("/c"))
    assert argv[:4] == ["pip", "download", "--no-deps", "sglang==0.5.14"] and "manylinux_2_34_x86_64" in argv


def test_breakable_switch_is_read_from_the_wheel_text():
    """0.5.11's parser text (a verbatim wheel excerpt) has `--enable-breakable-cuda-graph`; 0.5.10.post1's has none;
    a backend choice list with `breakable` gives the backend spelling."""
    with_switch = (SOURCES / "0.5.11" / "server_args_breakable.txt").read_text()
    without = (SOURCES / "0.5.10.post1" / "server_args.txt").read_text()
    assert facts.flags_from_source({"server_args.py": with_switch}, "0.5.11", None).breakable == facts.BREAKABLE_SWITCH
    assert facts.flags_from_source({"server_args.py": without}, "0.5.10.post1", None).breakable is None
    backend = (SOURCES / "0.5.16" / "server_args.txt").read_text()
    assert facts.flags_from_source({"server_args.py": backend}, "0.5.16", "breakable").breakable == \
        "--cuda-graph-backend-prefill=breakable"


def test_breakable_offered_first_exactly_where_the_release_has_it_and_needs_it():
    """The answer offers the breakable runner first only where torch.compile piecewise is on by default, the wheel has a
    breakable switch and the release is not measured fixed: on SM120 only 0.5.11 (0.5.12+ measured not affected);
    with the architecture unknown, `--enable-breakable-cuda-graph` on 0.5.11-0.5.13.post1 and the backend choice on
    0.5.14; never on 0.5.10 (no switch) nor where piecewise is opt-in or gone; always said not run on SM120/NVFP4."""
    from pcgkit.advice import Versions, advise

    evidence = load_evidence()
    for arch, expected in (("sm120", ["0.5.11"]),
                           (None, ["0.5.11", "0.5.12", "0.5.12.post1", "0.5.13", "0.5.13.post1", "0.5.14"])):
        offered = {}
        for release in evidence.releases:
            answer = advise(Versions(sglang=release.sglang), arch, evidence)
            if answer.first_try:
                offered[release.sglang] = answer.first_try
                assert f"First try `{answer.first_try}`" in answer.switch.text
                assert "has not run it on SM120 or with NVFP4" in answer.switch.text
        assert sorted(offered) == expected, arch
    assert offered["0.5.14"] == "--cuda-graph-backend-prefill=breakable"
    assert all(offered[r] == "--enable-breakable-cuda-graph" for r in offered if r != "0.5.14")
