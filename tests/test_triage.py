"""pcgkit triage: the log engine on pasted formats, the corpus labels, the CLI contract, speed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import tomllib

from lab.triage.corpus import false_known_bug, load_corpus
from pcgkit.cli import main
from pcgkit.commands.triage import catalog_view, triage_text
from pcgkit.triage.advice import load_data
from pcgkit.triage.diagnose import Kind, diagnose
from pcgkit.values.logread import read_log

CORPUS = Path(__file__).resolve().parent / "data" / "triage_logs"
VIEW = catalog_view()
SCORED = load_corpus(CORPUS, VIEW.modes)


@pytest.mark.parametrize("scored", SCORED, ids=[s.file for s in SCORED])
def test_corpus_log_gets_its_label(scored):
    """Each corpus log (real pastes, H200 runs, the kit's own) gets its indexed diagnosis, mode and piecewise state."""
    assert str(scored.got.kind) == scored.label, scored.got.summary
    assert (scored.got.mode or "") == (scored.mode if scored.label == "known-bug" else "")
    assert str(scored.got.piecewise) == scored.piecewise, scored.got.piecewise_reason


def test_no_known_bug_for_a_log_without_the_bug():
    """No log labelled anything but known-bug is called known-bug."""
    assert false_known_bug(SCORED) == []


def test_corpus_meets_its_size_and_provenance():
    """At least 20 real logs, 8+ not this bug, every public one with a source URL, byte-identical files indexed."""
    index = tomllib.loads((CORPUS / "INDEX.toml").read_text())["log"]
    real = [e for e in index if e["origin"] != "kit"]
    assert len(real) >= 20 and sum(e["label"] != "known-bug" for e in real) >= 8
    assert all(e["source"].startswith("https://") for e in index if e["origin"] == "public")
    assert {p.name for p in CORPUS.glob("*.log")} == {e["file"] for e in index if e["origin"] != "kit"}


def test_prefixes_ansi_crlf_and_bare_exception_are_read():
    """vLLM/rank/timestamp prefixes, ANSI colour and CRLF do not hide an exception line or its frames."""
    log = ("(Worker_TP0 pid=7) ERROR 07-08 19:24:17 [core.py:811] Traceback (most recent call last):\r\n"
           '(Worker_TP0 pid=7) ERROR 07-08 19:24:17 [core.py:811]   File "/x/site-packages/flashinfer/jit/cpp_ext.py", line 73, in get_cuda_version\r\n'
           "\x1b[31m[2026-02-28 15:04:30 TP0] Exception: boom\x1b[0m\r\n")
    failure = read_log(log).failure
    assert failure is not None and failure.exception_type == "Exception" and failure.head == "boom"
    assert failure.line.number == 3
    assert str(failure.signature.innermost_library_frame) == "flashinfer/jit/cpp_ext.py:73:get_cuda_version"


def test_earliest_failure_wins_over_later_noise():
    """An OOM before a later dynamo message is the failure judged: other-failure, never known-bug."""
    log = ("torch.OutOfMemoryError: CUDA out of memory.\n"
           "torch._dynamo.exc.Unsupported: Attempted to call function marked as skipped\n"
           "from user code:\n"
           '  File "/x/site-packages/flashinfer/quantization/fp4_quantization.py", line 700, in fp4_quantize\n')
    diagnosis = diagnose(read_log(log), VIEW.modes)
    assert diagnosis.kind is Kind.OTHER_FAILURE and "out of memory" in diagnosis.summary


def test_frames_only_paste_says_what_is_missing():
    """A known-bug call made on frames alone says so in `missing` and is not high confidence."""
    text = (CORPUS / "03_dgxarley_glm47_spark_sigquit_nvcc.log").read_text()
    diagnosis = diagnose(read_log(text), VIEW.modes)
    assert diagnosis.kind is Kind.KNOWN_BUG and diagnosis.mode == "mode1"
    assert "matched on frames; no exception line" in diagnosis.missing and diagnosis.confidence != "high"
    assert any(e.why == "innermost FlashInfer frame" and e.line == 19 for e in diagnosis.evidence)


def test_advice_comes_from_the_kit_data():
    """Advice names the release's own switch, the advice model's upgrade for the log's SGLang (not FlashInfer) and the matrix snapshot."""
    text = ("sglang==0.5.10.post1 flashinfer_python==0.6.7.post3\nCurrent capability: 121\n"
            + (CORPUS / "04_dgxarley_glm47_spark_posix_stat.log").read_text())
    result = triage_text(text, "x", load_data(), VIEW)
    assert result.advice is not None
    assert "--disable-piecewise-cuda-graph" in result.advice.workaround[0]
    assert any(f.startswith("Upgrade SGLang to 0.5.12") and "sglang#23745" in f for f in result.advice.fixed_in)
    assert any("upgrading FlashInfer alone does not help" in f for f in result.advice.fixed_in)
    assert any("sglang-0.5.10.post1" in m and "simulated" in m for m in result.advice.matrix)
    assert not triage_text("all good\n", "y", load_data(), VIEW).advice


def test_cli_json_schema_and_exit_codes(tmp_path, capsys):
    """--json prints pcgkit.triage/2 and exits 0; empty, binary and missing input exit 2 with one line."""
    assert main(["triage", "--json", str(CORPUS / "01_sglang23386_dgxspark_nvcc_threading_lock.log")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["schema"] == "pcgkit.triage/2" and out["logs"][0]["diagnosis"] == "known-bug"
    empty, binary = tmp_path / "empty.log", tmp_path / "bin.log"
    empty.write_text("  \n")
    binary.write_bytes(b"\x00\x01\x02log")
    for bad in (empty, binary, tmp_path / "missing.log"):
        assert main(["triage", str(bad)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("pcgkit: error:") and "\n" not in err


def test_a_large_log_triages_fast():
    """A 2 MB log (real logs repeated, the bug at the end) triages in well under the 10 MB budget's pace."""
    filler = (CORPUS / "30_h200_sglang0512_control_bf16_healthy.log").read_text()
    text = filler * (2 * 1024 * 1024 // len(filler)) + (CORPUS / "04_dgxarley_glm47_spark_posix_stat.log").read_text()
    start = time.perf_counter()
    result = triage_text(text, "big", load_data(), VIEW)
    assert result.diagnosis.kind is Kind.KNOWN_BUG and result.diagnosis.mode == "mode2"
    assert time.perf_counter() - start < 10
