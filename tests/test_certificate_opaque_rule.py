"""The certificate's opaque-op class (issue 34): an op counts as opaque-and-fine only if its fake executed here;
a committed row whose fake did not run is shown not-judged with the reason."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize("fake_vs_real, ran", [
    ("agrees", True),
    ("agrees with meta", True),
    ("drift: meta ((4, 32),), fake ((4, 16),)", True),
    ("not run here: nothing ran on cpu (kernels: CUDA); on meta tensors the op raised NotImplementedError: x", True),
    ("fake raised RuntimeError: shape", False),
    ("not run here: the real op raised on cuda:0: RuntimeError: fp4_quantize requires SM100 or newer; got SM90", False),
    ("", False),
    (None, False),
])
def test_fake_ran_reads_whether_the_fake_executed(fake_vs_real, ran):
    """Only a fake_vs_real written after the fake returned counts as a fake that executed."""
    from lab.sweep.opjudge import fake_ran

    assert fake_ran(fake_vs_real) is ran


def _cert(name):
    from pcgkit.resources import fixture

    return json.loads((fixture("certificates") / name).read_text())


def test_a_committed_opaque_op_whose_fake_did_not_run_is_not_judged():
    """0.7.4 on the real H200: fp4_quantize was `opaque-op` with only the real op's refusal recorded: now not-judged."""
    from pcgkit.sweep.certificate import with_op_rule

    cert = _cert("certificate-0.7.4-sm90-real-ops.json")
    [row] = [r for r in with_op_rule(cert)["ops"] if r["target"] == "torch.ops.flashinfer.fp4_quantize"]
    assert row["status"] == "not-judged" and "fake did not execute here" in row["note"]


def test_opaque_ops_whose_fake_ran_stay_opaque_and_the_page_loader_applies_the_rule():
    """0.7.4 simulated SM120: the 62 ops whose fake agrees with meta stay opaque-op; load_certificates applies the rule."""
    from pcgkit.report.certificate_page import load_certificates
    from pcgkit.sweep.certificate import with_op_rule

    cert = _cert("certificate-0.7.4-sm120.json")
    assert [r["status"] for r in with_op_rule(cert)["ops"]] == [r["status"] for r in cert["ops"]]
    loaded = {(c["flashinfer"], c["arch"], c.get("device")): c for c in load_certificates()}
    statuses = {r["status"] for c in loaded.values() for r in c["ops"]
                if r["status"] == "opaque-op" and not r.get("fake_vs_real", "").startswith(("agrees", "drift", "not run here: nothing"))}
    assert statuses == set()


def test_the_certificate_page_says_opaque_op_needs_the_fake_to_execute():
    """The HTML page states the rule and shows the reclassified H200 row's reason."""
    from pcgkit.report.certificate_page import build_certificate_page, load_certificates

    page = build_certificate_page(load_certificates())
    assert "its\nfake executed here" in page or "its fake executed here" in page.replace("\n", " ")
    assert "fake did not execute here" in page
