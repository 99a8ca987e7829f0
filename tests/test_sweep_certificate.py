"""The trace-safety certificate: discovery, the unroller's rules, ops judged as ops, the table and the diff.

Pure tests first (no torch); then small real slices in the reference environment (flashinfer 0.6.1),
which, like test_sweep_trace.py, must fail rather than skip on a broken install. The full
certificate per release is an explicit command (`bin/pcgkit lab certify`), never run here.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from lab.sweep.coverage import coverage
from lab.sweep.discovery import (
    NOT_JUDGED_NO_INPUTS,
    Discovery,
    PublicCallable,
    RegisteredOp,
    counts,
    plan_judgement,
)
from lab.sweep.unroll_rules import ANSWER_QUERY, NOT_CONSTANT, PRE_BUILD, StackCall, candidates
from pcgkit.sweep.certificate import diff, diffs, render_section, table


def _discovery() -> Discovery:
    return Discovery(
        flashinfer="9.9", torch="2.9.1", exported_by="__all__",
        callables=(PublicCallable("flashinfer.rmsnorm", "function", "flashinfer.norm", "(input, weight)"),
                   PublicCallable("flashinfer.Wrapper", "class", "flashinfer.x", None),
                   PublicCallable("flashinfer.Wrapper.run", "method", "flashinfer.x", "(self, q)"),
                   PublicCallable("flashinfer.unspecified", "function", "flashinfer.y", "(x)")),
        ops=(RegisteredOp("flashinfer::fp4_quantize", ("flashinfer::fp4_quantize(Tensor x) -> Tensor",), True, ("CompositeExplicitAutograd",)),
             RegisteredOp("trtllm::no_fake", ("trtllm::no_fake(Tensor x) -> Tensor",), False, ("CUDA",))),
    )


def test_every_discovered_callable_without_a_spec_is_counted_not_judged():
    """A callable with no spec is `not judged: no inputs` in the plan and in the counts; classes are not rows."""
    found = _discovery()
    plan = plan_judgement(found, {"flashinfer.rmsnorm": "rmsnorm"})
    by_target = {j.target: j for j in plan}
    assert set(by_target) == {"flashinfer.rmsnorm", "flashinfer.Wrapper.run", "flashinfer.unspecified",
                              "torch.ops.flashinfer.fp4_quantize", "torch.ops.trtllm.no_fake"}
    assert by_target["flashinfer.unspecified"].reason == NOT_JUDGED_NO_INPUTS
    numbers = counts(found, plan)
    assert numbers["public callables"] == 3 and numbers["callables judged"] == 1
    assert numbers["callables not judged (no inputs)"] == 2
    assert numbers["registered ops"] == 2 and numbers["ops with a fake"] == 1


def test_discovery_round_trips_through_json():
    """Discovery.to_dict / from_dict keep every field (the command writes it; reports read it back)."""
    found = _discovery()
    assert Discovery.from_dict(json.loads(json.dumps(found.to_dict()))) == found


def test_unroller_answers_queries_innermost_first_then_prebuilds_the_outermost_loader():
    """Candidates: non-loader functions innermost first, loaders outermost first; symbolic arguments and
    already-patched functions are never candidates."""
    stack = [  # innermost first, as pathrecord sees the failing stack
        StackCall("get_cuda_version", "flashinfer/jit/cpp_ext.py", 63, ()),
        StackCall("gen_fp4_quantization_module", "flashinfer/fp4_quantization.py", 110, (("nvcc_flags", ("-x",)), ("device_arch", "120"))),
        StackCall("get_fp4_quantization_module", "flashinfer/fp4_quantization.py", 137, (("backend", "120"),)),
        StackCall("fp4_quantize", "flashinfer/fp4_quantization.py", 640, (("input", NOT_CONSTANT),)),
    ]
    order = [(c.kind, c.call.function) for c in candidates(stack, frozenset())]
    assert order == [(ANSWER_QUERY, "get_cuda_version"), (PRE_BUILD, "get_fp4_quantization_module"),
                     (PRE_BUILD, "gen_fp4_quantization_module")]
    patched = frozenset({"flashinfer/jit/cpp_ext.py:63:get_cuda_version"})
    assert [c.call.function for c in candidates(stack, patched)][0] == "get_fp4_quantization_module"


def _cert(version: str, callables: list[dict], ops: list[dict] = ()) -> dict:
    return {"schema": "pcgkit.certificate/1", "flashinfer": version, "torch": "2.9.1", "arch": "sm120",
            "simulated": True, "device": "simulated sm120 on CPU",
            "counts": {"public callables": len(callables), "registered ops": len(ops)},
            "coverage": coverage(callables, list(ops)), "callables": callables, "ops": list(ops)}


def _row(target: str, status: str, sites: int = 0) -> dict:
    return {"target": target, "status": status, "sites": [{"index": i} for i in range(sites)]}


def test_diff_names_what_became_traceable_broke_appeared_and_disappeared():
    """Release to release: traced<->breaks flips, a changed site count, new and gone targets; unjudged is neither."""
    old = _cert("0.6.1", [_row("a", "breaks", 3), _row("b", "traces-and-runs"), _row("c", "breaks", 2), _row("gone", "breaks", 1),
                          _row("u", "not-judged")])
    new = _cert("0.6.12", [_row("a", "opaque-op"), _row("b", "breaks", 1), _row("c", "breaks", 1), _row("new", "traces-and-runs"),
                           _row("u", "traces-and-runs")])
    d = diff(old, new)
    assert [i["target"] for i in d["became_traceable"]] == ["a"]
    assert [i["target"] for i in d["broke"]] == ["b"]
    assert {i["target"] for i in d["changed"]} == {"c", "u"}
    assert d["appeared"] == [{"target": "new", "status": "traces-and-runs"}] and d["disappeared"] == ["gone"]
    assert [(x["from"], x["to"]) for x in diffs([new, old])] == [("0.6.1", "0.6.12")]  # sorted by version


def test_table_counts_statuses_and_breaks_by_site_count_and_the_section_says_simulated():
    """The per release x arch row counts callables and ops apart; breaks are grouped by their site count."""
    cert = _cert("0.6.1", [_row("a", "breaks", 3), _row("b", "breaks", 3), _row("c", "traces-and-runs")],
                 [{"target": "torch.ops.x.y", "status": "fake-missing", "has_fake": False}])
    row = table([cert])[0]
    assert row["callables"] == {"breaks": 2, "traces-and-runs": 1} and row["ops"] == {"fake-missing": 1}
    assert row["breaks_by_sites"] == {3: 2}
    text = "\n".join(render_section([cert]))
    assert "3 sites: 2" in text and "simulated" in text


def test_the_guard_lets_a_query_ask_a_tool_its_version_and_nothing_else():
    """The unroller's version query lets exactly `<tool> --version` through the guard; a build command stays refused."""
    from lab.sweep.unroll import version_query
    from pcgkit.sweep.guard import KernelLoadRefused, allowing, no_kernels

    with no_kernels(), allowing(version_query):
        subprocess.run(["true", "--version"], check=True)
        with pytest.raises(KernelLoadRefused):
            subprocess.run(["true", "-c", "x.cu"], check=True)
    with no_kernels(), pytest.raises(KernelLoadRefused):
        subprocess.run(["true", "--version"], check=True)


def test_ops_judged_as_ops_find_a_drifting_and_a_missing_fake():
    """A CPU op whose fake lies about the output shape is fake-drift; one without a fake is fake-missing;
    an honest one traces as one opaque node with its fake agreeing."""
    import torch

    from lab.sweep.discovery import RegisteredOp
    from lab.sweep.opjudge import judge_op

    @torch.library.custom_op("pcgkit_test::honest", mutates_args=(), schema="(Tensor x) -> Tensor")
    def honest(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    honest.register_fake(lambda x: torch.empty_like(x))

    @torch.library.custom_op("pcgkit_test::liar", mutates_args=(), schema="(Tensor x) -> Tensor")
    def liar(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    liar.register_fake(lambda x: x.new_empty(x.shape[0]))

    @torch.library.custom_op("pcgkit_test::no_fake", mutates_args=(), schema="(Tensor x) -> Tensor")
    def no_fake(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    call = {"caller": "test", "args": [{"tensor": [4, 8], "dtype": "float32", "device": "cpu"}], "kwargs": {}}
    kernels = ("CompositeExplicitAutograd",)
    judged = {name: judge_op(RegisteredOp(f"pcgkit_test::{name}", (), has_fake, kernels), call, "cpu", True)
              for name, has_fake in (("honest", True), ("liar", True), ("no_fake", False))}
    assert judged["honest"].cls == "opaque-op" and judged["honest"].fake_vs_real == "agrees"
    assert judged["honest"].traced_as_one_node is True
    assert judged["liar"].cls == "fake-drift" and "drift" in judged["liar"].fake_vs_real
    assert judged["no_fake"].cls == "fake-missing"


def test_discovery_reads_the_installed_release_exports_and_registered_op():
    """flashinfer 0.6.1 (reference env): rmsnorm and a wrapper's run() are public callables; its one
    registered op, trtllm::reswizzle_sf, is read with its schema and fake."""
    import flashinfer

    from lab.sweep.discover import public_callables, registered_op

    found, exported_by = public_callables(flashinfer)
    targets = {c.target for c in found}
    assert "flashinfer.rmsnorm" in targets and "flashinfer.BatchDecodeWithPagedKVCacheWrapper.run" in targets
    assert exported_by in ("__all__", "dir()")
    op = registered_op("trtllm::reswizzle_sf")
    assert op.has_fake and op.schemas and op.schemas[0].startswith("trtllm::reswizzle_sf(")


def test_fp4_quantize_unrolled_on_the_seed_release_lists_every_site_in_order(monkeypatch):
    """flashinfer 0.6.1, simulated SM120: nvcc's subprocess (query answered), FlashInfer's JIT loader
    (pre-built), then the kernel call dynamo cannot trace (Function.__call__): three sites, in order."""
    from lab.sweep.unroll import unroll_spec
    from pcgkit.harness.casekit import cuda_toolkit_root
    from pcgkit.harness.hardware import SIMULATED_ARCHES
    from pcgkit.sweep.engine import installed_versions
    from pcgkit.sweep.specs import load_specs

    if cuda_toolkit_root():
        monkeypatch.setenv("CUDA_HOME", cuda_toolkit_root())
    spec = next(s for s in load_specs() if s.id == "fp4_quantize")
    unrolled = unroll_spec(spec, "sm120", SIMULATED_ARCHES["sm120"], installed_versions())
    sites = unrolled.sites
    assert [s.action for s in sites] == ["answer-query", "pre-build", "stop"], sites
    assert sites[0].frame.startswith("flashinfer/jit/cpp_ext.py") and sites[0].patched.endswith(":get_cuda_version")
    assert sites[1].frame.startswith("flashinfer/jit/") and sites[1].patched.endswith(":get_fp4_quantization_module")
    assert sites[1].simulated  # no kernel is built on a CPU host
    assert sites[2].graph_break_id == "gb0156" and "Function" in sites[2].what
    assert not unrolled.traces_after


def test_committed_certificates_carry_no_host_paths_or_object_addresses():
    """scrub() strips install roots and `at 0x..` addresses; every committed certificate is already scrubbed."""
    from lab.sweep.certificate_build import scrub
    from pcgkit.report.certificate_page import load_certificates

    raw = {"a": ["/x/.venv/lib/python3.12/site-packages/flashinfer/jit/core.py:1:f", "<m at 0x7fda15>"], "b": "/tmp/site/flashinfer/x.py"}
    assert scrub(raw) == {"a": ["flashinfer/jit/core.py:1:f", "<m>"], "b": "flashinfer/x.py"}
    certificates = load_certificates()
    assert {c["flashinfer"] for c in certificates} >= {"0.6.1", "0.6.12", "0.7.0", "0.7.4"}
    assert any(not c["simulated"] for c in certificates)  # the H200's run of the newest release's ops
    for cert in certificates:
        assert scrub(cert) == cert, cert["flashinfer"]


def test_the_section_and_the_page_show_coverage_before_statuses_and_diff():
    """Coverage (judged / listed, per input source) comes first, then the status table, then the diff."""
    from pcgkit.report.certificate_page import build_certificate_page

    old = _cert("0.7.0", [_row("a", "breaks", 2), _row("b", "not-judged")])
    new = _cert("0.7.4", [{**_row("a", "traces-and-runs"), "inputs_from": "docstring"}, _row("b", "not-judged")])
    text = "\n".join(render_section([old, new]))
    assert "| 0.7.4 | sm120 | simulated sm120 on CPU | 1 / 2 | 0 / 0 | docstring 1 | 0 |" in text
    assert text.index("callables judged / listed") < text.index("| kind |") < text.index("0.7.0 → 0.7.4")
    page = build_certificate_page([old, new])
    assert page.index("Coverage: judged out of listed") < page.index("<h2>Statuses</h2>") < page.index("Release to release")


def test_the_matrix_samples_certificate_page_is_the_committed_certificates_rendered_now():
    """reports/samples/matrix-2026-12-01/certificate.html is what this checkout renders from fixtures/certificates/
    and the sample's matrix (coverage first): a certificate or page change without `regenerate.sh --report-only`
    fails here."""
    import json
    from pathlib import Path

    from pcgkit.report.certificate_page import build_certificate_page, load_certificates, with_matrix_runs
    from pcgkit.report.model import from_json

    folder = Path(__file__).parent.parent / "reports" / "samples" / "matrix-2026-12-01"
    page = (folder / "certificate.html").read_text()
    report = from_json(json.loads((folder / "compat.json").read_text()))
    assert page == build_certificate_page(with_matrix_runs(load_certificates(), report)), \
        "re-render: reports/samples/matrix-2026-12-01/regenerate.sh --report-only"
    assert page.index("Coverage: judged out of listed") < page.index("Release to release")
