"""Secrets in the forms people pass them: an argument list's two items, and SGLang's quoted `key='value'` pairs."""

from __future__ import annotations

import json
import sys

import pytest

from pcgkit.util.redact import REDACTED, redact_argv, redact_text, redact_tree
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import CaseResult, write_results

from .helpers import DEVICE, VERSIONS, run_main

KEY = "s3cr3tV4lueForTheServer"
LAUNCH = ["--model-path", "./ckpt", "--api-key", KEY, "--tp", "1"]
# the start-up line SGLang's launch_server logs (server_args.py's dataclass repr), cut to the secret-bearing fields
SERVER_ARGS = ("[2026-12-01 10:00:00] server_args=ServerArgs(model_path='./ckpt', tokenizer_path='./ckpt', "
               f"api_key='{KEY}', admin_api_key='adminK3y99', ssl_keyfile_password=\"hunter2 pass\", "
               "hf_token=None, tp_size=1, max_new_tokens=16)")


def test_preflight_json_never_prints_the_api_key(monkeypatch, capsys):
    """preflight --json shows the launch as a JSON list: the item after --api-key is redacted."""
    from pcgkit.commands import preflight
    from pcgkit.preflight import probe

    monkeypatch.setattr("pcgkit.harness.versions.installed_version", lambda name: None)  # stops before any import
    monkeypatch.setattr(preflight, "run_probe", lambda python, arch, launch, timeout_s=0: probe.probe(arch, launch))
    # --python names an interpreter (the probe is replaced above): without one, preflight in an environment with no
    # SGLang says which option to pass before probing anything
    status, out, _ = run_main(["preflight", "--json", "--python", sys.executable, "--", *LAUNCH], capsys)
    assert KEY not in out and REDACTED in out, out
    assert "--api-key" in out and "./ckpt" in out  # the evidence around it stays


def test_a_launch_files_key_stays_out_of_results_json_and_junit(tmp_path):
    """A matrix --preflight result carries the launch in its evidence: results.json and JUnit properties drop the key."""
    result = CaseResult("preflight-launch", "sim-sm120", Verdict.FIXED,
                        "traced", DEVICE, VERSIONS, 0.1, evidence={"preflight_launch": {"launch": LAUNCH}})
    write_results(tmp_path / "results.json", [result], {})
    text = (tmp_path / "results.json").read_text()
    assert KEY not in text and json.loads(text)["results"][0]["evidence"]["preflight_launch"]["launch"][3] == REDACTED
    assert all(KEY not in value for _, value in result.junit_properties())


@pytest.mark.parametrize("text", [json.dumps(LAUNCH), json.dumps(LAUNCH, indent=2), str(LAUNCH), repr(tuple(LAUNCH))])
def test_an_argument_list_printed_any_way_is_redacted(text):
    """JSON (one line or indented) and Python reprs of an argv: the value after a secret flag goes."""
    assert KEY not in redact_text(text) and "./ckpt" in redact_text(text)


def test_list_and_argv_redaction_is_pairwise_and_keeps_other_flags():
    """redact_tree/redact_argv pair a secret flag with the next item; --max-new-tokens 16 is evidence."""
    assert redact_tree(["--max-new-tokens", "16", "--hf-token", "plainword"]) == ["--max-new-tokens", "16", "--hf-token",
                                                                                   REDACTED]
    assert "plainword" not in redact_argv(("sglang", "--api-key", "plainword"))


def test_triage_never_prints_serverargs_quoted_secrets(tmp_path, capsys):
    """triage of a log with SGLang's ServerArgs(...) line: api_key='...' and password="..." are gone, text and JSON."""
    log = tmp_path / "server.log"
    log.write_text(SERVER_ARGS + "\nTraceback (most recent call last):\n"
                   '  File "/x/sglang/srt/model_executor/piecewise_cuda_graph_runner.py", line 10, in capture\n'
                   "torch._dynamo.exc.Unsupported: skipped while tracing " + SERVER_ARGS.split("] ", 1)[1] + "\n")
    for extra in (["--verbose"], ["--json"]):  # the forms that show the evidence lines
        _, out, err = run_main(["triage", str(log), *extra], capsys)
        assert "ServerArgs(" in out  # the line is shown: its secrets are what must go
        for secret in (KEY, "adminK3y99", "hunter2"):
            assert secret not in out + err
    cleaned = redact_text(SERVER_ARGS)
    assert "tokenizer_path='./ckpt'" in cleaned and "hf_token=None" in cleaned and "max_new_tokens=16" in cleaned
