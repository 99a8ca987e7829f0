"""pcgkit triage on logs it was not tuned to: the held-out set, the metamorphic (degraded) set, the pastes
issue 27 names, modes from the catalog, next steps that fit, and the personal answer."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest

from lab.triage.corpus import degraded_set, load_texts, rates_of_degraded, rates_of_scored, score
from lab.triage.degrade import DEGRADATIONS
from pcgkit.cli import main
from pcgkit.commands.triage import catalog_view, render, triage_text
from pcgkit.triage.advice import load_data
from pcgkit.triage.diagnose import Kind, Piecewise, diagnose
from pcgkit.triage.steps import load_source
from pcgkit.triage.userenv import UserEnv
from pcgkit.values.logread import read_log

DATA = Path(__file__).resolve().parent / "data"
CORPUS, HELDOUT = DATA / "triage_logs", DATA / "triage_heldout"
VIEW = catalog_view()
SOURCE = load_source()
TEXTS = {"corpus": load_texts(CORPUS), "held-out": load_texts(HELDOUT)}
DEGRADED = {name: degraded_set(texts, VIEW.modes, SOURCE) for name, texts in TEXTS.items()}


def _diagnose(text: str):
    return diagnose(read_log(text), VIEW.modes, SOURCE)


@pytest.mark.parametrize("corpus", sorted(TEXTS))
@pytest.mark.parametrize("degradation", sorted(DEGRADATIONS))
def test_degraded_positive_stays_known_bug(corpus, degradation):
    """Every real positive, so damaged, stays known-bug wherever the damaged text still names the family."""
    misses = [f"{d.file}: {d.got.kind} ({d.got.summary[:100]})" for d in DEGRADED[corpus]
              if d.degradation == degradation and d.required and d.got.kind is not Kind.KNOWN_BUG]
    assert not misses, misses


@pytest.mark.parametrize("corpus", sorted(TEXTS))
@pytest.mark.parametrize("degradation", sorted(DEGRADATIONS))
def test_degraded_negative_never_known_bug(corpus, degradation):
    """No log that does not show this bug becomes known-bug under any degradation."""
    wrong = [d.file for d in DEGRADED[corpus]
             if d.degradation == degradation and d.label != "known-bug" and d.got.kind is Kind.KNOWN_BUG]
    assert not wrong, wrong


def test_degraded_set_is_not_empty_and_counts_both_sides():
    """The metamorphic set has positives that must stay and negatives, for the corpus and the held-out set."""
    for corpus, degraded in DEGRADED.items():
        rates = rates_of_degraded(degraded)
        assert rates.positives >= 10 and rates.negatives >= 100, (corpus, rates)


def test_heldout_has_provenance_and_no_false_known_bug():
    """Every held-out log has a public URL, what was copied and the date; none is called known-bug wrongly."""
    for entry, _ in TEXTS["held-out"]:
        assert entry["source"].startswith("https://") and entry["copied"] and entry["retrieved"]
    assert {p.name for p in HELDOUT.glob("*.log")} == {e["file"] for e, _ in TEXTS["held-out"]}
    rates = rates_of_scored(score(TEXTS["held-out"], VIEW.modes))
    assert rates.false_known_bug == 0 and rates.positives >= 2 and rates.negatives >= 8
    assert rates.recalled == rates.positives, rates


def test_dgx_spark_excerpt_without_its_fp4_frame_is_known_bug():
    """SGLang's piecewise message over the JIT frames, FP4 build flag, subprocess and Lock (no fp4 frame): known-bug."""
    frames = (CORPUS / "01_sglang23386_dgxspark_nvcc_threading_lock.log").read_text()
    text = ("[2026-04-21 16:16:40 TP0] Piecewise CUDA Graph failed with error: Attempted to call function marked as skipped\n"
            "  Explanation: Dynamo developers have intentionally marked that the function `Lock` in file `threading.py` "
            "should not be traced.\n\nfrom user code:\n" + frames)
    diagnosis = _diagnose(text)
    assert diagnosis.kind is Kind.KNOWN_BUG and diagnosis.mode == "mode1", diagnosis.summary
    assert diagnosis.piecewise is Piecewise.FAILED


def test_headless_graph_break_body_is_a_failure():
    """Dynamo's message body without its Unsupported line (what SGLang's piecewise runner prints) is not no-failure."""
    text = ("Attempted to graph break in an active context manager(s) that doesn't support graph breaking.\n"
            "  Explanation: Dynamo does not support graph breaks inside this context manager.\n"
            "  Hint: Move the offending context manager(s) to outside the compiled region.\n")
    diagnosis = _diagnose(text)
    assert diagnosis.kind is Kind.OTHER_FAILURE, diagnosis.summary


def test_disable_flag_in_the_launch_sets_piecewise_but_the_hint_does_not():
    """--disable-piecewise-cuda-graph in a launch command means not-exercised; SGLang's hint naming it does not."""
    launch = "python3 -m sglang.launch_server --model-path x --disable-piecewise-cuda-graph\nUvicorn running on http://0.0.0.0:30000\n"
    assert _diagnose(launch).piecewise is Piecewise.NOT_EXERCISED
    hint = "To work around this error, add --disable-piecewise-cuda-graph to your launch command.\n"
    assert _diagnose(hint).piecewise is Piecewise.UNKNOWN
    assert read_log(hint).hints and not read_log(hint).piecewise_off


def test_frames_inside_the_piecewise_runner_mean_failed():
    """A traceback through SGLang's piecewise runner sets piecewise to failed, even without its message."""
    text = textwrap.dedent('''\
        Traceback (most recent call last):
          File "/sgl/python/sglang/srt/model_executor/piecewise_cuda_graph_runner.py", line 301, in warmup_compile
            self.model_runner.model.forward(
        RuntimeError: boom
        ''')
    assert _diagnose(text).piecewise is Piecewise.FAILED


def test_nvcc_missing_mid_line_is_found():
    """A FileNotFoundError for nvcc in the middle of a logger line is another failure, with the missing toolkit named."""
    text = "[2026-05-01 10:00:00 TP0] JIT build error FileNotFoundError: [Errno 2] No such file or directory: 'nvcc'\n"
    diagnosis = _diagnose(text)
    assert diagnosis.kind is Kind.OTHER_FAILURE and "nvcc" in diagnosis.summary, diagnosis.summary


def test_flashinfer_issue_body_flattened_is_known_bug():
    """FlashInfer's own issue body as GitHub's page flattens it is known-bug, not other-failure."""
    text = (CORPUS / "35_flashinfer2999_github_page_flattened.log").read_text()
    diagnosis = _diagnose(text)
    assert diagnosis.kind is Kind.KNOWN_BUG and diagnosis.survived


def test_confidence_says_how_much_survived():
    """The whole seed log is high confidence; its bare frames (exception and hints cut) are not."""
    full = (DATA / "e2e_logs" / "seed000_capture_nvcc_subprocess.log").read_text()
    frames_only = "\n".join(line for line in full.splitlines() if line.lstrip().startswith(("File", "return", "txt")))
    assert _diagnose(full).confidence == "high"
    weak = _diagnose(frames_only)
    assert weak.confidence != "high" and len(weak.survived) < len(_diagnose(full).survived)


def test_a_new_catalog_mode_is_recognised_without_triage_changes(monkeypatch):
    """A mode added to the catalog (its own rule) is what triage answers, through the handler, with no triage edit."""
    from pcgkit import catalog
    from pcgkit.verdicts.modes import Mode

    def _function_call(sig):
        text = f"{sig.message_head} {sig.explanation}"
        return None if "`__call__` of class `Function`" in text else "not Function.__call__"

    new = Mode("mode9", "fp4_quantize_sm100's autograd.Function under dynamo",
               "Unsupported method call: Function.__call__", "test", _function_call)
    monkeypatch.setattr(catalog, "CATALOG", (catalog.CaseEntry(new, catalog.Family.FAILURE, "none.py", exportable=False),
                                             *catalog.CATALOG))
    text = textwrap.dedent('''\
        torch._dynamo.exc.Unsupported: Unsupported method call
          Explanation: Dynamo does not know how to trace method `__call__` of class `Function`
          Developer debug context: call_method UserDefinedClassVariable(Function.__call__)
        from user code:
           File "/x/site-packages/flashinfer/quantization/fp4_quantization.py", line 222, in fp4_quantize_sm100
             return module.fp4_quantize(input, global_scale)
        ''')
    result = triage_text(text, "new", load_data(), catalog_view())
    assert result.diagnosis.kind is Kind.KNOWN_BUG and result.diagnosis.mode == "mode9", result.diagnosis.summary
    assert not any("repro" in step for step in result.next_steps)  # not exportable: no repro command


def test_next_steps_fit_the_diagnosis():
    """Known-bug: the thread that reports it (no draft), repro and issue only for maintainers (--verbose); an OOM gets
    the log's own advice and no FlashInfer issue; healthy, none."""
    data = load_data()
    bug = triage_text((DATA / "e2e_logs" / "seed000_capture_nvcc_subprocess.log").read_text(), "a", data, VIEW)
    assert any(s.startswith("already reported") for s in bug.next_steps), bug.next_steps
    assert any(s.startswith("https://github.com/") for s in bug.next_steps), bug.next_steps
    assert not any("issue --target" in s for s in bug.next_steps)
    assert any("repro mode1" in s for s in bug.maintainer_steps) and any("--target flashinfer" in s for s in bug.maintainer_steps)
    oom = ("[2026-06-01 10:00:00 TP0] Piecewise CUDA Graph failed with error: CUDA out of memory. Tried to allocate 2.00 GiB\n"
           "To work around this error, add --disable-piecewise-cuda-graph to your launch command.\n"
           "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    other = triage_text("sglang==0.5.16\n" + oom, "b", data, VIEW)
    assert other.diagnosis.kind is Kind.OTHER_FAILURE
    assert not any("pcgkit issue" in s or "repro" in s for s in (*other.next_steps, *other.maintainer_steps)), other.next_steps
    assert any("log advises" in s and "--disable-piecewise-cuda-graph" in s for s in other.next_steps)
    assert any("for your release" in s and "0.5.16" in s for s in other.next_steps), other.next_steps
    healthy = triage_text((CORPUS / "30_h200_sglang0512_control_bf16_healthy.log").read_text(), "c", data, VIEW)
    assert healthy.next_steps == ()


def _screen(text: str, width: int = 80, rows: int = 24) -> list[str]:
    """The output's lines, failing when any is wider than the screen or there are more than it has rows."""
    lines = text.rstrip("\n").splitlines()
    assert len(lines) <= rows and all(len(line) <= width for line in lines), [(len(x), x) for x in lines]
    return lines


def test_personal_answer_is_first_and_fits_80x24(tmp_path, capsys):
    """--env on a GB10: the sm121 line, affected, the release's switch and the upgrade, in one 80x24 screen."""
    capture = {"schema": "pcgkit.env/1", "packages": {"sglang": "0.5.10.post1", "flashinfer-python": "0.6.7.post3",
                                                      "torch": "2.9.1"},
               "devices": {"gpus": [{"name": "NVIDIA GB10", "compute_capability": "12.1", "simulated": False}]}}
    env = tmp_path / "env.json"
    env.write_text(json.dumps(capture))
    log = CORPUS / "04_dgxarley_glm47_spark_posix_stat.log"
    assert main(["triage", str(log), "--env", str(env)]) == 0
    screen = "\n".join(_screen(capsys.readouterr().out))
    assert "sm121 is SM12x" in screen and "affected: yes (SGLang 0.5.10.post1" in screen
    assert "turn off: `--disable-piecewise-cuda-graph`" in screen and "fixed in: SGLang 0.5.12" in screen


def test_no_affectedness_without_this_bug_in_the_log():
    """A healthy log with SGLang 0.5.12 in the environment names the release but says nothing about affected."""
    result = triage_text("Uvicorn running on http://0.0.0.0:30000\n", "x", load_data(), VIEW,
                         UserEnv("env.json", sglang="0.5.12", flashinfer="0.6.11.post1", torch="2.11.0", arch="sm120"))
    out = render(result)
    assert result.personal is not None and "0.5.12" in result.personal.environment
    assert "affected" not in out.lower() and not result.personal.notes and not result.personal.actions
    assert result.personal.full and all(" (as of " in s or "measured" in s for s in result.personal.sources)
    assert dataclasses.asdict(result.user)["sglang"] == "0.5.12"


def test_env_flag_rejects_what_is_not_a_capture(tmp_path, capsys):
    """--env with a missing file or a non-capture JSON is one line and exit 2."""
    log = tmp_path / "x.log"
    log.write_text("all good\n")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    for env in (tmp_path / "missing.json", bad):
        assert main(["triage", str(log), "--env", str(env)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("pcgkit: error: --env") and "\n" not in err


def test_render_keeps_the_answer_before_the_evidence():
    """The diagnosis, then the user's release and what to do on it, then next steps, then the evidence."""
    text = (DATA / "e2e_logs" / "seed000_capture_nvcc_subprocess.log").read_text()
    for verbose in (False, True):
        out = render(triage_text(text, "s", load_data(), VIEW, UserEnv("env.json", sglang="0.5.8")), verbose)
        assert (out.index("diagnosis:") < out.index("your release") < out.index("what to do on your release")
                < out.index("next:") < out.index("evidence"))


@pytest.mark.parametrize("release, text", [
    ("0.5.12", "[2026-06-01 10:00:00 TP0] Piecewise CUDA Graph failed with error: CUDA out of memory.\n"
               "To work around this error, add --disable-piecewise-cuda-graph to your launch command.\n"),
    ("0.5.14", "Piecewise CUDA graph failed.\nPossible solutions:\n1. set --mem-fraction-static to a smaller value "
               "(e.g., 0.8 or 0.7)\n3. disable prefill CUDA graph by --cuda-graph-backend-prefill=disabled. "
               "(Not recommended. Performance loss)\n"),
    ("0.5.16", "Fail when using backend: tc_piecewise for prefill runner.\nPossible suggestions:\n"
               "1. change to breakable by --cuda-graph-backend-prefill=breakable\n"
               "2. disable the prefill CUDA graph by --cuda-graph-backend-prefill=disabled\n"),
])
def test_each_releases_piecewise_failure_wording(release, text):
    """SGLang's piecewise failure message as each release words it (read from its wheel) is a failed capture."""
    diagnosis = _diagnose(text)
    assert diagnosis.kind is Kind.OTHER_FAILURE and diagnosis.piecewise is Piecewise.FAILED, (release, diagnosis.summary)
    assert diagnosis.log_advice, release
