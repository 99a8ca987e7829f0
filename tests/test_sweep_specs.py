"""The sweep's spec table: argument kinds parse as data, malformed entries are refused, the shipped table loads."""

from __future__ import annotations

import pytest

from pcgkit.sweep.specs import (
    DtypeArg,
    NoneArg,
    SequenceArg,
    SpecError,
    TensorArg,
    load_specs,
    parse_arg,
    parse_entry,
    parse_tensor,
)

MINIMAL = {"id": "x", "target": "flashinfer.x", "family": "norm", "releases": ">=0.6"}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("bf16[4,64]", TensorArg("bf16", (4, 64))),
        ("f32[64]=ones", TensorArg("f32", (64,), "ones")),
        ("i32[2]=0,4", TensorArg("i32", (2,), "values", (0.0, 4.0))),
        ("u8[1048576]", TensorArg("u8", (1048576,))),
        ("f32[]", TensorArg("f32", ())),
    ],
)
def test_tensor_kinds_parse(text, expected):
    """dtype[shape]=init strings become TensorArg values, literal values included."""
    assert parse_tensor(text) == expected


@pytest.mark.parametrize("text", ["bf17[4]", "bf16[4,x]", "i32[3]=0,1", "f32[2]=gaussian", "bf16"])
def test_bad_tensor_kinds_are_refused(text):
    """Unknown dtypes, bad shapes, wrong literal counts and unknown inits are spec errors."""
    with pytest.raises(SpecError):
        parse_tensor(text)


def test_other_argument_kinds():
    """dtype:, none, arrays (tuples), {list=...} and plain scalars keep their meaning."""
    assert parse_arg("dtype:bf16") == DtypeArg("bf16")
    assert parse_arg("none") == NoneArg()
    assert parse_arg(["bf16[1]", 3]) == SequenceArg((TensorArg("bf16", (1,)), 3))
    assert parse_arg({"list": []}) == SequenceArg((), as_list=True)
    assert parse_arg("NHD") == "NHD" and parse_arg(0.9) == 0.9 and parse_arg(True) is True


def test_entry_validation():
    """Unknown keys, families, or a plan without construct are refused with the entry id."""
    with pytest.raises(SpecError, match="x: unknown keys"):
        parse_entry({**MINIMAL, "argz": []})
    with pytest.raises(SpecError, match="unknown family"):
        parse_entry({**MINIMAL, "family": "vision"})
    with pytest.raises(SpecError, match="needs `construct`"):
        parse_entry({**MINIMAL, "plan": {"args": []}})


def test_releases_and_expectations_select_by_version():
    """applies_to follows the SpecifierSet; expectation_for picks the matching range."""
    entry = parse_entry({**MINIMAL, "releases": ">=0.6.0", "expect": [
        {"releases": "<0.6.12", "behaviour": "breaks-in-jit-loader", "link": "a"},
        {"releases": ">=0.6.12", "behaviour": "opaque-op", "link": "b"},
    ]})
    assert not entry.applies_to("0.5.3") and entry.applies_to("0.6.7.post2")
    assert entry.expectation_for("0.6.1").behaviour == "breaks-in-jit-loader"
    assert entry.expectation_for("0.7.4").behaviour == "opaque-op"


def test_shipped_table_loads_and_covers_the_families():
    """The package-data table parses, ids are unique, and every family the issue names has entries."""
    specs = load_specs()
    families = {s.family for s in specs}
    assert {"norm", "activation", "rope", "sampling", "attention", "cascade", "page", "quant", "gemm", "moe"} <= families
    assert len({s.id for s in specs}) == len(specs)
    for spec in specs:  # every link beside an expectation is a public thread
        assert all(e.link.startswith("https://github.com/") for e in spec.expectations), spec.id


def test_duplicate_ids_and_schema_are_checked():
    """A table with a wrong schema or a repeated id is refused."""
    with pytest.raises(SpecError, match="schema"):
        load_specs('schema = "other"\n')
    entry = '[[entry]]\nid = "a"\ntarget = "flashinfer.a"\nfamily = "norm"\nreleases = ">=0"\n'
    with pytest.raises(SpecError, match="duplicate"):
        load_specs('schema = "pcgkit.sweep-specs/1"\n' + entry + entry)


def test_a_strided_tensor_kind_is_a_view_with_those_strides():
    """"bf16[1,4,3072]@73728,18432,1" (WAN's temb.chunk(6, dim=2), the row stride 0.7.x's fused DiT norms check)
    parses and builds a view whose strides are those; a stride count unlike the rank is refused."""
    import torch

    from pcgkit.sweep.inputs import build_tensor

    arg = parse_tensor("bf16[1,4,3072]@73728,18432,1=randn")
    assert (arg.shape, arg.stride, arg.init) == ((1, 4, 3072), (73728, 18432, 1), "randn")
    tensor = build_tensor(arg)
    assert (tuple(tensor.shape), tensor.stride(), tensor.dtype) == ((1, 4, 3072), (73728, 18432, 1), torch.bfloat16)
    assert tensor.untyped_storage().nbytes() == (3 * 18432 + 3072) * 2
    with pytest.raises(SpecError, match="a stride per dim"):
        parse_tensor("bf16[4,8]@8=ones")


def test_a_uint32_tensor_kind_builds():
    """"u32[1,1]=64" (xqa's seq_lens and semaphores are torch.uint32, tests/attention/test_xqa.py) builds as uint32."""
    import torch

    from pcgkit.sweep.inputs import build_tensor

    tensor = build_tensor(parse_tensor("u32[1,1]=64"))
    assert tensor.dtype == torch.uint32 and tensor.to(torch.int64).tolist() == [[64]]
