"""The advice model (pcgkit.advice): answers derived from measured cells, dated reads and each release's parser."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pcgkit.advice import Versions, advise, arch_family, load_evidence
from pcgkit.advice.load import device_arch, parse_cost, parse_reads, parse_snapshot
from pcgkit.advice.values import AFFECTED, NOT_AFFECTED, UNKNOWN, Evidence, Measurement, Source, Statement
from pcgkit.errors import UsageError
from pcgkit.sglang.facts import NOT_SHIPPED, ON_BY_DEFAULT, PiecewiseFlags
from pcgkit.sglang.releases import ReleaseFacts

SM120_CASE = "sglang-compile-sm120"


def _m(cell: str, sglang: str | None, flashinfer: str, verdict: str, case: str = SM120_CASE,
       arch: str = "sm120", simulated: bool = True, ran: bool | None = None) -> Measurement:
    """A measurement; a `fixed` one ran its call path unless `ran=False` (a `fixed` from before the run rule)."""
    return Measurement(cell, case, verdict, arch, simulated, Versions(sglang, flashinfer, "2.11.0"), "2026-11-29", "snap",
                       verdict == "fixed" if ran is None else ran)


def _release(version: str, state: str = ON_BY_DEFAULT, own_op: bool = False) -> ReleaseFacts:
    flags = PiecewiseFlags(version, state, None if state == ON_BY_DEFAULT else "--enable-piecewise-cuda-graph",
                           "--disable-piecewise-cuda-graph" if state == ON_BY_DEFAULT else None, None, (), "wheel text")
    return ReleaseFacts(version, flags, own_op, (), f"sglang-{version}.whl", "2026-12-01")


EVIDENCE = Evidence(
    measurements=(
        _m("s-0.5.10", "0.5.10", "0.6.7", "reproduced"),
        _m("s-0.5.11", "0.5.11", "0.6.8", "reproduced"),
        _m("s-0.5.12", "0.5.12", "0.6.11", "fixed"),
        _m("s-0.5.16", "0.5.16", "0.6.14", "fixed"),
        _m("fi-0.6.12", None, "0.6.12", "reproduced", case="mode1"),
        _m("fi-0.6.12", None, "0.6.12", "fixed", case="fix-upstream-op"),
        _m("fi-0.6.3", None, "0.6.3", "reproduced", case="mode1"),
        _m("fi-0.6.3", None, "0.6.3", "not-applicable", case="fix-upstream-op"),
    ),
    releases=tuple(_release(v, own_op=v >= "0.5.12") for v in ("0.5.10", "0.5.11", "0.5.12", "0.5.13", "0.5.16")),
    releases_source="fixtures/sglang_releases.json",
)


def test_sglang_user_upgrades_sglang_not_flashinfer():
    """An SGLang 0.5.10 user is told to upgrade SGLang to the first measured-fixed release, with its cell, and why FlashInfer alone does not help."""
    answer = advise(Versions(sglang="0.5.10", flashinfer="0.6.7"), "sm120", EVIDENCE)
    assert answer.state == AFFECTED and answer.case == SM120_CASE
    assert "Upgrade SGLang to 0.5.12" in answer.upgrade.text
    assert "s-0.5.12" in answer.upgrade.sources[0].ref and answer.upgrade.simulated
    assert "upgrading FlashInfer alone does not help" in answer.safe_call.text
    assert "0.5.13" in answer.upgrade.text and "not measured in that range" in answer.upgrade.text


def test_unmeasured_release_is_unknown_with_neighbours():
    """A release never run as itself is 'unknown', naming the measured releases on either side; never folded into a range."""
    answer = advise(Versions(sglang="0.5.13"), "sm120", EVIDENCE)
    assert answer.state == UNKNOWN
    assert "0.5.12 fixed" in answer.affected.text and "0.5.16 fixed" in answer.affected.text


def test_fixed_release_gets_no_upgrade():
    """A release measured fixed is not affected and is offered no upgrade."""
    answer = advise(Versions(sglang="0.5.12"), "sm_120", EVIDENCE)
    assert answer.state == NOT_AFFECTED and answer.upgrade is None and answer.cost is None


def test_switch_is_read_for_the_users_own_release():
    """The switch statement names the user's release and the flag its own parser offers, and cites that read."""
    answer = advise(Versions(sglang="0.5.11"), "sm120", EVIDENCE)
    assert "SGLang 0.5.11" in answer.switch.text and "--disable-piecewise-cuda-graph" in answer.switch.text
    assert answer.switch.sources[0].kind == "parser" and "sglang 0.5.11" in answer.switch.sources[0].ref


def test_release_outside_the_table_says_not_read():
    """A release the table does not hold gets no invented switch, and the input check names the table it would come from."""
    from pcgkit.advice import UnknownInput, check_input

    answer = advise(Versions(sglang="0.6.0"), "sm120", EVIDENCE)
    assert answer.switch is None and answer.first_try is None and answer.turn_off is None
    with pytest.raises(UnknownInput, match="fixtures/sglang_releases.json"):
        check_input(EVIDENCE, Versions(sglang="0.6.0"))


def test_not_shipped_release_has_nothing_to_turn_off():
    """A release without a torch.compile piecewise backend says so, and carries no cost statement."""
    evidence = Evidence(EVIDENCE.measurements, releases=(_release("0.5.22", NOT_SHIPPED),), releases_source="t")
    answer = advise(Versions(sglang="0.5.22"), "sm120", evidence)
    assert "no torch.compile piecewise backend" in answer.switch.text and answer.cost is None
    assert answer.turn_off is None and answer.first_try is None


def test_flashinfer_user_must_switch_to_the_op():
    """A direct FlashInfer caller learns that no release makes the public API traceable and that the op traces from 0.6.12."""
    answer = advise(Versions(flashinfer="0.6.3"), "sm120", EVIDENCE)
    assert answer.case == "mode1" and answer.state == AFFECTED
    assert "No measured FlashInfer release makes the public" in answer.upgrade.text
    assert "is fixed in FlashInfer 0.6.12, measured" in answer.upgrade.text and "callers must switch" in answer.upgrade.text


def test_cost_is_not_measured_until_the_file_exists():
    """Without the measurement file nothing states a cost (no figure of upstream's is offered as the kit's)."""
    from pcgkit.advice import cost_statement
    from pcgkit.advice.values import Quote

    evidence = Evidence(EVIDENCE.measurements, releases=EVIDENCE.releases, releases_source="t",
                        cost_quotes=(Quote("a figure", "https://example.org/pr/1", "prefill/extend", "2026-12-01"),))
    answer = advise(Versions(sglang="0.5.11"), "sm120", evidence)
    assert answer.cost is None and cost_statement(evidence) is None


def test_measured_cost_replaces_quotes():
    """Once the cost file exists its worst figure, device, release and date are the statement, cited to the file."""
    doc = {"schema": "pcgkit.piecewise-cost/1", "device": "NVIDIA H200 (SM90)", "model": "m", "date": "2026-12-01T23:00Z",
           "versions": {"sglang": "0.5.12"}, "phases": {"prefill/extend": {"figures": [
               {"prompt_tokens": 128, "on": 10.0, "off": 12.0}]}, "decode": {"figures": []}}}
    table, breakable, _, _ = parse_cost(doc)
    evidence = dataclasses.replace(EVIDENCE, cost_table=table, breakable_table=breakable)
    answer = advise(Versions(sglang="0.5.11"), "sm120", evidence)
    assert "20 % slower with piecewise off" in answer.cost.text and "NVIDIA H200" in answer.cost.text
    assert answer.cost.sources[0].kind == "measurement" and answer.cost.sources[0].as_of == "2026-12-01"
    assert breakable is None  # no breakable figures in this file: no breakable table


def test_unknown_arch_answers_per_measured_arch():
    """Without an architecture, each measured architecture's verdict for that release is stated, none chosen."""
    evidence = Evidence(EVIDENCE.measurements + (_m("s-0.5.11", "0.5.11", "0.6.8", "fixed", "sglang-compile-sm90", "sm90"),),
                        releases=EVIDENCE.releases, releases_source="t")
    answer = advise(Versions(sglang="0.5.11"), None, evidence)
    assert answer.state == UNKNOWN and "on SM120: affected" in answer.affected.text
    assert "on SM90: not affected" in answer.affected.text and answer.upgrade is None


@pytest.mark.parametrize("text, family", [("sm120", "sm120"), ("sm_121", "sm120"), ("12.1", "sm120"), ("SM100a", "sm100"),
                                          ("9.0", "sm90"), ("sm90a", "sm90"), ("8.9", "sm89"), ("gpu", None), ("", None)])
def test_arch_family(text, family):
    """Architecture spellings from logs and env captures map to one family id."""
    assert arch_family(text) == family


def test_statement_needs_a_source():
    """A statement without a source cannot be built."""
    with pytest.raises(ValueError):
        Statement("fixed in 1.0", (), False)
    with pytest.raises(ValueError):
        Source("folklore", "x", "2026-01-01")


def test_device_arch():
    """Device labels of matrix cells name the arch family they speak for."""
    assert device_arch("simulated SM120 (no GPU; hardware queries answered as 12.0)") == "sm120"
    assert device_arch("NVIDIA H200") == "sm90" and device_arch("cpu") is None


def test_snapshot_parse_puts_the_sm90_case_on_sm90():
    """The non-SM120 SGLang case is attributed to SM90 even inside a simulated-SM120 cell."""
    data = {"schema": "pcgkit.matrix-snapshot/1", "matrix_created": "2026-11-29T11:46:01+00:00", "cells": [
        {"id": "c", "sglang": "0.5.11", "flashinfer-python": "0.6.8", "torch": "2.11.0", "simulated": True,
         "device": "simulated SM120", "verdicts": {"sglang-compile-sm90": "fixed", SM120_CASE: "reproduced"}}]}
    by_case = {m.case: m for m in parse_snapshot(data)}
    assert by_case["sglang-compile-sm90"].arch == "sm90" and by_case[SM120_CASE].arch == "sm120"
    assert by_case[SM120_CASE].as_of == "2026-11-29"


def test_reads_without_date_or_how_are_refused():
    """An upstream read with no ISO date, or no account of how it was read, is an error naming it."""
    row = {"id": "x-1", "project": "sglang", "kind": "issue", "number": 1, "url": "https://github.com/a/b/issues/1",
           "title": "t", "state": "open", "as_of": "yesterday", "how": "api"}
    with pytest.raises(ValueError, match="x-1"):
        parse_reads({"schema": "pcgkit.upstream-reads/1", "reads": [row]})
    with pytest.raises(ValueError, match="x-1"):
        parse_reads({"schema": "pcgkit.upstream-reads/1", "reads": [{**row, "as_of": "2026-12-01", "how": " "}]})


def test_broken_evidence_file_is_one_clear_error(tmp_path):
    """A damaged evidence file is a UsageError naming the file, not a traceback."""
    (tmp_path / "matrix_snapshot.json").write_text("{not json")
    with pytest.raises(UsageError, match="matrix_snapshot.json"):
        load_evidence(tmp_path)


# --- on the kit's own committed evidence ---------------------------------------------------------

def test_committed_evidence_sglang_0_5_10_is_not_fixed_by_flashinfer():
    """On the committed evidence an SGLang 0.5.10.post1 user with FlashInfer 0.6.12 is still affected and told to upgrade SGLang."""
    answer = advise(Versions(sglang="0.5.10.post1", flashinfer="0.6.12"), "sm120", load_evidence())
    assert answer.state == AFFECTED
    assert answer.upgrade.text.startswith("Upgrade SGLang to 0.5.12")
    assert "flashinfer-python" not in answer.upgrade.text.split(":")[0]
    assert answer.switch and "--disable-piecewise-cuda-graph" in answer.switch.text


def test_committed_evidence_every_statement_is_sourced_and_dated():
    """Every statement for every release in range carries at least one source with an ISO date."""
    evidence = load_evidence()
    for release in evidence.releases:
        for arch in ("sm120", "sm90", None):
            for statement in advise(Versions(sglang=release.sglang), arch, evidence).statements():
                assert statement.sources and all(len(s.as_of) == 10 and s.as_of[4] == "-" for s in statement.sources)


def test_to_dict_is_json_with_schema():
    """The answer serialises to JSON with the agreed schema id."""
    data = advise(Versions(sglang="0.5.11"), "sm120", load_evidence()).to_dict()
    assert data["schema"] == "pcgkit.advice/2" and json.loads(json.dumps(data)) == data


def test_advice_imports_without_torch_flashinfer_or_sglang():
    """The package and its loader import from a light install: no torch, FlashInfer or SGLang is loaded."""
    code = ("import sys; from pcgkit.advice import advise, load_evidence, Versions; "
            "advise(Versions(sglang='0.5.11'), 'sm120', load_evidence()); "
            "print(sorted(m for m in ('torch', 'flashinfer', 'sglang') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_read_releases_command_reads_cached_wheels(tmp_path):
    """`lab read-releases` reads each release's wheel from the cache (no download when present) into the table."""
    import zipfile

    from lab.cli import main as lab_main
    from pcgkit.sglang.releases import parse_table

    source = (Path(__file__).parent / "data" / "sglang_source" / "0.5.10.post1" / "server_args.txt").read_text()
    folder = tmp_path / "cache" / "0.5.10.post1"
    folder.mkdir(parents=True)
    with zipfile.ZipFile(folder / "sglang-0.5.10.post1-py3-none-any.whl", "w") as wheel:
        wheel.writestr("sglang/srt/server_args.py", source)
    out = tmp_path / "table.json"
    assert lab_main(["read-releases", "--cache", str(tmp_path / "cache"), "--release", "0.5.10.post1",
                 "--out", str(out), "--today", "2026-12-01"]) == 0
    [row] = parse_table(json.loads(out.read_text()))
    assert row.flags.default_state == "on-by-default" and row.flags.disable == "--disable-piecewise-cuda-graph"
    assert row.read_on == "2026-12-01" and "release wheel sglang-0.5.10.post1" in row.flags.source


def test_record_mode2_keeps_both_process_states(tmp_path):
    """`lab record-mode2` keeps a mode2 result measured both ways, and refuses results without one."""
    from lab.cli import main as lab_main
    from pcgkit.advice.load import parse_mode2

    condition = {"not_registered": {"traced": False, "innermost_frame": "flashinfer/jit/core.py:169:register",
                                    "skipped_callable": "datetime.now"},
                 "registered": {"traced": False, "innermost_frame": "flashinfer/jit/core.py:259:is_aot",
                                "skipped_callable": "posix.stat"}}
    result = {"mode": "mode2", "verdict": "reproduced", "simulated": True, "device": {"label": "simulated SM120"},
              "versions": {"flashinfer-python": "0.6.1", "torch": "2.9.1"}, "evidence": {"jit_spec_condition": condition}}
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"created": "2026-12-01T21:50:42+00:00", "results": [result]}))
    out = tmp_path / "mode2.json"
    assert lab_main(["record-mode2", str(results), "--out", str(out)]) == 0
    runs = parse_mode2(json.loads(out.read_text()))
    assert [(r.spec_registered, r.refused) for r in runs] == [(False, "datetime.now"), (True, "posix.stat")]
    results.write_text(json.dumps({"created": "2026-12-01", "results": [{**result, "evidence": {}}]}))
    assert lab_main(["record-mode2", str(results), "--out", str(out)]) == 2


def test_committed_mode2_condition_names_both_stops():
    """The committed measurement states both stop locations and that it was simulated."""
    from pcgkit.advice.summary import mode2_condition

    statement = mode2_condition(load_evidence())
    assert "JitSpecRegistry.register" in statement.text and "datetime.now" in statement.text
    assert "is_aot" in statement.text and statement.simulated and statement.sources[0].kind == "measurement"


def test_where_fixed_ranges_cover_only_measured_releases():
    """The project-level statement lists the measured releases on each side and names the releases never run as themselves."""
    from pcgkit.advice.summary import sglang_fixed

    text = sglang_fixed(EVIDENCE).text
    assert "through 0.5.11 (0.5.10, 0.5.11)" in text
    assert "fixed from 0.5.12, measured (call path ran: 0.5.12, 0.5.16)" in text
    assert text.endswith("not measured (not run as themselves, or no verdict there): 0.5.13.")


def test_error_and_skipped_verdicts_are_not_measurements():
    """A cell whose case errored (e.g. sglang 0.5.6's import chain needs CUDA-only sgl_kernel) is a gap the
    advice names, never a release it counts as tracing or reproducing."""
    from pcgkit.advice.load import parse_snapshot

    data = {"schema": "pcgkit.matrix-snapshot/1", "matrix_created": "2026-12-01T23:00:00+00:00", "cells": [
        {"id": "sglang-0.5.6", "sglang": "0.5.6", "flashinfer-python": "0.5.3", "torch": "2.9.1", "simulated": False,
         "device": "simulated SM120", "verdicts": {"sglang-compile-sm120": "error", "e2e-piecewise-launch": "skipped"}},
        {"id": "sglang-0.5.8.post1", "sglang": "0.5.8.post1", "flashinfer-python": "0.6.1", "torch": "2.9.1",
         "simulated": True, "device": "simulated SM120", "verdicts": {"sglang-compile-sm120": "reproduced"}},
    ]}
    assert [(m.cell, m.verdict) for m in parse_snapshot(data)] == [("sglang-0.5.8.post1", "reproduced")]


def test_the_op_is_fixed_only_above_the_newest_release_whose_call_path_fails():
    """A release that only traced (an old `fixed`) below one measured traces-but-fails is never the op's first
    fixed release: the statements and the FlashInfer upgrade name the first release above the failure."""
    from pcgkit.advice.summary import flashinfer_fixed

    op = "fix-upstream-op"
    evidence = dataclasses.replace(EVIDENCE, measurements=EVIDENCE.measurements + (
        _m("s-0.5.16", "0.5.16", "0.6.14", "fixed", case=op, ran=False),  # traced, measured before the audit
        _m("fi-0.7.0", None, "0.7.0", "traces-but-fails", case=op),
        _m("fi-0.7.1", None, "0.7.1", "fixed", case=op),
        _m("fi-0.7.0", None, "0.7.0", "reproduced", case="mode1"),
        _m("fi-0.7.1", None, "0.7.1", "reproduced", case="mode1"),
    ))
    evidence = dataclasses.replace(evidence, measurements=tuple(
        dataclasses.replace(m, verdict="traces-but-fails") if (m.cell, m.case) == ("fi-0.6.12", op) else m
        for m in evidence.measurements))
    statement = flashinfer_fixed(evidence)
    assert statement is not None and "is fixed from 0.7.1, measured (call path ran: 0.7.1)" in statement.text
    upgrade = advise(Versions(flashinfer="0.6.12"), "sm120", evidence).upgrade
    assert upgrade is not None and "upgrade to 0.7.1 or later" in upgrade.text and "0.6.14" not in upgrade.text


def _op_evidence(trace_only: tuple[str, ...] = ()) -> Evidence:
    """The op as the argument audit measures it: traces-but-fails 0.6.12-0.7.0, fixed (call path ran) 0.7.1/0.7.4;
    `trace_only` releases carry a `fixed` from before the run rule (it only traced)."""
    ms = [_m(f"fi-{v}", None, v, "reproduced", case="mode1") for v in ("0.6.12", "0.6.18", "0.7.0", "0.7.1", "0.7.4")]
    ms += [_m(f"fi-{v}", None, v, "traces-but-fails", case="fix-upstream-op") for v in ("0.6.12", "0.6.18", "0.7.0")]
    ms += [_m(f"fi-{v}", None, v, "fixed", case="fix-upstream-op") for v in ("0.7.1", "0.7.4")]
    ms += [_m(f"s-{v}", "0.5.x", v, "fixed", case="fix-upstream-op", ran=False) for v in trace_only]
    return Evidence(tuple(ms), releases=EVIDENCE.releases, releases_source="t")


@pytest.mark.parametrize("flashinfer", ["0.6.12", "0.6.14", "0.6.18", "0.7.0", "0.7.0.post1"])
def test_flashinfer_0_6_12_to_0_7_0_is_never_told_to_call_the_op_there(flashinfer):
    """Where the op traces but fails to run, the advice says so and names 0.7.1 (the first release that runs) as the
    upgrade; a `fixed` from before the run rule on 0.6.14 (it only traced) is not a release to switch to either."""
    answer = advise(Versions(flashinfer=flashinfer), "sm120", _op_evidence(trace_only=("0.6.14",)))
    text = answer.upgrade.text
    assert "is fixed in FlashInfer 0.7.1, measured" in text and "upgrade to 0.7.1 or later and call the op" in text
    assert "traces but fails when run on 0.6.12, 0.6.18, 0.7.0" in text and "do not call it there" in text
    assert "Your release's" not in text and "0.6.14" not in text.split("is fixed in")[1]


def test_a_fixed_that_only_traced_is_never_an_upgrade_target():
    """`fixed` measured before the run rule (no 'call path ran' in its reason) is worded as traced, not shown to run:
    no 'callers must switch', no 'fixed from', for the op or for SGLang."""
    from pcgkit.advice.summary import where_fixed

    evidence = _op_evidence(trace_only=())
    old = Evidence(tuple(dataclasses.replace(m, ran=False) for m in evidence.measurements)
                   + (_m("s-0.5.11", "0.5.11", "0.6.8", "reproduced"), _m("s-0.5.12", "0.5.12", "0.6.11", "fixed", ran=False)),
                   releases=EVIDENCE.releases, releases_source="t")
    text = advise(Versions(flashinfer="0.7.1"), "sm120", old).upgrade.text
    assert "callers must switch" not in text and "not shown to run, so not a release to switch to" in text
    sglang = advise(Versions(sglang="0.5.11"), "sm120", old).upgrade.text
    assert "the kit has not yet run its call path there, so it is not shown to run" in sglang
    for statement in where_fixed(old):
        assert "fixed from" not in statement.text and "callers must switch" not in statement.text
    fixed_now = where_fixed(evidence)[0].text if where_fixed(evidence) else ""
    assert "fixed from 0.7.1, measured (call path ran: 0.7.1, 0.7.4)" in fixed_now


def test_snapshot_marks_which_fixed_verdicts_ran():
    """The snapshot keeps, per cell, the `fixed` cases whose reason says the call path ran; the loader reads them."""
    from lab.triage.snapshot import snapshot

    compat = {"created": "2026-12-05", "cells": [{"id": "fi-0.7.1", "axes": {"flashinfer-python": "0.7.1"}, "modes": {
        "fix-upstream-op": {"verdict": "fixed", "simulated": True,
                            "reason": "traced cleanly under fullgraph=True; call path ran (argument audit)"},
        "fix-custom-op": {"verdict": "fixed", "simulated": True, "reason": "traced cleanly under fullgraph=True"}}}]}
    data = snapshot(compat, "c.json")
    assert data["cells"][0]["ran"] == ["fix-upstream-op"]
    data["cells"][0]["device"] = "simulated SM120"
    by_case = {m.case: m for m in parse_snapshot(data)}
    assert by_case["fix-upstream-op"].works and by_case["fix-custom-op"].traced_only
