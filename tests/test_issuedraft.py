"""`pcgkit issue`: drafts in each upstream template's shape, with measured version ranges only."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from pcgkit.bugreport.issuedraft import TARGETS, build_draft, load_results, render_draft
from pcgkit.cli import main
from pcgkit.errors import UsageError
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import read_results

FOLD_WORD_BUDGET = 500  # words a maintainer reads before the draft's first <details>


def words_above_fold(text: str) -> int:
    """Whitespace-separated words before the draft's first `<details>` (the whole text when it has none)."""
    return len(text.split("<details>", 1)[0].split())


REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_RESULTS = REPO_ROOT / "reports" / "samples" / "results.json"

# `project`, not `target`: the kit's pytest plugin parametrizes any test that asks for `target`.
# Each target's bug-template headings (sglang 1-bug-report.yml, flashinfer bug_report.yml, pytorch pt2-bug-report.yml).
REQUIRED_SECTIONS = {
    "sglang": ("### Checklist", "### Describe the bug", "### Reproduction", "### Environment"),
    "flashinfer": ("### Before submitting", "### Environment", "### Bug description", "### Minimal reproduction",
                   "### Additional context"),
    "pytorch": ("### 🐛 Describe the bug", "### Error logs", "### Versions"),
}
VERSION_TOKEN = re.compile(r"\b\d+\.\d+(?:\.\d+)?\b")


def _sample():
    _, results = read_results(SAMPLE_RESULTS)
    return results


def _ranges_section(text: str) -> str:
    return text.split("<!-- measured-ranges:start -->")[1].split("<!-- measured-ranges:end -->")[0]


def _merged_matrix_results():
    """The sample cell, plus a second measured cell (torch 2.10.0) whose mode1 traced cleanly."""
    sample = _sample()
    fixed_cell = [
        dataclasses.replace(
            r,
            versions={**r.versions, "torch": "2.10.0"},
            verdict=Verdict.FIXED if r.mode == "mode1" else r.verdict,
            signature=None if r.mode == "mode1" else r.signature,
        )
        for r in sample
    ]
    return sample + fixed_cell


@pytest.mark.parametrize("project", TARGETS)
def test_draft_has_the_targets_template_sections(project):
    """Each draft starts with a title and has its project's bug-template headings, in order."""
    text = render_draft(build_draft(project, _sample(), ["results.json"]))
    assert text.startswith("Title: ")
    positions = [text.index(heading) for heading in REQUIRED_SECTIONS[project]]
    assert positions == sorted(positions)
    for required in ("**Expected:**", "**Observed**", "Workarounds tried", "measured-ranges:start"):
        assert required in text


@pytest.mark.parametrize("project", TARGETS)
def test_draft_quotes_the_measured_signature(project):
    """Graph-break id, innermost frame and the frame chain come from the mode1 result."""
    mode1 = next(r for r in _sample() if r.mode == "mode1" and r.verdict is Verdict.REPRODUCED)
    text = render_draft(build_draft(project, _sample()))
    assert mode1.signature.graph_break_id in text
    assert str(mode1.signature.innermost_library_frame) in text
    for frame in mode1.signature.frame_chain:
        if frame.file.startswith("flashinfer/"):
            assert str(frame) in text


@pytest.mark.parametrize("project", TARGETS)
def test_version_ranges_contain_only_measured_versions(project):
    """Every version in the ranges section is one a merged result was measured with; fixed goes apart."""
    results = _merged_matrix_results()
    measured = {str(v) for r in results for v in r.versions.values() if v}
    measured |= {r.device["compute_capability"] for r in results}  # device labels quote it ("as 12.0")
    section = _ranges_section(render_draft(build_draft(project, results)))
    assert set(VERSION_TOKEN.findall(section)) <= measured
    if project == "pytorch":  # the target's own axis, in one line
        line = next(ln for ln in section.splitlines() if ln.startswith("- Measured:"))
        assert line.startswith("- Measured: mode1 fails on torch 2.9.1 (1 measured result); traces cleanly on torch 2.10.0;")


def test_ranges_say_so_when_no_cell_traced_cleanly():
    """With only failing cells measured, the draft claims no unaffected version at all."""
    section = _ranges_section(render_draft(build_draft("sglang", _sample())))
    assert "traces cleanly with: no measured cell" in section


def test_workarounds_report_each_measured_verdict():
    """mode2/3/4 each appear with what their measured verdict says, and a fixed workaround says 'worked'."""
    results = _sample()
    text = render_draft(build_draft("flashinfer", results))
    section = text.split("Workarounds tried")[1]
    for mode in ("mode2", "mode3", "mode4"):
        assert f"- {mode}," in section
    assert section.count("did not help") == 3
    mode2_fixed = [
        dataclasses.replace(r, verdict=Verdict.FIXED, signature=None) if r.mode == "mode2" else r for r in results
    ]
    section = render_draft(build_draft("flashinfer", mode2_fixed)).split("Workarounds tried")[1]
    assert "worked: traced cleanly" in section.split("- mode3,")[0]


def test_simulated_results_are_labelled():
    """A draft built on simulated results says SIMULATED SM120 up front."""
    assert "SIMULATED SM120" in render_draft(build_draft("pytorch", _sample()))


def test_no_failure_means_no_draft():
    """Results in which mode1 never failed give no issue to file."""
    clean = [dataclasses.replace(r, verdict=Verdict.FIXED, signature=None) for r in _sample() if r.mode == "mode1"]
    with pytest.raises(UsageError, match="no measured mode1 failure"):
        build_draft("sglang", clean)


def test_cli_reads_matrix_folders_and_redacts_secrets(tmp_path, monkeypatch, capsys):
    """`pcgkit issue` merges results.json files under a folder and leaks no planted secret."""
    monkeypatch.setenv("HF_TOKEN", "hf_plantedIssueToken42")
    payload = json.loads(SAMPLE_RESULTS.read_text())
    for index, torch_version in enumerate(("2.9.1", "2.10.0")):
        cell = tmp_path / "matrix" / f"cell{index}"
        cell.mkdir(parents=True)
        data = json.loads(json.dumps(payload))
        for result in data["results"]:
            result["versions"]["torch"] = torch_version
            result["reason"] += " (mirror https://bob:hunter2pw@proxy.invalid/ token hf_plantedIssueToken42)"
        cell.joinpath("results.json").write_text(json.dumps(data))
    out = tmp_path / "draft.md"
    assert main(["issue", "--target", "sglang", "--results", str(tmp_path / "matrix"), "--out", str(out)]) == 0
    text = out.read_text()
    assert "- fails with torch: 2.9.1, 2.10.0" in _ranges_section(text)
    for secret in ("hf_plantedIssueToken42", "hunter2pw", "bob:"):
        assert secret not in text + capsys.readouterr().err


def test_embedded_env_capture_is_summarised_and_attached(tmp_path):
    """A results file carrying environment.env gives a one-line summary; the full capture is attached, not inlined."""
    payload = json.loads(SAMPLE_RESULTS.read_text())
    payload["environment"]["env"] = json.loads((REPO_ROOT / "reports" / "samples" / "env.json").read_text())
    (tmp_path / "results.json").write_text(json.dumps(payload))
    results, env = load_results([tmp_path / "results.json"])
    versions = render_draft(build_draft("pytorch", results, env=env)).split("### Versions")[1]
    assert "torch 2.9.1" in versions and "attached as `env.json`" in versions
    assert "PyTorch version: 2.9.1" not in versions


def _drafts():
    """Each target's draft as the documented command renders it (no --results/--compat: the newest matrix sample;
    an empty --reports, so a local run never stands in for the committed sample)."""
    import argparse
    import contextlib
    import tempfile

    from pcgkit.commands.issue import draft_for

    with tempfile.TemporaryDirectory() as empty, contextlib.chdir(REPO_ROOT):
        for project in TARGETS:
            args = argparse.Namespace(target=project, results=None, compat=None, env="reports/samples/env.json",
                                      repro=None, out=None, reports=empty, pin=None)
            yield project, draft_for(args)


@pytest.mark.parametrize("project", TARGETS)
def test_committed_sample_matches_what_the_command_renders(project, monkeypatch):
    """reports/samples/issue-<target>.md is exactly what the documented command (with --compat) renders today."""
    monkeypatch.chdir(REPO_ROOT)
    draft = dict(_drafts())[project]
    assert "no measured cell" not in render_draft(draft) and draft.matrix is not None and draft.known_links
    assert (REPO_ROOT / "reports" / "samples" / f"issue-{project}.md").read_text() == render_draft(draft)


def test_the_ask_and_the_signature_come_first_and_the_rest_is_folded():
    """Each draft opens with what it asks, the failure signature (exception, graph-break id, message head, innermost
    frame), the versions with the device labelled, the repro command and where it is fixed, all above one `<details>`
    fold; the measured ranges, frames and workarounds are inside it."""
    for project, draft in _drafts():
        text = render_draft(draft)
        above, below = text.split("<details>", 1)
        sig = draft.primary.signature
        for needed in ("**In short:**", sig.exception_type, sig.graph_break_id, sig.message_head,
                       str(sig.innermost_library_frame), draft.env_summary, draft.export_command, draft.measured_line):
            assert needed and needed.replace("_", "\\_") in above or needed in above, (project, needed)
        assert "simulated SM120" in above, project  # the device, labelled
        for folded in ("<!-- measured-ranges:start -->", "Workarounds tried", "Frame chain dynamo reports"):
            assert folded in below and folded not in above, (project, folded)
        assert below.rstrip().endswith("</details>"), project


def test_drafts_fit_the_word_budget_above_the_fold():
    """At most 500 words above the fold (the drafts were 1,427-1,733 words, unfolded), the committed samples too."""

    for project, draft in _drafts():
        text = render_draft(draft)
        assert "<details>" in text and words_above_fold(text) <= FOLD_WORD_BUDGET, (project, words_above_fold(text))
    assert words_above_fold("one two <details> three") == 2 and words_above_fold("a b c") == 3


def test_inline_repro_is_ten_to_twenty_lines():
    """The repro in the body is a 10-20 line script; the full standalone one is attached."""
    for project, draft in _drafts():
        script = render_draft(draft).split("```python\n", 1)[1].split("```", 1)[0]
        assert 10 <= len(script.splitlines()) <= 20, (project, len(script.splitlines()))
        assert "fullgraph=True" in script and "flashinfer.fp4_quantize" in script


def test_drafts_against_shipped_fixes_say_so():
    """FlashInfer's draft says #2999 was closed by the op and asks for the public API; SGLang's says it is fixed from
    the first measured-fixed release; PyTorch's acknowledges the documented behaviour."""
    drafts = {project: render_draft(draft) for project, draft in _drafts()}
    assert "was closed by [flashinfer#3081]" in drafts["flashinfer"] and "public `fp4_quantize`" in drafts["flashinfer"]
    assert "This is not a new bug: SGLang 0.5.12 and later" in drafts["sglang"]
    assert "This is documented behaviour, not a bug report" in drafts["pytorch"]
    assert all("2-3x" not in text for text in drafts.values())
    for text in drafts.values():  # mode 2 stated with the condition that decides where it stops
        assert "JitSpecRegistry.register" in text and "is_aot" in text


def test_a_huge_matrix_still_fits_githubs_limit():
    """With thousands of measured cells the body stays under 65,536 characters (tables capped, the rest counted)."""
    from pcgkit.bugreport.issuedraft import GITHUB_BODY_LIMIT

    sample = _sample()
    failing = next(r for r in sample if r.mode == "mode1" and r.verdict is Verdict.REPRODUCED)
    many = [dataclasses.replace(failing, versions={**failing.versions, "torch": f"2.{i}.0"}) for i in range(3000)]
    text = render_draft(build_draft("flashinfer", sample + many))
    assert len(text) < GITHUB_BODY_LIMIT and "more measured cells" in text


def test_asks_are_re_derived_from_the_wheels_and_the_run_rule():
    """The SGLang draft asks neither to close sglang#23386 (a MoE model the kit never judges) nor to document a switch
    every crashing release already prints on capture failure (read from each wheel); the FlashInfer draft recommends
    the op only from a release where its call path ran, and names the releases where it traces but fails."""
    import dataclasses

    from pcgkit.advice import load_evidence
    from pcgkit.bugreport.asks import ask_for

    evidence = load_evidence()
    sglang = ask_for("sglang", evidence)
    text = sglang.statements[0].text
    assert "23386" not in text and "closed" not in text and "no change asked" in sglang.headline
    assert "already print the switch" in text
    silent = dataclasses.replace(evidence, releases=tuple(dataclasses.replace(r, capture_failure_flags=())
                                                          for r in evidence.releases))
    assert "please document the switch for 0.5.10, 0.5.10.post1, 0.5.11" in ask_for("sglang", silent).headline
    op = "fix-upstream-op"
    audited = dataclasses.replace(evidence, measurements=tuple(
        dataclasses.replace(m, verdict="traces-but-fails") if m.case == op and m.versions.flashinfer in ("0.6.12", "0.7.0")
        else dataclasses.replace(m, ran=True) if m.case == op and m.versions.flashinfer in ("0.7.1", "0.7.4") else m
        for m in evidence.measurements))
    flashinfer = ask_for("flashinfer", audited)
    assert "callers must switch to `torch.ops.flashinfer.fp4_quantize` (fixed in 0.7.1, measured)" in flashinfer.headline
    assert "the op traces but its call path fails" in flashinfer.statements[0].text
    assert "0.6.12" in flashinfer.statements[0].text.split("the op traces but")[0].rsplit("On ", 1)[1]
    unrun = dataclasses.replace(evidence, measurements=tuple(dataclasses.replace(m, ran=False) for m in evidence.measurements))
    assert "callers must switch" not in ask_for("flashinfer", unrun).headline  # nothing ran: no recommendation


def test_the_docs_page_says_what_the_sglang_draft_asks():
    """docs/reproduce-and-report.md describes the SGLang draft's ask as the draft makes it: with the committed evidence it
    asks for nothing, so the page must not tell readers it asks to confirm or close the open report."""
    from pcgkit.advice import load_evidence
    from pcgkit.bugreport.asks import ask_for

    page = " ".join((REPO_ROOT / "docs" / "reproduce-and-report.md").read_text().split())
    asks_nothing = "no change asked" in ask_for("sglang", load_evidence()).headline
    assert asks_nothing == ("it asks for nothing" in page)
    assert "confirm the open report" not in page and "asks no thread to be closed" in page
