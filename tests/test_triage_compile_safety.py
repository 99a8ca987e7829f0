"""The certificate's JIT-loader set in triage's `related` diagnosis and the advice model (issue 39 item 5), over the
committed certificates and a real public log (tests/data/triage_logs/41_*, vllm-omni#4988, provenance in INDEX.toml)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pcgkit.advice import Evidence, compile_unsafe
from pcgkit.advice.values import UnsafeCall
from pcgkit.commands.triage import catalog_view, triage_text
from pcgkit.triage.advice import load_data
from pcgkit.triage.diagnose import Kind
from pcgkit.triage.userenv import UserEnv

LOGS = Path(__file__).parent / "data" / "triage_logs"
VLLM_OMNI = LOGS / "41_vllmomni4988_single_prefill_open_fullgraph.log"
SGLANG_FP4 = LOGS / "01_sglang23386_dgxspark_nvcc_threading_lock.log"


@pytest.fixture(scope="module")
def data():
    return load_data()


def _call(target: str, release: str) -> UnsafeCall:
    return UnsafeCall(target, "flashinfer-jit", "flashinfer/jit/core.py:1:register", release, "sm120", True,
                      "simulated sm120 on CPU", "2026-12-05", f"fixtures/certificates/certificate-{release}-sm120.json")


def test_the_loaded_evidence_carries_each_certificates_jit_loader_set(data):
    """load_evidence reads every committed whole certificate: single_prefill_with_kv_cache is in 0.7.4's set."""
    on_074 = {u.target for u in data.evidence.unsafe_calls if u.flashinfer == "0.7.4"}
    assert "flashinfer.single_prefill_with_kv_cache" in on_074
    assert all(u.simulated and u.created for u in data.evidence.unsafe_calls)


def test_the_vllm_omni_log_is_related_and_names_the_certificate(data):
    """vllm-omni#4988's single_prefill_with_kv_cache under fullgraph: related, and the certificates say that call is
    not compile-safe, each release named, simulated, dated (the log names no FlashInfer release)."""
    t = triage_text(VLLM_OMNI.read_text(), VLLM_OMNI.name, data, catalog_view())
    assert t.diagnosis.kind is Kind.RELATED
    assert "single_prefill_with_kv_cache" in t.diagnosis.flashinfer_calls
    said = t.diagnosis.compile_safety
    assert said.startswith("this FlashInfer call (flashinfer.single_prefill_with_kv_cache) is not compile-safe on FlashInfer")
    assert "0.7.4" in said and "simulated SM120" in said and "2026-12-05" in said
    assert t.advice is not None and "certificate-0.7.4-sm120.json" in t.advice.compile_safety[0]
    assert t.to_dict()["compile_safety"] == said


def test_the_users_release_picks_its_own_certificate_or_none(data):
    """With FlashInfer 0.7.4 given: 'on this release (certificate of 0.7.4, ...)'; with an uncertified release
    nothing is claimed."""
    text = VLLM_OMNI.read_text()
    t = triage_text(text, VLLM_OMNI.name, data, catalog_view(), UserEnv("flags", flashinfer="0.7.4"))
    assert t.diagnosis.compile_safety == ("this FlashInfer call (flashinfer.single_prefill_with_kv_cache) is not "
                                          "compile-safe on this release (certificate of 0.7.4, simulated SM120, 2026-12-05)")
    t = triage_text(text, VLLM_OMNI.name, data, catalog_view(), UserEnv("flags", flashinfer="0.6.3"))
    assert t.diagnosis.kind is Kind.RELATED and t.diagnosis.compile_safety == ""
    assert t.advice is not None and t.advice.compile_safety == ()


def test_a_known_bug_log_gets_no_compile_safety_line(data):
    """The certificate speaks only on `related`: this bug's own log keeps its own diagnosis."""
    t = triage_text(SGLANG_FP4.read_text(), SGLANG_FP4.name, data, catalog_view())
    assert t.diagnosis.kind is Kind.KNOWN_BUG and t.diagnosis.compile_safety == ""


def test_compile_unsafe_takes_the_first_listed_call_and_claims_nothing_else():
    """Pure: the outermost FlashInfer call a certificate lists wins; an unlisted call or another release: None."""
    evidence = Evidence(unsafe_calls=(_call("flashinfer.rmsnorm", "0.7.4"), _call("flashinfer.rmsnorm", "0.7.0")))
    found = compile_unsafe(evidence, ("_auto_dump_wrapper", "rmsnorm"), None)
    assert found is not None and found.call == "flashinfer.rmsnorm"
    assert "FlashInfer 0.7.0, 0.7.4" in found.headline and found.statement.simulated
    assert [s.ref.split(" ")[0] for s in found.statement.sources] == [
        "fixtures/certificates/certificate-0.7.0-sm120.json", "fixtures/certificates/certificate-0.7.4-sm120.json"]
    assert compile_unsafe(evidence, ("silu_and_mul",), None) is None
    assert compile_unsafe(evidence, ("rmsnorm",), "0.6.12") is None


def test_the_advice_for_a_certified_release_counts_its_calls_not_compile_safe(data):
    """advise(): a FlashInfer release with a certificate gets one compile-safety statement whose count is that
    certificate's jit_loader_breaks list, sourced to the file; another arch family or an uncertified release: none."""
    import json

    from pcgkit.advice import Versions, advise

    cert = json.loads((Path(__file__).parent.parent / "fixtures" / "certificates" / "certificate-0.7.4-sm120.json").read_text())
    answer = advise(Versions(flashinfer="0.7.4"), "sm120", data.evidence)
    said = answer.certificate
    assert said is not None and said.topic == "compile-safety" and said.simulated
    assert f"finds {len(cert['jit_loader_breaks'])} public calls not compile-safe on this release" in said.text
    assert said.sources[0].ref.startswith("fixtures/certificates/certificate-0.7.4-sm120.json")
    assert said in answer.statements()
    assert advise(Versions(flashinfer="0.7.4"), "sm90", data.evidence).certificate is None
    assert advise(Versions(flashinfer="0.6.3"), "sm120", data.evidence).certificate is None
