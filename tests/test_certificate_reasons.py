"""A not-judged row's reason by class: the arch refusals (no SM120 input can change them) apart from the input
contracts the right inputs meet. The row texts are the certificate's own, from a trial run of flashinfer-python
0.7.0's wheel (simulated SM120, torch 2.9.1, 2026-12-05); the messages are the release's (kda_decode's packed path,
grouped_mm/core.py:168, rope.py:1209)."""

from __future__ import annotations

from lab.sweep.coverage import ARCH_REASON, NOT_JUDGED_REASONS, coverage, not_judged_reason

_OWN = "the release's own check raised, under the trace and when run: "
ROWS = [
    {"target": "flashinfer.packed_kda_decode", "status": "not-judged", "where": _OWN + "ValueError: mixed_qkv must be a CUDA tensor",
     "on_fake_cuda": _OWN + "RuntimeError: packed KDA T=1 requires compute capability 10.0 or 10.3 in the SM100 family; got 12.0"},
    {"target": "flashinfer.tgv_gemm_sm100", "status": "not-judged",
     "where": _OWN + "ValueError: TGV GEMM requires SM100, SM103 architecture"},
    {"target": "flashinfer.fp8_paged_mqa_logits", "status": "not-judged",
     "where": _OWN + "BackendSupportedError: fp8_paged_mqa_logits does not support compute capability 120"},
    {"target": "flashinfer.grouped_mm_fp8", "status": "not-judged",
     "where": _OWN + "ValueError: b must be float8_e4m3fn or float8_e5m2, got torch.bfloat16"},
    {"target": "flashinfer.fused_dit_residual_layernorm_scale_shift", "status": "not-judged",
     "where": _OWN + "ValueError: input must be a CUDA tensor",
     "on_fake_cuda": _OWN + "ValueError: scale row stride must be 18432 (6 * hidden_dim, from WAN's temb.chunk(6, dim=2) pattern), got 3072."},
    {"target": "flashinfer.cutlass_fused_moe", "status": "not-judged",
     "where": "the release rejected the inputs: ValueError: Expected a cuda device, but got: cpu",
     "on_fake_cuda": "simulation gap (Found no NVIDIA driver) at core.py:1528:cutlass_fused_moe"},
    {"target": "flashinfer.xqa_mla", "status": "not-judged",
     "where": "not judged: no inputs (the docstring gives no shape for tensor 'semaphores')"},
    {"target": "flashinfer.rmsnorm", "status": "breaks", "where": "gb0007 cpp_ext.py"},
]


def test_arch_refusals_are_their_own_class_and_the_retry_is_the_later_word():
    """The three arch messages are "refused on this arch"; dtype and stride contracts are the release's check on
    the inputs; a CPU refusal whose retry on the simulated device met a driver is a simulation gap."""
    got = {r["target"].split(".")[-1]: not_judged_reason(r) for r in ROWS if r["status"] == "not-judged"}
    assert got == {"packed_kda_decode": ARCH_REASON, "tgv_gemm_sm100": ARCH_REASON, "fp8_paged_mqa_logits": ARCH_REASON,
                   "grouped_mm_fp8": "the release's own check refused the inputs",
                   "fused_dit_residual_layernorm_scale_shift": "the release's own check refused the inputs",
                   "cutlass_fused_moe": "simulation gap", "xqa_mla": "no inputs"}
    assert set(got.values()) <= set(NOT_JUDGED_REASONS)


def test_coverage_counts_the_judgeable_set_and_each_reason():
    """Coverage says listed less the arch refusals, and the not-judged count per class (the judged row is none)."""
    cov = coverage(ROWS, [])
    assert cov["callables judgeable on this arch (listed less refused on this arch)"] == 8 - 3
    assert cov["callables not judged by reason"] == {ARCH_REASON: 3, "the release's own check refused the inputs": 2,
                                                     "simulation gap": 1, "no inputs": 1}
    assert sum(cov["callables not judged by reason"].values()) == cov["callables listed"] - cov["callables judged"]


def test_a_break_whose_run_met_the_arch_refusal_is_not_judged_on_this_arch():
    """0.7.0's silu_and_mul_mxfp8_quantize with inputs that meet its shape checks: the trace breaks at
    `gated_input.data_ptr() % 32` (gb0059), then the run raises "requires SM100 or SM103" (gated_act_mxfp8.py:50):
    not judged, in the arch class; the same break with a driver error stays `breaks`."""
    from lab.sweep.certificate_build import judged_status

    status, where = judged_status("breaks-elsewhere", "gb0059 gated_act_mxfp8.py:47:_validate_inputs", False, "RuntimeError",
                                  "RuntimeError: fused gated MXFP8 quantization requires SM100 or SM103", "gb0059")
    assert status == "not-judged" and not_judged_reason({"where": where}) == ARCH_REASON
    backend = "BackendSupportedError: mm_fp8 does not support backend 'trtllm_low_latency' with capability 120"
    assert judged_status("breaks-elsewhere", "gb0007 x.py:1", False, "BackendSupportedError", backend, "gb0007")[0] == "breaks"
    assert not_judged_reason({"where": _OWN + backend}) == "the release's own check refused the inputs"
    assert judged_status("breaks-elsewhere", "gb0156 rope.py:356", False, "RuntimeError",
                         "RuntimeError: No supported CUDA architectures found for major versions None.", "gb0156")[0] == "breaks"


def test_a_spec_whose_target_the_release_lacks_is_a_not_judged_row_not_a_stopped_certificate():
    """A hand spec scoped wider than the release exports (0.6.12 and fused_dit_residual_layernorm_scale_shift,
    2026-12-05: the whole run ended "internal error: _Missing") gives its own not-judged row with the reason; other
    rows' judging is untouched."""
    from lab.sweep.certify import judged_or_missing
    from pcgkit.sweep.engine import MissingTarget, resolve

    def judge():
        resolve("flashinfer.no_such_entry_point_in_any_release")
        raise AssertionError("resolve returned")

    row = judged_or_missing(judge, "flashinfer.no_such_entry_point_in_any_release", "spec only (not exported)")
    assert row["status"] == "not-judged"
    assert "does not resolve in this release" in row["where"] and "no_such_entry_point_in_any_release" in row["where"]
    assert judged_or_missing(lambda: {"status": "breaks"}, "t", "callable") == {"status": "breaks"}
    assert issubclass(MissingTarget, Exception)


def test_committed_certificates_carry_no_home_cache_path_or_colour_code():
    """The re-made 0.7.4 certificate had '/root/.cache/flashinfer/...' (a JIT spec's repr) and a CuTe-DSL error's
    ANSI colour codes with '/root/.cache/pcgkit/certificate-envs/...' cut mid-path (2026-12-05): scrub maps home
    caches to '~/.cache/' and drops colour codes, and no committed certificate keeps either."""
    from lab.sweep.certificate_build import scrub
    from pcgkit import resources

    assert scrub(scrub("at /root/.cache/flashinfer/0.7.4/generated/x \x1b[91m\x1b[1merror:\x1b[0m /home/u/.cache/pcgkit/certifi")) == (
        "at ~/.cache/flashinfer/0.7.4/generated/x error: ~/.cache/pcgkit/certifi")
    folder = resources.fixture("certificates")
    for path in sorted(folder.glob("certificate-*")):
        text = path.read_text()
        assert "/root/" not in text and "\x1b[" not in text and "\\u001b[" not in text, path.name


def test_each_committed_simulated_page_is_its_json_rendered():
    """certificate-X-sm120.md is render_certificate(certificate-X-sm120.json) byte for byte (a page edited or
    scrubbed apart from its data drifts; 2026-12-05 the scrubbed pages had cut text the JSON no longer had); a row
    judged again on the simulated cuda:0 says so on the page."""
    import json

    from lab.sweep.certificate_build import render_certificate
    from pcgkit import resources

    folder = resources.fixture("certificates")
    pages = sorted(folder.glob("certificate-*-sm120.json"))
    assert len(pages) >= 5
    for path in pages:
        assert render_certificate(json.loads(path.read_text())) == path.with_suffix(".md").read_text(), path.name
    assert "inputs on cuda:0" in (folder / "certificate-0.7.0-sm120.md").read_text()
