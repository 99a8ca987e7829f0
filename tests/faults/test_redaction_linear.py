"""The one redaction pass, fourth look: the secret forms a hostile pass still got through `triage` (HTTP headers,
JSON/TOML/INI keys, values with '&', ';' or ','), gone whole; and the pass is linear in its input's length (an
80 KB reason used to take `issue` 12-16 s: a `\\b` that restarted inside every dotted word, every found value
replaced one by one)."""

from __future__ import annotations

import json
import time

import pytest

from pcgkit.util.redact import REDACTED, redact_text
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import write_results

from .helpers import result, run_main

SECRET = "Zq7Kp2Vw9Xy4Lm8N"
# (form as a log or a config dump shows it, the part that must not survive)
FORMS = [
    (f"> X-Api-Key: {SECRET}", SECRET),
    (f"curl -H 'X-Auth-Token: {SECRET}' https://h.invalid", SECRET),
    (f"PRIVATE-TOKEN: {SECRET}", SECRET),
    (f'{{"token": "{SECRET}", "model": "x"}}', SECRET),
    (f'{{"github_token": "{SECRET}"}}', SECRET),
    (f'{{\\"token\\": \\"{SECRET}\\"}}', SECRET),  # a JSON document printed inside a JSON string
    (f"aws_secret_access_key = {SECRET}", SECRET),
    (f"[default]\naws_secret_access_key={SECRET}\n", SECRET),
    (f'token = "{SECRET}"', SECRET),  # TOML
    (f"github_token = '{SECRET}'", SECRET),
    (f"api_key=abc{SECRET}&tail9Part", "tail9Part"),  # the tail after '&' used to survive
    (f"password=Tr0ub{SECRET};tail9Part", "tail9Part"),
    (f"--token {SECRET},tail9Part", "tail9Part"),
    (f"HF_TOKEN={SECRET},tail9Part", "tail9Part"),
    (f'"token": "a\\"b{SECRET}"', SECRET),  # an escaped quote inside the JSON value
]
# evidence beside the secrets that must stay as it was
EVIDENCE = ["max_new_tokens=16", "hf_token=None", "#token: 20, token usage: 0.05", "sorted(x, key=len)",
            "tokenizer_path='./ckpt'", "UV_KEYRING_PROVIDER=subprocess", '"model": "x"', "KeyError: 'quantization'"]


@pytest.mark.parametrize(("form", "leak"), FORMS, ids=[f"form{i}" for i in range(len(FORMS))])
def test_every_secret_form_is_redacted_whole(form, leak):
    """Headers, JSON/TOML/INI keys and values with '&', ';', ',': the whole value goes, the key stays."""
    cleaned = redact_text(form)
    assert leak not in cleaned and SECRET not in cleaned and REDACTED in cleaned, cleaned


@pytest.mark.parametrize("evidence", EVIDENCE)
def test_evidence_around_secrets_stays(evidence):
    """Counts, None, a source line's key=len, a tokenizer path and uv's keyring setting are not secrets."""
    assert redact_text(f"{evidence} api_key={SECRET}") == f"{evidence} api_key={REDACTED}"


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_triage_prints_none_of_the_forms(tmp_path, capsys, as_json):
    """`triage` (text and JSON, evidence shown) of a log holding every form prints none of the secrets."""
    log = tmp_path / "server.log"
    log.write_text("\n".join(form for form, _ in FORMS) + "\nTraceback (most recent call last):\n"
                   '  File "/x/flashinfer/jit/cpp_ext.py", line 69, in get_cuda_version\n'
                   "torch._dynamo.exc.Unsupported: Attempted to call function marked as skipped "
                   f"X-Api-Key: {SECRET}\n")
    status, out, err = run_main(["triage", str(log), "--verbose", *(["--json"] if as_json else [])], capsys)
    assert SECRET not in out + err and "tail9Part" not in out + err, out
    if as_json:
        json.loads(out)


def _adversarial(size: int) -> str:
    """Text shaped to make a backtracking rule quadratic: dotted words, repeated flags, distinct found
    secrets, unclosed quotes, long name runs, URLs without credentials."""
    units = ("a." * 50, "--max-tokens=," * 10, " --token=v%06dx" , "'token':" * 5, '"a": "', "A_" * 40,
             "http://" * 5, 'password="x\' ', " word")
    out, i = [], 0
    while sum(map(len, out)) < size:
        out.append("".join(unit if "%" not in unit else unit % (i * 10 + j) for j, unit in enumerate(units)))
        i += 1
    return "".join(out)[:size]


def _seconds(text: str) -> float:
    """CPU seconds of one redaction (this process's own time: other work on a loaded machine does not count)."""
    start = time.process_time()
    redact_text(text)
    return time.process_time() - start


def test_redaction_is_linear_in_its_input():
    """100 KB of backtracking bait redacts in well under 5 s, and 10x the input takes no more than ~30x the
    time (a quadratic pass takes ~100x)."""
    small = _adversarial(100_000)
    small_s = min(_seconds(small) for _ in range(2))
    assert small_s < 5.0, f"100 KB took {small_s:.1f} s"
    large_s = _seconds(_adversarial(1_000_000))
    assert large_s < 30 * max(small_s, 0.01), f"1 MB took {large_s:.2f} s, 100 KB {small_s:.2f} s"


def test_issue_with_an_80kb_reason_is_quick_and_redacted(tmp_path, capsys):
    """`issue` from a results file whose reason is 80 KB of dotted text with a key in it: < 5 s, key gone."""
    reason = ("a." * 40_000)[:79_000] + f" X-Api-Key: {SECRET}"
    results = tmp_path / "results.json"
    write_results(results, [result(verdict=Verdict.REPRODUCED, reason=reason)], {})
    start = time.perf_counter()
    status, out, err = run_main(["issue", "--target", "flashinfer", "--results", str(results), "--out", "-"], capsys)
    elapsed = time.perf_counter() - start
    assert status == 0, err
    assert elapsed < 5.0, f"issue took {elapsed:.1f} s"
    assert SECRET not in out + err + results.read_text()
