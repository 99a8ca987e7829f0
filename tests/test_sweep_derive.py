"""The certificate's inputs derived from what a release says (pure): docstring shapes, signatures, op
schemas, FlashInfer's own test parametrizations, import reasons, and the statuses they lead to.

The docstrings below are copied verbatim from flashinfer-python 0.7.4's wheel (`flashinfer.rmsnorm`,
`flashinfer.silu_and_mul`, `flashinfer.add_rmsnorm_fp4quant`, `flashinfer.cake_mhc_train_forward_prepare`);
the schema is `b12x::bf16_gemv_small_n`'s as torch's dispatcher printed it (0.7.4, read 2026-12-05)."""

from __future__ import annotations

from lab.sweep.certificate_build import jit_loader_breaks, judged_status
from lab.sweep.coverage import coverage
from lab.sweep.derive import DOCSTRING, KIT, SIGNATURE, UPSTREAM, Dim, Param, derive_call, derive_op_call
from lab.sweep.doctext import shape_text
from lab.sweep.imports import import_reasons
from lab.sweep.upstream_tests import read_test_sources, smallest_dims

DIMS = {"batch_size": Dim(4, KIT), "hidden_size": Dim(128, UPSTREAM, "tests/test_norm.py"), "num_heads": Dim(4, KIT),
        "S": Dim(16, KIT), "C": Dim(128, KIT), "H": Dim(128, KIT)}
RMSNORM = [
    Param("input", "POSITIONAL_OR_KEYWORD", "torch.Tensor", None, "torch.Tensor",
          "Input tensor, 2D shape (batch_size, hidden_size) or 3D shape (batch_size, num_heads, hidden_size)."),
    Param("weight", "POSITIONAL_OR_KEYWORD", "torch.Tensor", None, "torch.Tensor", "Weight tensor, shape (hidden_size,)."),
    Param("eps", "POSITIONAL_OR_KEYWORD", "float", "1e-06", "float", "Epsilon for numerical stability."),
    Param("out", "POSITIONAL_OR_KEYWORD", "Optional[torch.Tensor]", "None", "Optional[torch.Tensor]", "The output tensor"),
]


def test_rmsnorm_inputs_come_from_its_docstring_shapes_with_upstream_dims():
    """rmsnorm's documented shapes give (4, 128) and (128,); defaults are left to the signature; hidden_size's
    value is FlashInfer's own tests', batch_size the kit's: the call is the docstring's, sized by both."""
    derived = derive_call(RMSNORM, DIMS)
    assert derived.ok and derived.args == ("bf16[4,128]=ones", "bf16[128]=ones") and derived.kwargs == ()
    assert derived.to_dict()["source"] == DOCSTRING
    assert derived.dims == (("batch_size", KIT), ("hidden_size", UPSTREAM))
    assert derived.to_dict()["sized_by"] == "kit default + upstream test"


def test_shapes_read_from_every_docstring_spelling_the_release_uses():
    """"(..., 2 * hidden_size)", ``[S, C]``, ``[24, 4H]`` (implicit product) and "same shape as ``input``"."""
    silu = Param("input", "POSITIONAL_OR_KEYWORD", "torch.Tensor", None, "torch.Tensor", "Input tensor, shape (..., 2 * hidden_size).")
    assert derive_call([silu], DIMS).args == ("bf16[4,256]=ones",)
    conv = Param("x", "POSITIONAL_OR_KEYWORD", "'torch.Tensor'", None, "torch.Tensor",
                 "BF16 ``[S, C]`` or ``[1, S, C]`` contiguous packed activations on a supported CUDA device.")
    assert derive_call([conv], DIMS).args == ("bf16[16,128]=ones",)
    fn = Param("fn", "POSITIONAL_OR_KEYWORD", "'torch.Tensor'", None, "torch.Tensor", "FP32 ``[24, 4H]`` contiguous mapping matrix.")
    assert derive_call([fn], DIMS).args == ("f32[24,512]=ones",)
    residual = Param("residual", "POSITIONAL_OR_KEYWORD", "torch.Tensor", None, "torch.Tensor",
                     "Residual tensor. Must have the same shape and dtype as ``input``. **Modified in-place**")
    assert derive_call([RMSNORM[0], residual], DIMS).args == ("bf16[4,128]=ones",) * 2
    assert shape_text("The query tensor, shape: ``[num_qo_heads, head_dim]``.") == "[num_qo_heads, head_dim]"
    # 0.7.0: a shape opening the description, an indptr's last element, a conditional divisor, a scalar tensor
    mqa = Param("q", "POSITIONAL_OR_KEYWORD", "torch.Tensor", None, "", "  [batch_size, next_n, num_heads, head_dim]  float8_e4m3fn")
    assert derive_call([mqa], {**DIMS, "next_n": Dim(1, KIT), "head_dim": Dim(64, KIT)}).args == ("fp8e4m3[4,1,4,64]",)
    ragged = Param("append_key", "POSITIONAL_OR_KEYWORD", "torch.Tensor", None, "torch.Tensor",
                   "The key tensor to append in ragged tensor format, shape: ``[append_indptr[-1], num_heads]``.")
    assert derive_call([ragged], {**DIMS, "nnz": Dim(16, KIT)}).args == ("bf16[16,4]=ones",)
    scales = Param("s", "POSITIONAL_OR_KEYWORD", "torch.Tensor", None, "torch.Tensor",
                   "``[num_heads, hidden_size // (32 if mxfp4 else 16)]`` FC1 weight block scales, dtype float8")
    assert derive_call([scales], DIMS).args == ("fp8e4m3[4,8]",)
    scalar = Param("g", "POSITIONAL_OR_KEYWORD", "torch.Tensor", None, "torch.Tensor", "Global scale, float32 device scalar: ``x``.")
    assert derive_call([scalar], DIMS).args == ("f32[1]=ones",)


def test_what_no_source_gives_is_a_reason_not_a_guess():
    """A tensor without a documented shape, an unknown symbol, a required int no one sizes: not derived, said why."""
    bare = Param("scale", "POSITIONAL_OR_KEYWORD", "torch.Tensor", None, "torch.Tensor", "Scale tensor for A, float.")
    assert "no shape for tensor 'scale'" in derive_call([bare], DIMS).reason
    odd = Param("x", "POSITIONAL_OR_KEYWORD", "torch.Tensor", None, "", "shape (cum_m, hidden_size)")
    assert "'cum_m' has no value" in derive_call([odd], DIMS).reason
    rows = Param("rows", "POSITIONAL_OR_KEYWORD", "int", None)
    assert "no value for int 'rows'" in derive_call([rows], DIMS).reason


def test_signature_gives_optionals_literals_and_keyword_only_arguments():
    """Optional without a default is None, a Literal its first choice, keyword-only stays a keyword; all "signature"."""
    params = [Param("bias", "POSITIONAL_OR_KEYWORD", "Optional[torch.Tensor]"),
              Param("layout", "POSITIONAL_OR_KEYWORD", "Literal['NHD', 'HND']"),
              Param("flag", "KEYWORD_ONLY", "Optional[bool]")]
    derived = derive_call(params, DIMS)
    assert derived.args == ("none", "NHD") and derived.kwargs == (("flag", "none"),)
    assert set(dict(derived.sources).values()) == {SIGNATURE}
    assert derived.to_dict()["source"] == SIGNATURE and DOCSTRING not in dict(derived.sources).values()


def test_op_inputs_from_its_schema_types_with_kit_shapes():
    """A schema gives types, never shapes: tensors get the kit's (batch_size, hidden_size), labelled kit default;
    an optional without default is None; a defaulted argument is left out; a str nobody gives is a reason."""
    derived = derive_op_call("b12x::bf16_gemv_small_n(Tensor x, Tensor weight, SymInt plan_handle, Tensor? bias=None, "
                             "ScalarType? output_dtype=None) -> Tensor", DIMS)
    assert derived.args == ("bf16[4,128]=ones", "bf16[4,128]=ones", 1)
    assert dict(derived.sources) == {"x": KIT, "weight": KIT, "plan_handle": KIT}
    assert "global_scale_kind" in derive_op_call("ns::op(Tensor x, str global_scale_kind) -> Tensor", DIMS).reason
    typed = derive_op_call("ns::op(Tensor x, str activation) -> Tensor", DIMS, {"activation": "Literal['silu', 'gelu']"})
    assert typed.args == ("bf16[4,128]=ones", "silu") and dict(typed.sources)["activation"] == SIGNATURE


def test_upstream_test_parametrizations_give_the_smallest_aligned_dim_and_the_calls():
    """@pytest.mark.parametrize over ints (single names and "a,b" tuples) -> values per name; a call through
    flashinfer.<module>.<name> is recorded; the derivation takes the smallest multiple of 16, else the smallest."""
    source = '''
import pytest, flashinfer
@pytest.mark.parametrize("hidden_size", [111, 4096, 512])
@pytest.mark.parametrize("batch_size,seed", [(1, 3), (19, 4)])
def test_norm(hidden_size, batch_size, seed):
    flashinfer.norm.rmsnorm(x, w)
'''
    data = read_test_sources({"tests/test_norm.py": source, "tests/broken.py": "def ("})
    assert data["dims"]["hidden_size"]["values"] == [111, 512, 4096] and "seed" not in data["dims"]
    assert data["calls"] == {"rmsnorm": ["tests/test_norm.py"]} and data["unparsed"] == ["tests/broken.py"]
    assert smallest_dims(data) == {"hidden_size": (512, "tests/test_norm.py"), "batch_size": (1, "tests/test_norm.py")}


def test_statuses_split_traced_calls_by_whether_they_also_run():
    """Traced + fake run returned: traces-and-runs (or opaque-op); traced + raised: traces-but-fails, unless the
    release's own argument check refused the inputs (not judged); a broken first trace is breaks."""
    assert judged_status("traces-through", "9 torch ops", True, "", "") == ("traces-and-runs", "9 torch ops")
    assert judged_status("opaque-op", "flashinfer::x", True, "", "")[0] == "opaque-op"
    assert judged_status("traces-through", "", False, "RuntimeError", "RuntimeError: bad")[0] == "traces-but-fails"
    assert judged_status("opaque-op", "", False, "ValueError", "ValueError: k % 16")[0] == "not-judged"
    assert judged_status("breaks-in-jit-loader", "gb0007 core.py", False, "KernelLoadRefused", "")[0] == "breaks"


def test_coverage_and_the_jit_loader_set_read_the_rows():
    """Coverage counts judged of listed per input source; the JIT-loader set names the first site of each."""
    callables = [
        {"target": "flashinfer.rmsnorm", "status": "breaks", "first_class": "breaks-in-jit-loader", "loader": "flashinfer-jit",
         "inputs_from": "hand spec", "sites": [{"frame": "flashinfer/jit/core.py:862:get_tmpdir"}, {"frame": "b"}],
         "run": {"runs": False}},
        {"target": "flashinfer.f", "status": "traces-and-runs", "first_class": "traces-through", "inputs_from": "docstring",
         "sites": [], "run": {"runs": True}},
        {"target": "flashinfer.g", "status": "not-judged", "sites": []},
    ]
    ops = [{"target": "torch.ops.a.b", "status": "opaque-op", "call": {"caller": "op schema (types)"}},
           {"target": "torch.ops.a.c", "status": "not-judged", "call": None}]
    cov = coverage(callables, ops)
    assert (cov["callables judged"], cov["callables listed"], cov["ops judged with inputs"]) == (2, 3, 1)
    assert cov["callables judged by input source"] == {"docstring": 1, "hand spec": 1}
    assert cov["callables whose fake run returned"] == 1
    assert jit_loader_breaks(callables) == [{"target": "flashinfer.rmsnorm", "loader": "flashinfer-jit",
                                             "where": "flashinfer/jit/core.py:862:get_tmpdir", "sites": 2}]


def test_each_submodule_that_did_not_import_gets_its_reason():
    """0.7.4's own import errors (certificate of 2026-12-01) against its Requires-Dist: a declared extra, an
    undeclared package, an upstream NameError, the kit's import-all collision; duplicates once."""
    requires = ['apache-tvm-ffi<0.2,>=0.1.11', 'nvshmem4py-cu13>=0.3.1; extra == "sm107"']
    errors = [
        ("flashinfer.comm.nvshmem", "ModuleNotFoundError: No module named 'nvshmem'"),
        ("flashinfer.profiler", "ModuleNotFoundError: No module named 'tg4perfetto'"),
        ("flashinfer.profiler", "ModuleNotFoundError: No module named 'tg4perfetto'"),
        ("flashinfer.cute_dsl.sparse.sm100_blk128", "ImportError: The vsa_sm100_blk128 backend requires the `quack-kernels` package."),
        ("flashinfer.x.sm100_matmul", "NameError: name 'cluster_shape_mnk' is not defined"),
        ("flashinfer.moe_ep.kernel_src.sm90.k", "RuntimeError: kernel module 'common' is already imported from 'flashinfer/moe_ep/'"),
        ("op trtllm::x", "RuntimeError: unreadable"),
        ("flashinfer.cute_dsl.attention", "AttributeError: module 'cutlass.cute.core' has no attribute 'ThrMma'"),  # 0.6.12
    ]
    reasons = {r["submodule"]: (r["reason"], r["detail"]) for r in import_reasons(errors, requires)}
    assert reasons["flashinfer.comm.nvshmem"] == ("optional dependency, declared",
                                                  "the release declares nvshmem4py-cu13 under its extra [sm107]")
    assert reasons["flashinfer.profiler"][0] == "optional dependency, undeclared"
    assert reasons["flashinfer.cute_dsl.sparse.sm100_blk128"][0] == "optional dependency, undeclared"
    assert reasons["flashinfer.x.sm100_matmul"][0] == "upstream defect"
    assert reasons["flashinfer.moe_ep.kernel_src.sm90.k"][0] == "kit: import-all"
    assert reasons["flashinfer.cute_dsl.attention"] == ("dependency drift", "the installed cutlass lacks 'ThrMma'")
    assert len(reasons) == 6


def test_triage_reads_the_compile_unsafe_calls_of_the_users_release_only():
    """compile_unsafe_calls: the JIT-loader set of that release's whole certificates, with their evidence; an
    ops-only run or another release claims nothing."""
    from pcgkit.sweep.certificate import compile_unsafe_calls

    entry = {"target": "flashinfer.single_prefill_with_kv_cache", "loader": "flashinfer-jit", "where": "flashinfer/jit/core.py:1:f", "sites": 3}
    whole = {"flashinfer": "0.7.4", "arch": "sm120", "simulated": True, "device": "simulated sm120 on CPU", "created": "2026-12-05",
             "jit_loader_breaks": [entry]}
    ops_only = {**whole, "scope": "ops", "jit_loader_breaks": [{**entry, "target": "x"}]}
    found = compile_unsafe_calls([whole, ops_only, {**whole, "flashinfer": "0.7.0"}], "0.7.4")
    assert found == [{**entry, "flashinfer": "0.7.4", "arch": "sm120", "simulated": True, "device": "simulated sm120 on CPU",
                      "created": "2026-12-05"}]
    assert compile_unsafe_calls([whole], "0.6.1") == []


def _committed_whole():
    from pcgkit.report.certificate_page import load_certificates

    return [c for c in load_certificates() if c.get("scope", "all") == "all" and "coverage" in c]


def test_committed_certificates_judge_what_they_list():
    """Each committed certificate's coverage is what its rows say; every judged callable was also run, every
    row not judged says why, every submodule that did not import has its reason; 0.7.4 judges >= 20 ops."""
    from lab.sweep.coverage import coverage

    certificates = _committed_whole()
    assert {c["flashinfer"] for c in certificates} >= {"0.6.1", "0.6.12", "0.7.0", "0.7.4"}
    for cert in certificates:
        # every count the file holds is what its rows say now (a file written before a count was added lacks it)
        now = coverage(cert["callables"], cert["ops"])
        assert cert["coverage"] == {k: now[k] for k in cert["coverage"]}, cert["flashinfer"]
        for row in cert["callables"]:
            assert row["status"] == "not-judged" and row["where"] or "run" in row, (cert["flashinfer"], row["target"])
        unique = {e[0] for e in cert["import_errors"] if not e[0].startswith("op ")}
        assert {r["submodule"] for r in cert["import_reasons"]} == unique, cert["flashinfer"]
    newest = next(c for c in certificates if c["flashinfer"] == "0.7.4")
    assert newest["coverage"]["ops judged with inputs"] >= 20


def test_committed_certificates_put_prefill_and_decode_in_the_jit_loader_set():
    """vllm-omni #4988 / PR 4989: `open` in the cached single-prefill loader under fullgraph. Every committed
    certificate lists single prefill and decode as JIT-loader breaks; on 0.7.4 the first site is that `open`."""
    targets = {"flashinfer.single_prefill_with_kv_cache", "flashinfer.single_decode_with_kv_cache"}
    for cert in _committed_whole():
        loaders = {e["target"]: e for e in cert["jit_loader_breaks"]}
        assert targets <= set(loaders), cert["flashinfer"]
        assert {loaders[t]["loader"] for t in targets} == {"flashinfer-jit"}
        if cert["flashinfer"] == "0.7.4":
            prefill = next(r for r in cert["callables"] if r["target"] == "flashinfer.single_prefill_with_kv_cache")
            assert "gen_customize_single_prefill_module" in prefill["sites"][0]["frame"]
            assert "builtin operator `open`" in prefill["sites"][0]["what"]


def test_ci_slice_a_docstring_derived_callable_is_judged_and_run_in_the_reference_env(monkeypatch):
    """The certificate's slice CI runs: flashinfer 0.6.1's apply_llama31_rope, with the inputs committed for it
    (derived from its docstring), traced (one round) and run on FakeTensors: breaks, first in the JIT loader,
    and the fake run names why it could not run (the simulated host builds no kernel)."""
    import json

    from lab.sweep.certify import derived_specs, judge_callable
    from pcgkit import resources
    from pcgkit.harness.casekit import cuda_toolkit_root
    from pcgkit.harness.hardware import SIMULATED_ARCHES
    from pcgkit.sweep.engine import installed_versions

    if cuda_toolkit_root():
        monkeypatch.setenv("CUDA_HOME", cuda_toolkit_root())
    versions = installed_versions()
    inputs = json.loads(resources.fixture("certificates", "inputs", f"flashinfer-{versions[0]}.json").read_text())
    specs, _ = derived_specs(inputs, versions[0])
    spec = specs["flashinfer.apply_llama31_rope"]
    assert inputs["callables"][spec.target]["source"] == DOCSTRING
    row = judge_callable(spec, "callable", "sm120", SIMULATED_ARCHES["sm120"], versions, False, {}, max_rounds=1,
                         inputs_from=DOCSTRING)
    assert row["status"] == "breaks" and row["first_class"] == "breaks-in-jit-loader", row
    assert row["unroll_capped"] and row["run"]["runs"] is False and row["run"]["error"]


def test_certificate_refuses_an_inputs_file_that_is_not_there(tmp_path, capsys):
    """`--inputs` naming a missing file is a one-line error before any work, never a silent hand-specs-only run."""
    from lab.cli import main

    code = main(["certify", "--inputs", str(tmp_path / "none.json"), "--reports", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code != 0 and "--inputs" in err and "no such file" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_one_numpydoc_entry_for_several_parameters_documents_each():
    """numpydoc's "branch, residual : torch.Tensor" (flashinfer 0.7.4's gated_residual_rmsnorm, verbatim) gives
    both parameters that description, so each gets the documented shape."""
    from lab.sweep.inputs_build import params_of

    def gated_residual_rmsnorm(branch, residual, alpha, beta):
        """Gated residual RMSNorm for hidden size 8192: blend a normalized branch into the stream.

        Parameters
        ----------
        branch, residual : torch.Tensor
            Two-dimensional BF16 and FP32 tensors, respectively, with shape
            ``(rows, 8192)``.
        alpha, beta : torch.Tensor
            FP32 gate tensors with shape ``(8192,)``.
        """

    params = {p.name: p for p in params_of(gated_residual_rmsnorm)}
    assert shape_text(params["residual"].doc) == "(rows, 8192)" and shape_text(params["branch"].doc) == "(rows, 8192)"
    assert shape_text(params["beta"].doc) == "(8192,)" and params["beta"].doc_type == "torch.Tensor"
