"""Wrapper inputs from a release's own trace template (lab.sweep.template_calls), on real text: FlashInfer's
tests/trace/ files at fb28d7242b35 (the 0.7.x recipe ref) and the 0.7.4 wheel's pod template init()
(flashinfer/trace/templates/attention.py:6178-6241), both under tests/data/trace_templates/."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.sweep.derive import SOURCES, TEMPLATE
from lab.sweep.template_calls import TemplateError, spec_call, spec_value, template_test_calls
from pcgkit.sweep.specs import load_specs, parse_call

DATA = Path(__file__).parent / "data" / "trace_templates"


def _upstream(name: str) -> str:
    return (DATA / name).read_text().split("\n", 1)[1]  # less the provenance header: the file's own line numbers


def _pod_init():
    namespace: dict = {}
    exec(compile((DATA / "pod_run_init_0.7.4.py.txt").read_text(), "attention.py", "exec"), namespace)  # noqa: S102 - the release's own init()
    return namespace["_pod_with_paged_kv_cache_run_init"]


def test_the_source_is_declared_with_the_others():
    assert TEMPLATE in SOURCES and TEMPLATE == "upstream trace template"


def test_reads_the_pod_tests_calls_as_flashinfer_wrote_them():
    [found] = template_test_calls(_upstream("test_pod_run_fb28d7242b35.py.txt"), "tests/trace/test_pod.py")
    assert found["template"] == "flashinfer.trace.templates.attention:pod_with_paged_kv_cache_run_trace"
    assert found["class"] == "PODWithPagedKVCacheWrapper"
    assert found["construct"] == {"args": [["workspace"], ["const", "NHD"]], "kwargs": {}, "line": 50}
    assert found["plan"]["line"] == 51 and found["plan"]["args"][0] == ["key", ["plan", "kv_indptr"]]
    assert found["plan"]["kwargs"]["kv_data_type"] == ["key", ["plan", "kv_data_type"]]
    assert found["run"]["args"][4] == ["key", ["run", "paged_kv_cache_d"]]
    assert found["run"]["kwargs"] == {"causal_p": ["const", True]}


def test_the_0_7_4_pod_template_reproduces_the_hand_spec_exactly():
    pytest.importorskip("torch")
    [found] = template_test_calls(_upstream("test_pod_run_fb28d7242b35.py.txt"), "tests/trace/test_pod.py")
    inputs = _pod_init()(device="cpu")
    workspace = "u8[1048576]"
    spec = next(s for s in load_specs() if s.id == "pod_run")
    construct, plan, run = (spec_call(found[k], inputs, workspace) for k in ("construct", "plan", "run"))
    assert construct == {"args": ["u8[1048576]", "NHD"], "kwargs": {}}
    assert plan == {"args": ["i32[2]=0,1", "i32[1]", "i32[1]=16", 8, 2, 64, 16],
                    "kwargs": {"q_data_type": "dtype:f16", "kv_data_type": "dtype:f16"}}
    assert run["args"] == ["f16[8,8,64]", "f16[8,2,64]", "f16[8,2,64]", "f16[1,8,64]", ["f16[1,16,2,64]", "f16[1,16,2,64]"]]
    assert parse_call(construct, where="t") == spec.construct and parse_call(run, where="t") == spec.call
    # plan(): the same but for kv_indices, which the hand spec writes "i32[1]=0" (the same zero)
    assert spec.plan is not None
    assert parse_call({**plan, "args": [*plan["args"][:1], "i32[1]=0", *plan["args"][2:]]}, where="t") == spec.plan


def test_a_tests_method_call_on_a_template_value():
    [found] = template_test_calls(_upstream("test_segment_gemm_run_fb28d7242b35.py.txt"), "t.py")
    assert found["class"] == "SegmentGEMMWrapper" and "plan" not in found
    assert found["run"]["args"][2] == ["numel", ["key", ["seg_lens"]]]
    assert found["run"]["kwargs"]["weight_column_major"] == ["const", False]


def test_values_the_spec_language_cannot_say_are_refused():
    torch = pytest.importorskip("torch")
    assert spec_value(torch.tensor([0, 3], dtype=torch.int32)) == "i32[2]=0,3"
    assert spec_value(torch.ones(2, 2, dtype=torch.bool)) == "bool[2,2]=ones"
    assert spec_value(torch.float16) == "dtype:f16"
    assert spec_value([torch.zeros(1, dtype=torch.int32)]) == {"list": ["i32[1]"]}
    with pytest.raises(TemplateError):
        spec_value(torch.tensor([True, False]))
    with pytest.raises(TemplateError):
        spec_value(torch.arange(1, 100, dtype=torch.int32))


def test_a_template_entry_becomes_a_wrapper_spec_with_its_set_up():
    from lab.sweep.certify import derived_specs

    entry = {"args": ["bf16[1,8,64]", "bf16[1,2,16,2,64]"], "kwargs": {}, "source": TEMPLATE,
             "construct": {"args": [1, "u8[1048576]", "NHD"], "kwargs": {}},
             "plan": {"args": [{"list": ["i32[2]=0,1"]}, 8], "kwargs": {"q_data_type": "dtype:bf16"}}}
    specs, reasons = derived_specs({"callables": {"flashinfer.MultiLevelCascadeAttentionWrapper.run": entry}}, "0.7.4")
    spec = specs["flashinfer.MultiLevelCascadeAttentionWrapper.run"]
    assert not reasons and spec.construct is not None and spec.plan is not None and spec.plan_method == "plan"
    assert spec.construct == parse_call(entry["construct"], where="t")
