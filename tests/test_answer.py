"""The one answer (issue 44): the contradictions found on main, the length budgets, bad input. Each contradiction
test failed on main (commit b0c4803): the README box's header, 0.5.12's breakable speed offered for 0.5.11, the cost
summary without its worst figures and with signs that read backwards."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from pcgkit.advice import UnknownInput, Versions, advise, check_input, cost_statement, load_evidence
from pcgkit.advice.cost import MAX_ROWS, cost_table
from pcgkit.advice.render import answer_lines
from pcgkit.cli import main

ROOT = Path(__file__).resolve().parent.parent
EVIDENCE = load_evidence()
RELEASES = tuple(r.sglang for r in EVIDENCE.releases)
COST = json.loads((ROOT / "fixtures" / "measurements" / "piecewise-cost.json").read_text())
README = (ROOT / "README.md").read_text()
BOX = README.split("<!-- generated:have-this-bug -->", 1)[1].split("<!-- /generated:have-this-bug -->", 1)[0]
PAGE = (ROOT / "docs" / "answers.md").read_text()
SIGNED = re.compile(r"[-+]\d+(?:\.\d+)? ?(?:%|s\b)|\(\+ slower\)|on minus off")


# --- the contradictions of issue 44 -------------------------------------------------------------

def test_the_box_never_calls_the_breakable_runner_unmeasured_beside_its_figures():
    """Main's box header said breakable was "not run by the kit; cost not measured" above measured breakable figures:
    the box states no breakable cost at all, and the page states it with the release it was measured on."""
    assert "cost not measured" not in BOX and "not run by the kit" not in BOX
    assert "with the breakable runner" not in BOX  # the breakable figures live on docs/answers.md only
    for table in (EVIDENCE.breakable_table, *EVIDENCE.breakable_by_release):  # each with its release, device, date
        assert f"measured on SGLang {table.sglang} ({table.device}, {table.date}" in PAGE, table.source


def _own_table(release: str):
    return next(t for t in EVIDENCE.breakable_by_release if t.sglang == release)


def test_0_5_11_is_never_given_0_5_12s_breakable_speed_and_its_own_limit_is_stated():
    """0.5.11's breakable runner refuses multi-request prefills (its wheel's `can_run`): the answer says so, and quotes
    the runner's cost measured on 0.5.11 itself (by_release["0.5.11"], H100 2026-12-07), 0.5.12's figures from the same
    machine only after 0.5.12's name; never the H200 0.5.12 figures."""
    answer = advise(Versions(sglang="0.5.11"), "sm120", EVIDENCE)
    text = " ".join(s.text for s in answer.statements())
    assert answer.runner is not None and "one-request prefills only" in answer.runner.text
    assert "breakable_cuda_graph_runner.py" in answer.runner.sources[0].ref  # read from the 0.5.11 wheel
    own, beside = _own_table("0.5.11"), _own_table("0.5.12")
    first = answer.first_try_cost.text
    def said(t):  # "2 % slower (4 prompts of 2048 tokens at once)": the table's worst, its one model left unnamed
        return f"up to {t.worst.replace(' with the breakable runner', '')} ({t.worst_case.rsplit(', ', 1)[0]})"
    assert first.startswith(f"The breakable runner against piecewise off: 0.5.11 (H100) {said(own)};"), first
    assert f"; 0.5.12 (same H100) {said(beside)}." in first  # 0.5.12's figure, named as 0.5.12's
    ours = first.split("; 0.5.12 (", 1)[0]
    assert beside.worst_case.rsplit(", ", 1)[0] not in ours and "0.5.12" not in ours
    assert EVIDENCE.breakable_table.worst not in text  # the H200 0.5.12 worst (33 % slower) is not 0.5.11's
    assert [s.ref for s in answer.first_try_cost.sources] == [own.source, beside.source]
    assert "breakable" not in (answer.cost.text if answer.cost else "")
    assert any("one-request prefills only" in line for line in answer_lines(answer))
    for release in ("0.5.12", "0.5.13.post1"):  # no such check there (their wheels)
        assert advise(Versions(sglang=release), "sm120", EVIDENCE).runner is None


def test_without_its_own_measurement_0_5_11_gets_no_breakable_figure():
    """Take by_release away: 0.5.11's first-try cost says where it was measured and quotes no figure."""
    bare = dataclasses.replace(EVIDENCE, breakable_by_release=())
    first = advise(Versions(sglang="0.5.11"), "sm120", bare).first_try_cost.text
    assert "not measured on 0.5.11 (measured on 0.5.12, whose runner" in first and "%" not in first, first


def test_the_first_try_on_0_5_11_carries_the_hybrid_label_and_is_never_fixed():
    """The 0.5.11 launch of 2026-12-07 ran on a real H100 answering architecture queries as SM120: the statement says
    so in the run's own label, says where it stopped next, and never calls it fixed; 0.5.12-0.5.14 were not run."""
    run = advise(Versions(sglang="0.5.11"), "sm120", EVIDENCE).first_try_run
    label = "hybrid: real NVIDIA H100 80GB HBM3 (SM90) with architecture queries answered as SM120"
    assert run is not None and label in run.text and "got past the point of the crash" in run.text, run
    assert "stopped next at an sm_120 kernel SM90 cannot run" in run.text
    assert not re.search(r"\bfixed\b|\bworks\b|\bok\b", run.text)
    assert run.sources[0].as_of == "2026-12-07" and "first-try-h100-2026-12-07" in run.sources[0].ref
    for release in ("0.5.12", "0.5.12.post1", "0.5.13", "0.5.13.post1", "0.5.14"):
        other = advise(Versions(sglang=release), None, EVIDENCE).first_try_run
        assert other is not None and other.text == f"First try on {release}: not run by the kit (launched on 0.5.11 only).", other
    lines = answer_lines(advise(Versions(sglang="0.5.11"), "sm120", EVIDENCE))
    assert any(label in line for line in lines)  # `advice show`, preflight and triage --verbose print it


def test_a_first_try_row_without_its_hybrid_label_is_refused():
    """A real-GPU first-try row must say it was a hybrid: the loader refuses one that dropped its label."""
    from pcgkit.advice.load import parse_first_try

    data = json.loads((ROOT / "fixtures" / "measurements" / "first-try.json").read_text())
    assert len(parse_first_try(data)) == 3
    data["runs"][0]["label"] = "NVIDIA H100 80GB HBM3"
    with pytest.raises(ValueError, match="hybrid label"):
        parse_first_try(data)


def test_the_cost_names_its_worst_figures_in_words():
    """The 8B 4x128 (+80 %) and 1B 4x512 (+42 %) figures main's summary left out are in the table, in words."""
    table = cost_table(COST, "f")
    words = {(row.what, model): cell.words for row in table.rows for model, cell in zip(table.models, row.cells) if cell}
    eight, one = table.models
    assert words[("4 prompts of 128 tokens at once", eight)] == "80 % slower with piecewise off"
    assert words[("4 prompts of 512 tokens at once", one)] == "42 % slower with piecewise off"
    assert table.worst == "80 % slower with piecewise off" and "4 prompts of 128 tokens at once" in table.worst_case
    assert "80 % slower with piecewise off" in cost_statement(EVIDENCE).text


@pytest.mark.parametrize("where, text", [("README box", BOX), ("docs/answers.md", PAGE),
                                         ("the cost sentence", cost_statement(EVIDENCE).text)])
def test_no_figure_reads_backwards(where, text):
    """No signed difference ("on minus off: -67.1 s", "(+ slower) -54 %"): every figure says its direction in words."""
    assert not SIGNED.search(text), (where, SIGNED.search(text).group(0))


# --- the cost table -----------------------------------------------------------------------------

def _cost_table_lines(table):
    """docs/gen_facts.py's cost table (the only page that prints it whole), imported from its path as test_docs does."""
    name = "pcgkit_docs_gen_facts"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "docs" / "gen_facts.py")
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name].cost_table_lines(table)


def _cells(table):
    """Every measured cell of the table, row by row."""
    return [cell for row in table.rows for cell in row.cells if cell]


@pytest.mark.parametrize("breakable", [False, True])
def test_cost_table_rows_words_noise_and_worst(breakable):
    """At most MAX_ROWS rows; each figure's direction in words; within-noise marked exactly where the move is no larger
    than the noise; the worst case named under the table."""
    table = cost_table(COST, "f", breakable=breakable)
    assert 0 < len(table.rows) <= MAX_ROWS
    for cell in _cells(table):
        assert re.fullmatch(r"(\d+ % (slower|faster)|no change) with (piecewise off|the breakable runner)"
                            r"( \(within noise, \d+ %\))?", cell.words), cell.words
        assert ("within noise" in cell.words) is (abs(cell.pct) <= cell.noise)
        assert (cell.pct > 0) is ("slower" in cell.words) or round(cell.pct) == 0
    lines = _cost_table_lines(table)
    assert len([line for line in lines if line.startswith("| ") and not line.startswith("| workload")]) == len(table.rows)
    assert any(line.startswith("Worst case: ") and table.worst in line for line in lines)


def test_a_figure_within_its_own_spread_is_marked():
    """A move smaller than its repeats' spread is noise, even where decode moved less (a one-line bug would drop it)."""
    doc = {"device": "X", "date": "2026-12-05", "versions": {"sglang": "0.5.12"}, "runs": [{
        "model": "m", "model_detail": {"parameters": 10**9},
        "phases": {"prefill/extend": {"figures": [{"prompt_tokens": 128, "on": 10.0, "off": 11.0,
                                                   "spread": {"on": {"spread_pct": 15.0}, "off": {"spread_pct": 2.0}}}]},
                   "decode": {"figures": [{"batch": 1, "on": 5.0, "off": 5.0}]}}}]}
    cell, = _cells(cost_table(doc, "f"))[:1]
    assert cell.words == "10 % slower with piecewise off (within noise, 15 %)"


def test_the_cost_is_said_once():
    """The whole table is on docs/answers.md only; the README box and the other pages give one line or a link."""
    tables = 2 + len(EVIDENCE.breakable_by_release)  # piecewise off, the breakable runner, each release's own
    assert PAGE.count("| 4 prompts of 128 tokens at once |") == tables
    for page in ("README.md", "docs/check-environment.md", "docs/gpu-and-ci.md"):
        assert "| 4 prompts of 128 tokens at once |" not in (ROOT / page).read_text(), page


# --- length budgets -----------------------------------------------------------------------------

def test_readme_before_quick_start_is_at_most_250_words():
    """The README's first screen: the box a short table plus one line per answer, the rest on docs/answers.md."""
    words = len(README.split("## Quick start", 1)[0].split())
    assert words <= 250, words


def _screen(text: str) -> list[str]:
    lines = text.rstrip("\n").splitlines()
    assert len(lines) <= 24 and all(len(line) <= 80 for line in lines), [(len(x), x) for x in lines]
    assert "…" not in text
    return lines


@pytest.mark.parametrize("release", RELEASES)
def test_advice_show_fits_a_screen(release, capsys):
    """`advice show` for every release in range (and 0.5.11's breakable launch): one 80x24 screen, nothing cut."""
    flags = ["--", "--enable-breakable-cuda-graph"] if release == "0.5.11" else []
    assert main(["advice", "show", "--sglang", release, "--arch", "sm120", *flags]) == 0
    _screen(capsys.readouterr().out)


@pytest.mark.parametrize("sample", sorted((ROOT / "reports/samples/preflight-2026-12-01").glob("sglang-*.json")),
                         ids=lambda p: p.stem)
def test_preflight_answer_fits_a_screen(sample):
    """Every committed preflight probe, rendered with the answer: one 80x24 screen, nothing cut."""
    from pcgkit.commands.preflight import advice_for, failure_modes, render, with_measured_call_path
    from pcgkit.preflight.answer import decide

    result = with_measured_call_path(decide(json.loads(sample.read_text())["answer"]["probe"], failure_modes()))
    _screen(render(dataclasses.replace(result, advice=advice_for(result))))


def test_triage_first_screen_has_no_cut_sentence_and_no_orphan_mark():
    """Every known-bug log of the corpus, with and without a release: no '…', no [n] mark without its footnote."""
    from lab.triage.corpus import load_texts
    from pcgkit.commands.triage import catalog_view, render, triage_text
    from pcgkit.triage.advice import load_data
    from pcgkit.triage.userenv import UserEnv

    data, view = load_data(), catalog_view()
    corpus = ROOT / "tests" / "data" / "triage_logs"
    for entry, text in load_texts(corpus):
        if entry["label"] != "known-bug":
            continue
        for release in (None, "0.5.11"):
            user = UserEnv("--sglang", sglang=release) if release else None
            out = render(triage_text(text, entry["file"], data, view, user, "bin/pcgkit"))
            _screen(out)
            assert not re.search(r"\[\d+(?:,\d+)*\]", out), out


# --- bad input ----------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, names", [
    (["--sglang", "garbage"], "fixtures/sglang_releases.json"),
    (["--sglang", "0.5.11", "--arch", "sm999"], "fixtures/matrix_snapshot.json"),
    (["--sglang", "0.5.11", "--", "--cuda-graph-backend-prefill=breakable"], "0.5.11's parser"),
    (["--sglang", "0.5.11", "--", "--enable-piecewise-cuda-graphs"], "0.5.11's parser"),
])
def test_what_the_model_does_not_know_is_one_line_naming_its_source(argv, names, capsys):
    """An unknown release, architecture or flag: exit 2 (a usage error), one line naming it and its source, no answer."""
    assert main(["advice", "show", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and names in err and "is not" in err


def test_check_input_accepts_what_it_knows():
    """Every release in range, the measured architectures and each release's own graph flags pass the check."""
    for facts in EVIDENCE.releases:
        check_input(EVIDENCE, Versions(sglang=facts.sglang), "sm121", tuple(f for f in facts.flags.all_flags))
    with pytest.raises(UnknownInput):
        check_input(EVIDENCE, Versions(sglang="0.5.99"))


# --- what the launch's flags change ---------------------------------------------------------------

@pytest.mark.parametrize("release, flags, state", [
    ("0.5.11", ("--enable-breakable-cuda-graph",), "not affected"),
    ("0.5.11", ("--disable-piecewise-cuda-graph",), "not affected"),
    ("0.5.11", ("--model-path", "x"), "affected"),
    ("0.5.14", ("--cuda-graph-backend-prefill", "breakable"), "not affected"),
    ("0.5.9", ("--model-path", "x"), "not affected"),  # opt-in, not turned on
    ("0.5.9", ("--enable-piecewise-cuda-graph",), "affected"),
])
def test_the_launch_answer_follows_the_releases_own_flags(release, flags, state):
    """The breakable switch and the off switch keep the trace from running; an opt-in release's default does too."""
    assert advise(Versions(sglang=release), "sm120", EVIDENCE, flags).launch_state == state


def test_a_releases_own_breakable_measurement_is_read_and_no_other_releases():
    """A cost file with `by_release["0.5.11"]` (benchmarks/piecewise_cost.py add-release): 0.5.11's first-try cost is
    its own; 0.5.13's is still "not measured on 0.5.13", naming the releases that were."""
    from pcgkit.advice.load import parse_cost

    own = json.loads(json.dumps(COST))
    own["versions"] = {**own["versions"], "sglang": "0.5.11"}
    table, breakable, capture, by_release = parse_cost({**COST, "by_release": {"0.5.11": own}})
    evidence = dataclasses.replace(EVIDENCE, cost_table=table, breakable_table=breakable, breakable_by_release=by_release)
    first = advise(Versions(sglang="0.5.11"), "sm120", evidence).first_try_cost
    assert first.text.startswith("The breakable runner against piecewise off: 0.5.11 (H200) up to 33 % slower")
    assert "by_release[0.5.11]" in first.sources[0].ref
    later = advise(Versions(sglang="0.5.13"), None, evidence).first_try_cost
    assert "not measured on 0.5.13 (measured on 0.5.12, 0.5.11" in later.text
