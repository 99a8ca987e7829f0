"""A registered op's `str` arguments read from the release's own code (lab.sweep.op_strings, pure), and the op
schemas with alias annotations (lab.sweep.derive.schema_args).

Every source text below is copied verbatim from flashinfer-python 0.7.4's wheel (`pip download --no-deps
flashinfer-python==0.7.4`, read 2026-12-05), padded with blank lines so that a reported line is the wheel's line (indentation taken off; an excerpt that
ends mid-call is closed with `)`, and `_ops.py:41`, a keyword line, sits in the call it is part of):
`fused_moe/cute_dsl/blackwell_sm12x/moe_activation.py:14-28` and `moe_w4a16_activations.py:17-25`,
`experimental/b12x/gemm/blockscaled/_a16.py:163-164`, `.../blockscaled/_ops.py:41`, `.../blockscaled/api.py:50-57`,
`mamba/cake_ssd_combined.py:436` and `:806`, `trace/solution.py:33-41` and `:102`,
`experimental/b12x/quantization/mxfp6/fp6_dense_op.py:55-68`, `experimental/b12x/_lib/dense_gemm.py:7093-7096` and
`experimental/b12x/_lib/utils.py:51-66`. The schemas are as torch's dispatcher printed them
(0.7.4's `b12x::qsa_validate_draft_buffers`, `b12x::blockscaled_bf16`)."""

from __future__ import annotations

from lab.sweep.derive import KIT, RELEASE_CODE, Dim, derive_op_call, schema_args
from lab.sweep.op_strings import package_imports, str_value


def _at(line: int, text: str) -> str:
    """`text` placed so that its first line is line `line` of the file."""
    return "\n" * (line - 1) + text


MOE_ACTIVATION = _at(14, '''SWIGLUOAI_UNINTERLEAVE = "swigluoai_uninterleave"
SWIGLUOAI_DEFAULT_LIMIT = 7.0
SWIGLUOAI_DEFAULT_ALPHA = 1.702
SWIGLUOAI_DEFAULT_BETA = 1.0

SUPPORTED_MOE_ACTIVATIONS = frozenset(
    {"silu", "gelu_tanh", "relu2", SWIGLUOAI_UNINTERLEAVE}
)
GATED_MOE_ACTIVATIONS = frozenset({"silu", "gelu_tanh", SWIGLUOAI_UNINTERLEAVE})


def normalize_moe_activation(activation: str) -> str:
    activation = str(activation)
    if activation not in SUPPORTED_MOE_ACTIVATIONS:
        raise ValueError(f"unsupported activation {activation!r}")
''')
W4A16_ACTIVATIONS = _at(17, '''SUPPORTED_MOE_ACTIVATIONS = frozenset({"silu", "relu2"})
GATED_MOE_ACTIVATIONS = frozenset({"silu"})


def normalize_moe_activation(activation: str) -> str:
    activation = str(activation)
    if activation not in SUPPORTED_MOE_ACTIVATIONS:
        raise ValueError(f"unsupported activation {activation!r}")
    return activation
''')
A16 = _at(163, '''if global_scale_kind not in ("multiplier", "reciprocal"):
    raise ValueError("global_scale_kind must be 'multiplier' or 'reciprocal'")
''')
OPS_41 = _at(40, '''BlockscaledQuery(
    activation_mode="a16" if required_mode == "a16" else "auto",
)
''')
API = _at(50, '''return mm(
    (lhs_values, lhs_scale_storage),
    (rhs_values, rhs_scale_storage),
    plan=plan,
    ab_dtype="float4_e2m1fn",
    sf_dtype="float8_e8m0fnu",
    c_dtype=_output_dtype_name(out_dtype),
    sf_vec_size=32,
)
''')
SSD = _at(436, '''_STATE_DTYPE_CODES = {"bf16": (4, 16), "f16": (2, 16), "f32": (2, 32)}
''') + _at(806 - 436, '''code, bits = _STATE_DTYPE_CODES[state_key]
''')
SOLUTION = _at(33, '''class SupportedLanguages(str, Enum):
    """Languages a solution implementation may be written in."""

    PYTHON = "python"
    TRITON = "triton"
    CUTEDSL = "cutedsl"
    TILELANG = "tilelang"
    CPP = "cpp"
    CUDA = "cuda"
''') + _at(102 - 41, '''language = SupportedLanguages(self.language)
''')
FP6_FAKE = _at(55, '''@fp6_dense_linear.register_fake
def _fp6_dense_linear_fake(
    x: torch.Tensor,
    weight: torch.Tensor,
    scale_storage: torch.Tensor,
    global_scale: torch.Tensor,
    fmt: str,
    out_features: int,
    in_features: int,
    plan_handle: int,
    act_fmt: str = "",
) -> torch.Tensor:
    del weight, scale_storage, global_scale, fmt, in_features, act_fmt, plan_handle
    return x.new_empty((x.shape[0], out_features), dtype=torch.bfloat16)
''')

DENSE_GEMM = _at(7092, '''_compile(
    ab_dtype=get_cutlass_dtype(ab_dtype),
    sf_dtype=get_cutlass_dtype(sf_dtype),
    c_dtype=get_cutlass_dtype(c_dtype),
    alpha_dtype=get_cutlass_dtype(alpha_dtype),
)
''')
UTILS = _at(51, '''def get_cutlass_dtype(dtype: str) -> cutlass.dtype:
    dtype_map = {
        "float16": cutlass.Float16,
        "bfloat16": cutlass.BFloat16,
        "float32": cutlass.Float32,
        "float8_e5m2": cutlass.Float8E5M2,
        "float8_e4m3fn": cutlass.Float8E4M3FN,
        "float8_e8m0fnu": cutlass.Float8E8M0FNU,
        "float4_e2m1fn": cutlass.Float4E2M1FN,
        "float6_e3m2fn": cutlass.Float6E3M2FN,
        "float6_e2m3fn": cutlass.Float6E2M3FN,
    }
    try:
        return dtype_map[dtype]
    except KeyError as exc:
        raise KeyError(f"unsupported cutlass dtype string: {dtype!r}") from exc
''')


def test_an_argument_handed_on_to_a_function_takes_the_value_that_function_names_for_its_parameter():
    """Nothing names `alpha_dtype`; it is handed to get_cutlass_dtype(dtype), whose local table is keyed by `dtype`:
    its first key, with the call it went through; a function not among the sources is no answer; two steps
    (a launcher that renames the argument, written here in 0.7.4's dense_gemm_launch_functional's shape) say both."""
    found = str_value([("dense_gemm.py", DENSE_GEMM), ("utils.py", UTILS)], "alpha_dtype")
    assert found is not None and found.to_dict() == {"value": "float16", "from": "utils.py:64", "rule": "table key",
                                                     "via": "get_cutlass_dtype() at dense_gemm.py:7096"}
    assert str_value([("dense_gemm.py", DENSE_GEMM)], "alpha_dtype") is None
    wrapped = _at(7379, "def _launch_flat(a, kernel_c_dtype):\n    return get_cutlass_dtype(kernel_c_dtype)\n")
    through = str_value([("d.py", "_launch_flat(x, c_dtype)\n" + wrapped), ("utils.py", UTILS)], "c_dtype")
    assert through is not None and through.via == "_launch_flat() at d.py:1 -> get_cutlass_dtype() at d.py:7381"


def test_an_allow_list_names_the_first_member_even_through_a_module_level_set_of_constants():
    """`x not in (...)` and `x not in NAMES` (NAMES = frozenset({..., CONST})) give the first member, line cited."""
    found = str_value([("moe_activation.py", MOE_ACTIVATION)], "activation")
    assert found is not None and found.to_dict() == {"value": "silu", "from": "moe_activation.py:27", "rule": "allow-list"}
    assert str_value([("_a16.py", A16)], "global_scale_kind").to_dict()["from"] == "_a16.py:163"  # type: ignore[union-attr]
    assert str_value([("_a16.py", A16)], "global_scale_kind").value == "multiplier"  # type: ignore[union-attr]


def test_a_comparison_a_table_lookup_and_an_enum_name_a_value():
    """`x == "a"`, `TABLE[x]` (a str-keyed module dict: its first key) and `Enum(x.attr)` (its first value)."""
    assert str_value([("_ops.py", OPS_41)], "required_mode").to_dict() == {  # type: ignore[union-attr]
        "value": "a16", "from": "_ops.py:41", "rule": "compared"}
    assert str_value([("ssd.py", SSD)], "state_key").to_dict() == {  # type: ignore[union-attr]
        "value": "bf16", "from": "ssd.py:806", "rule": "table key"}
    assert str_value([("solution.py", SOLUTION)], "language").to_dict() == {  # type: ignore[union-attr]
        "value": "python", "from": "solution.py:102", "rule": "enum member"}


def test_a_keyword_the_release_passes_is_the_weakest_rule_and_an_empty_default_is_no_value():
    """`f(ab_dtype="...")` is a `passed` value; an allow-list in the same source outranks it; `act_fmt: str = ""`
    names nothing, and a source with no finding hands over to the next one."""
    assert str_value([("api.py", API)], "ab_dtype").to_dict() == {  # type: ignore[union-attr]
        "value": "float4_e2m1fn", "from": "api.py:54", "rule": "passed"}
    assert str_value([("fp6_dense_op.py", FP6_FAKE)], "act_fmt") is None
    assert str_value([("fp6_dense_op.py", FP6_FAKE)], "fmt") is None
    both = str_value([("api.py", API + A16.replace("global_scale_kind", "ab_dtype"))], "ab_dtype")
    assert both is not None and both.rule == "allow-list" and both.value == "multiplier"
    # The op's own module answers first: the w4a16 module's allow-list, not its neighbour's wider one.
    first = str_value([("moe_w4a16_activations.py", W4A16_ACTIVATIONS), ("moe_activation.py", MOE_ACTIVATION)], "activation")
    assert first is not None and first.where == "moe_w4a16_activations.py:23"
    later = str_value([("fp6_dense_op.py", FP6_FAKE), ("_a16.py", A16.replace("global_scale_kind", "fmt"))], "fmt")
    assert later is not None and later.where == "_a16.py:163"


def test_package_imports_lists_the_sibling_modules_a_module_imports_in_order():
    """`from .x import y` and `from . import z` (level 1) are siblings; absolute and `..` imports are not."""
    text = "from .moe_w4a16_compiler import a\nimport torch\nfrom . import moe_activation\nfrom ..x import b\n" \
           "def f():\n    from ._preparation import heuristic_plan\nfrom .moe_w4a16_compiler import c\n"
    assert package_imports(text) == ["moe_w4a16_compiler", "moe_activation", "_preparation"]


def test_an_alias_annotation_before_a_list_suffix_parses_and_str_values_fill_the_op_call():
    """`Tensor(a0!)[] mutable` is a Tensor[] (it was 'unparsed'); a str argument takes the value read from the
    release's code, source RELEASE_CODE; without one it is still the reason."""
    assert schema_args("b12x::qsa_validate_draft_buffers(Tensor(a0!)[] mutable, Tensor[] inputs) -> ()") == [
        ("Tensor[]", "mutable", None, False), ("Tensor[]", "inputs", None, False)]
    assert schema_args("ns::op(Tensor(a!)? out, int[2] stride, Tensor?[] maybe, *, SymInt[] sizes=[1]) -> ()") == [
        ("Tensor?", "out", None, False), ("int[2]", "stride", None, False), ("Tensor?[]", "maybe", None, False),
        ("SymInt[]", "sizes", "[1]", True)]
    dims = {"batch_size": Dim(4, KIT), "hidden_size": Dim(128, KIT)}
    listed = derive_op_call("b12x::qsa_validate_draft_buffers(Tensor(a0!)[] mutable, Tensor[] inputs) -> ()", dims)
    assert listed.ok and listed.args == (["bf16[4,128]=ones"], ["bf16[4,128]=ones"])
    schema = ("b12x::blockscaled_bf16(Tensor source, Tensor values, Tensor scales, Tensor? global_scale, "
              "Tensor? activation_scale, str global_scale_kind, SymInt? stream, SymInt plan_handle, str required_mode, "
              "SymInt? expected_m=None) -> Tensor")
    derived = derive_op_call(schema, dims, {}, {"global_scale_kind": "multiplier", "required_mode": "a16"})
    assert derived.ok and "multiplier" in derived.args and "a16" in derived.args
    assert dict(derived.sources)["global_scale_kind"] == RELEASE_CODE
    assert "required_mode" in derive_op_call(schema, dims, {}, {"global_scale_kind": "multiplier"}).reason


def test_the_inputs_builder_reads_a_custom_ops_module_then_what_it_imports(tmp_path, monkeypatch):
    """lab.sweep.inputs_build.op_str_values on a real torch.library.custom_op: its str argument's value comes from
    the module it imports (the op's own module names none), path relative to the package's parent, with line."""
    import importlib
    import types

    from lab.sweep.inputs_build import op_str_values

    package = tmp_path / "pkg_op_strings"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_acts.py").write_text(W4A16_ACTIVATIONS)
    (package / "ops.py").write_text(
        "import torch\nfrom ._acts import normalize_moe_activation\n\n\n"
        "@torch.library.custom_op('pcgkit_test::op_strings_launch', mutates_args=())\n"
        "def launch(x: torch.Tensor, activation: str) -> torch.Tensor:\n"
        "    return x.clone() if normalize_moe_activation(activation) else x\n\n\n"
        "@launch.register_fake\ndef _fake(x, activation):\n    return torch.empty_like(x)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("pkg_op_strings.ops")
    op = types.SimpleNamespace(qualname="pcgkit_test::op_strings_launch",
                               schemas=("pcgkit_test::op_strings_launch(Tensor x, str activation) -> Tensor",))
    read = op_str_values([op], package=package)
    assert read == {"pcgkit_test::op_strings_launch": {"str_values": {"activation": {
        "value": "silu", "from": "pkg_op_strings/_acts.py:23", "rule": "allow-list"}}}}
    assert op_str_values([op], package=tmp_path / "elsewhere") == {}  # not the package's code: nothing read


def test_the_certificate_builds_an_ops_call_with_the_read_values_and_says_where_each_came_from():
    """lab.sweep.certify.op_call_from_schema with an inputs-file entry: the call carries the value, the row's
    caller says `str: release code`, `str_values` keeps file:line; a value the file lacks is the reason, with the
    file's own reason; without an entry the call is what it was (no str: the same caller as before); the
    certificate page prints each value with its line."""
    import types

    from lab.sweep.certify import op_call_from_schema

    dims = {"batch_size": Dim(4, KIT), "hidden_size": Dim(128, KIT)}
    op = types.SimpleNamespace(qualname="pcgkit_test::not_registered",
                               schemas=("pcgkit_test::not_registered(Tensor x, str activation, SymInt n) -> Tensor",))
    entry = {"value": "silu", "from": "flashinfer/x.py:23", "rule": "allow-list"}
    call, reason = op_call_from_schema(op, dims, {"str_values": {"activation": entry}})
    assert reason == "" and call is not None
    assert call["args"][1] == "silu" and call["sources"]["activation"] == RELEASE_CODE
    assert call["caller"] == "op schema (types; tensor shapes: kit default; str: release code)"
    assert call["str_values"] == {"activation": entry}
    none, why = op_call_from_schema(op, dims, {"str_values": {}, "reason": "no value in the release's code for activation"})
    assert none is None and why.endswith("has no derivable value (no value in the release's code for activation)")
    from lab.sweep.certificate_build import render_certificate

    row = {"target": "torch.ops.pcgkit_test.not_registered", "status": "opaque-op", "has_fake": True, "call": call,
           "inputs_from": f"graph of {call['caller']}", "fake_vs_real": "agrees with meta", "note": ""}
    page = render_certificate({"flashinfer": "0.7.4", "arch": "sm120", "simulated": True, "device": "simulated sm120 on CPU",
                               "torch": "2.9.1", "counts": {}, "callables": [], "ops": [row]})
    assert "str: release code): activation = silu (flashinfer/x.py:23) |" in page  # the page shows the line too
    plain = types.SimpleNamespace(qualname=op.qualname, schemas=("pcgkit_test::not_registered(Tensor x) -> Tensor",))
    assert op_call_from_schema(plain, dims)[0]["caller"] == "op schema (types; tensor shapes: kit default)"  # type: ignore[index]
