"""Every surface says the same thing about each SGLang release (issue 44): for every release in range and each
question (affected? what to pass first? what turns it off? what does it cost? fixed where? which call is safe?),
each surface's answer is read back from what it prints and compared with the one model (pcgkit.advice.answer);
a disagreement fails with both sentences.

Surfaces read here: the README box and docs/answers.md (as committed), `advice show`, `triage`'s first screen,
`preflight`'s rendering of the committed probes. To add one (compat.md, an issue draft, the dashboard, the
certificate page), write `extract_<surface>(release) -> dict[question, (value, sentence)]` and list it in SURFACES.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest

from pcgkit.advice import Versions, advise, every_release, load_evidence
from pcgkit.advice.render import AFFECTED_Q, COST_Q, FIXED_Q, OFF_Q, PASS_Q, SAFE_Q, state_words

ROOT = Path(__file__).resolve().parent.parent
EVIDENCE = load_evidence()
RELEASES = tuple(r.sglang for r in EVIDENCE.releases)
ARCH = "sm120"
FLAG = re.compile(r"`(--[a-z0-9-]+(?:=[a-z_]+)?)`")
Said = dict[str, tuple[str, str]]  # question -> (the value read back, the sentence it was read from)


@functools.cache
def model(release: str):
    return advise(Versions(sglang=release), ARCH, EVIDENCE)


def expected(release: str) -> dict[str, str]:
    """The model's short value per question, in the form the extractors read back."""
    a = model(release)
    table = EVIDENCE.cost_table
    return {AFFECTED_Q: state_words(a.state), PASS_Q: a.first_try or "none", OFF_Q: a.turn_off or "none",
            FIXED_Q: a.fixed_in or "none", COST_Q: table.worst if table and a.cost else "none",
            SAFE_Q: "torch.ops.flashinfer.fp4_quantize from FlashInfer 0.7.1"}


# --- reading a surface's lines back -------------------------------------------------------------

def unwrap(text: str) -> list[str]:
    """Labelled lines with their wrapped continuation rows joined back."""
    out: list[str] = []
    for row in text.splitlines():
        stripped = row.strip()
        if out and row.startswith("   ") and not re.match(r"^(affected|this launch|pass first|turn off|cost|fixed in|"
                                                          r"safe call):", stripped):
            out[-1] += " " + stripped
        else:
            out.append(stripped)
    return out


def labelled(lines: list[str]) -> Said:
    """Each question's line as the templates label it (pcgkit.advice.render.QUESTIONS), read back to a value."""
    said: Said = {}
    for line in lines:
        label, _, rest = line.partition(": ")
        if label == AFFECTED_Q:
            said[AFFECTED_Q] = (rest.split(" ")[0], line)
        elif label in (PASS_Q, OFF_Q):
            flag = FLAG.search(rest.split(";")[0])
            said[label] = (flag.group(1) if flag and not rest.startswith("do not pass") else "none", line)
        elif label == FIXED_Q:
            found = re.search(r"SGLang (\S+)", rest)
            said[FIXED_Q] = (found.group(1) if found else "none", line)
        elif label == COST_Q:
            found = re.search(r"up to (\d+ % (?:slower|faster) with [a-z ]+?) \(", rest)
            said[COST_Q] = (found.group(1) if found else rest, line)
        elif label == SAFE_Q:
            found = re.search(r"`(torch\.ops\.flashinfer\.fp4_quantize)` from (FlashInfer [\d.]+)", rest)
            said[SAFE_Q] = (f"{found.group(1)} from {found.group(2)}" if found else rest, line)
    return said


# --- the surfaces -------------------------------------------------------------------------------

def extract_advice_show(release: str, capsys) -> Said:
    from pcgkit.cli import main

    assert main(["advice", "show", "--sglang", release, "--arch", ARCH]) == 0
    return labelled(unwrap(capsys.readouterr().out))


def extract_triage(release: str, capsys) -> Said:
    from pcgkit.commands.triage import catalog_view, render, triage_text
    from pcgkit.triage.advice import load_data
    from pcgkit.triage.userenv import UserEnv

    log = ROOT / "tests" / "data" / "triage_logs" / "04_dgxarley_glm47_spark_posix_stat.log"
    result = triage_text(log.read_text(), "server.log", _triage_data(), catalog_view(),
                         UserEnv("--sglang", sglang=release, arch=ARCH), "bin/pcgkit")
    del load_data
    return labelled(unwrap(render(result)))


@functools.cache
def _triage_data():
    from pcgkit.triage.advice import load_data

    return load_data()


def _table_rows(text: str, block: str) -> dict[str, str]:
    """Release -> its table row in a generated block (a row's span covers every release in range between its ends)."""
    body = text.split(f"<!-- generated:{block} -->", 1)[1].split(f"<!-- /generated:{block} -->", 1)[0]
    rows: dict[str, str] = {}
    for line in body.splitlines():
        line = line.removeprefix("> ")
        cells = [c.strip() for c in line.strip("|").split("|")]
        if not line.startswith("|") or not re.match(r"\d", cells[0]):
            continue
        first, _, last = cells[0].split(" (")[0].partition("–")
        span = RELEASES[RELEASES.index(first): RELEASES.index(last or first) + 1]
        rows.update({r: line for r in span})
    return rows


def extract_readme(release: str, capsys) -> Said:
    text = (ROOT / "README.md").read_text()
    row = _table_rows(text, "have-this-bug")[release]
    cells = [c.strip() for c in row.strip("|").split("|")]
    state, what = cells[1], cells[2]
    box = text.split("<!-- generated:have-this-bug -->", 1)[1].split("<!-- /generated", 1)[0]
    said = _what_to_pass(what, row)
    if "/" not in state:  # a row that joins several states (unknown/yes) says each release's own on docs/answers.md
        said[AFFECTED_Q] = (state, row)
    fixed = re.search(r"Fixed in SGLang (\S+)", box)
    said[FIXED_Q] = (fixed.group(1) if fixed else "none", box)
    if model(release).cost is not None:
        said[COST_Q] = labelled([f"cost: {line.split('Cost: ', 1)[1]}" for line in box.splitlines() if "Cost: " in line])[COST_Q]
    said[SAFE_Q] = labelled([f"safe call: {line.split('Safe call: ', 1)[1]}" for line in box.splitlines()
                             if "Safe call: " in line])[SAFE_Q]
    return said


def _what_to_pass(what: str, sentence: str) -> Said:
    """A what-to-pass cell or line (pcgkit.advice.render.what_to_pass) read back."""
    first = re.search(r"first try `([^`]+)`", what)
    off = re.search(r"turn off: `([^`]+)`", what)
    said: Said = {PASS_Q: (first.group(1) if first else "none", sentence)}
    if what != "nothing (not affected)":  # releases measured not affected: nothing said of turning off
        said[OFF_Q] = (off.group(1) if off else "none", sentence)
    return said


def extract_triage_without_a_release(release: str, capsys) -> Said:
    """triage's first screen when the log names no release: one line per run of releases."""
    from pcgkit.commands.triage import catalog_view, render, triage_text

    log = ROOT / "tests" / "data" / "triage_logs" / "04_dgxarley_glm47_spark_posix_stat.log"
    for line in unwrap(render(triage_text(log.read_text(), "server.log", _triage_data(), catalog_view()))):
        found = re.match(r"SGLang (\S+?)(?:-(\S+))?: (.*)", line)
        if found and release in RELEASES[RELEASES.index(found.group(1)): RELEASES.index(found.group(2) or found.group(1)) + 1]:
            return _what_to_pass(found.group(3), line)
    return {}


def extract_answers_page(release: str, capsys) -> Said:
    text = (ROOT / "docs" / "answers.md").read_text()
    row = _table_rows(text, "answers")[release]
    cells = [c.strip() for c in row.strip("|").split("|")]
    state = cells[0].split(" (")[1].rstrip(")")
    said = labelled([f"pass first: {cells[1]}", f"turn off: {cells[2]}"])
    return {AFFECTED_Q: (state, row), PASS_Q: (said[PASS_Q][0], row), OFF_Q: (said[OFF_Q][0], row)}


SURFACES = {"advice show": extract_advice_show, "triage": extract_triage, "README box": extract_readme,
            "docs/answers.md": extract_answers_page, "triage without a release": extract_triage_without_a_release}


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("release", RELEASES)
def test_every_surface_agrees_with_the_model(release, surface, capsys):
    """Each question a surface answers for this release reads back to the model's value; both sentences if not."""
    want = expected(release)
    said = SURFACES[surface](release, capsys)
    assert said, f"{surface} says nothing for SGLang {release}"
    wrong = [f"{q}: the model says {want[q]!r} ({_model_sentence(release, q)}); {surface} says {value!r}: {sentence}"
             for q, (value, sentence) in said.items() if q in want and value != want[q]]
    assert not wrong, "\n".join(wrong)


def _model_sentence(release: str, question: str) -> str:
    a = model(release)
    statement = {AFFECTED_Q: a.affected, PASS_Q: a.switch, OFF_Q: a.switch, FIXED_Q: a.upgrade, COST_Q: a.cost,
                 SAFE_Q: a.safe_call}[question]
    return statement.text if statement is not None else "no statement"


def test_the_check_reads_back_a_planted_disagreement():
    """A surface that names another flag than the model is caught, with its sentence."""
    wrong = labelled(["turn off: `--disable-cuda-graph` [wheel 2026-12-07]"])
    assert wrong[OFF_Q][0] != expected("0.5.11")[OFF_Q]
    assert labelled(["pass first: `--enable-breakable-cuda-graph`; SGLang 0.5.11's breakable"])[PASS_Q][0] == \
        expected("0.5.11")[PASS_Q]


# --- preflight: the committed probes' verdicts against the model's launch answer ------------------

PREFLIGHT_SAMPLES = sorted((ROOT / "reports" / "samples" / "preflight-2026-12-01").glob("sglang-*.json"))


@pytest.mark.parametrize("sample", PREFLIGHT_SAMPLES, ids=lambda p: p.stem)
def test_preflight_verdict_and_answer_agree_with_the_model(sample):
    """A committed probe's preflight answer: WILL CRASH only where the model calls that launch affected, and the
    answer lines it prints read back to the model's values."""
    import dataclasses

    from pcgkit.commands.preflight import advice_for, failure_modes, render, with_measured_call_path
    from pcgkit.preflight.answer import Answer, decide

    probe = json.loads(sample.read_text())["answer"]["probe"]
    result = with_measured_call_path(decide(probe, failure_modes()))
    result = dataclasses.replace(result, advice=advice_for(result))
    release = probe["versions"]["sglang"]
    launch = advise(Versions(sglang=release), ARCH, EVIDENCE, tuple(probe.get("launch") or ()))
    if result.answer is Answer.WILL_CRASH:
        assert launch.launch_state != "not affected", (render(result), launch.launch.text if launch.launch else "")
    said = labelled(unwrap(render(result)))
    want = expected(release)
    wrong = [f"{q}: model {want[q]!r}; preflight {v!r}: {s}" for q, (v, s) in said.items() if q in want and v != want[q]]
    assert not wrong, "\n".join(wrong)


def test_every_release_has_one_answer():
    """The model answers every release in range once, oldest first."""
    answers = every_release(EVIDENCE)
    assert tuple(a.versions.sglang for a in answers) == RELEASES


def test_preflight_on_0_5_11_with_the_breakable_switch_agrees_with_the_model():
    """The recorded 0.5.11 NVFP4 probe relaunched with `--enable-breakable-cuda-graph` (h44b's runner facts): preflight
    answers ok, the model calls the launch not affected, and the screen states 0.5.11's one-request limit."""
    import dataclasses

    from pcgkit.commands.preflight import advice_for, failure_modes, render
    from pcgkit.preflight.answer import Answer, decide
    from pcgkit.preflight.resolve import piecewise_state

    doc = json.loads((ROOT / "tests" / "data" / "preflight" / "probe-sglang-0.5.11-nvfp4-default-sm120.json").read_text())
    state = piecewise_state(doc["piecewise_flags"], {**doc["parsed"], "enable_breakable_cuda_graph": True}, None,
                            doc["runners"], "the installed sglang 0.5.11's own code")
    doc = {**doc, "piecewise": state.to_dict(), "launch": [*doc.get("launch", ()), "--enable-breakable-cuda-graph"]}
    result = decide(doc, failure_modes())
    result = dataclasses.replace(result, advice=advice_for(result))
    launch = advise(Versions(sglang="0.5.11"), ARCH, EVIDENCE, tuple(doc["launch"]))
    assert result.answer is Answer.OK and launch.launch_state == "not affected"
    text = render(result)
    lines = text.splitlines()
    assert len(lines) <= 24 and all(len(line) <= 80 for line in lines), text
    said = " ".join(text.split())
    assert "more than one request run eagerly" in said and "WILL CRASH" not in text  # 0.5.11's limit, said once
    own = next(t for t in EVIDENCE.breakable_by_release if t.sglang == "0.5.11")  # the first try's cost, 0.5.11's own
    assert said.count("run eagerly") == 1 and f"0.5.11 ({own.device.split()[0]}) up to {own.worst.split(' with')[0]}" in said
    assert "hybrid: real NVIDIA H100 80GB HBM3 (SM90) with architecture queries answered as SM120" in said
