"""The third round's derivation rules (pure), each on docstring text copied verbatim from a release's wheel.

Every description below is flashinfer-python's own, read 2026-12-05 from the wheel PyPI serves (file:line of
the installed package given at each); the symbols' values are a stand-in table like the certificate's
(upstream-test and kit values)."""

from __future__ import annotations

from lab.sweep.derive import (
    DOCSTRING,
    KIT,
    SIGNATURE,
    UPSTREAM,
    Dim,
    Param,
    call_dims,
    derive_call,
)
from lab.sweep.doctext import definitions, shape_text

TABLE = {"batch_size": Dim(16, UPSTREAM, "tests/attention/test_attention_sink.py"),
         "hidden_size": Dim(64, UPSTREAM, "tests/comm/test_allreduce_unified_api.py"),
         "head_dim": Dim(64, UPSTREAM, "tests/attention/test_alibi.py"), "n": Dim(64, UPSTREAM), "k": Dim(64, UPSTREAM),
         "m": Dim(16, UPSTREAM), "num_blocks": Dim(16, UPSTREAM), "block_size": Dim(16, UPSTREAM),
         "next_n": Dim(1, UPSTREAM), "num_heads": Dim(16, UPSTREAM), "K_padded": Dim(128, KIT),
         "num_q_heads": Dim(4, KIT), "num_k_heads": Dim(4, KIT), "num_v_heads": Dim(4, KIT), "total_seq_len": Dim(16, KIT),
         "nb_pages_per_seq": Dim(4, KIT), "H": Dim(128, KIT), "max_num_pages": Dim(4, KIT), "page_size": Dim(16, KIT),
         "num_kv_heads": Dim(4, KIT)}


def tensor(name: str, doc: str, kind: str = "POSITIONAL_OR_KEYWORD", annotation: str = "torch.Tensor") -> Param:
    return Param(name, kind, annotation, None, "torch.Tensor", doc)


# 0.7.0 flashinfer/norm/__init__.py:421-429 (fused_add_rmsnorm_fp8_block_quant)
BLOCK_QUANT = [
    tensor("out", "fp8 output, shape ``(batch_size, hidden_size)``, dtype float8_e4m3fn (the activation\n"
                  "dtype the fp8 block-scaled GEMMs consume)."),
    tensor("block_scale", "fp32 block scales, shape ``(hidden_size // 128, round_up(batch_size, 4))``, contiguous.\n"
                          "This is the column-major (MN-major, TMA-aligned) buffer deep_gemm expects: the logical\n"
                          "``(batch_size, hidden_size // 128)`` scale is ``block_scale.transpose(0, 1)[:batch_size]``."),
]


def test_a_documented_division_raises_its_symbol_to_the_smallest_multiple_of_the_divisor():
    """``hidden_size // 128`` with the tests' hidden_size 64 was 0: hidden_size becomes 128 for that call (said
    so, with the value it replaced), and ``round_up(batch_size, 4)`` keeps its comma inside one dimension."""
    derived = derive_call(BLOCK_QUANT, TABLE)
    assert derived.ok, derived.reason
    assert derived.args == ("fp8e4m3[16,128]", "f32[1,16]=ones")
    assert dict(derived.dims)["hidden_size"] == DOCSTRING
    own = dict(derived.own_dims)["hidden_size"]
    assert own.startswith("128: the smallest multiple of 128 at or above 64 (upstream test")
    assert call_dims(BLOCK_QUANT, TABLE)["batch_size"] is TABLE["batch_size"]  # 16 is not divided: kept
    # the ``if`` spelling of 0.7.0 flashinfer/fused_moe/core.py (trtllm_fp8_block_scale_routed_moe): its default branch
    scale = [tensor("hidden_states_scale", "shape ``[hidden_size // (32 if mxfp8 else 128), num_tokens]``")]
    assert call_dims(scale, TABLE)["hidden_size"].value == 128


def test_a_symbol_the_release_defines_from_others_takes_that_value():
    """"kv_row_bytes = head_dim + 4" (0.7.0 attn_scores/attn_scores.py:1042) and "N_padded = round_up(n, 128) and
    K_padded = round_up(k // 32, 4)" (0.7.0 gemm/gemm_base.py:6136-6137): each evaluated; a definition replaces
    a kit default (K_padded) but an example value in prose ("context_len=257 with block_size=64",
    attn_scores.py, same docstring) defines nothing."""
    kv_fused = tensor("kv_fused", "[num_blocks, block_size, 1, kv_row_bytes]  uint8\n"
                                  "kv_row_bytes = head_dim + 4: the FP8 values of one\n"
                                  "token, then that token's single float32 scale (4\n"
                                  "bytes -- per-token scaling, not block scaling as in")
    assert derive_call([kv_fused], TABLE).args == ("u8[16,16,1,68]",)
    b_descale = tensor("b_descale", "Block scale tensor for B, uint8 (fp8 e8m0), 1D swizzled 128x4 layout:\n"
                                    "shape (N_padded * K_padded,) where N_padded = round_up(n, 128) and\n"
                                    "K_padded = round_up(k // 32, 4), flattened from the (N_padded,\n"
                                    "K_padded) grid.")
    assert definitions(b_descale.doc)[:2] == [("N_padded", "round_up(n, 128)"), ("K_padded", "round_up(k // 32, 4)")]
    assert derive_call([b_descale], TABLE).args == ("u8[512]",)  # 128 * round_up(64 // 32, 4)
    block_table = tensor("block_table", "[batch_size, max_blocks_per_seq]  int32  (CUDA)\n"
                                        "wider than ceil(context_lens[b] / block_size) when a\n"
                                        "length is not a multiple of 128 (context_len=257 with\n"
                                        "block_size=64 needs 6 columns, not 5).")
    assert call_dims([block_table], TABLE)["block_size"] is TABLE["block_size"]
    assert "context_len" not in call_dims([block_table], TABLE)


def test_the_signature_default_of_a_parameter_sizes_a_shape_the_table_does_not():
    """fp4_paged_mqa_logits (0.7.0 attn_scores/attn_scores.py:1349): "kv_row_bytes = head_dim/2 +
    head_dim/sf_vec_size", sf_vec_size left at its default 32: 64/2 + 64/32 = 34; a quotient of two unrelated
    symbols stays a quotient."""
    kv_fused = tensor("kv_fused", "[num_blocks, block_size, 1, kv_row_bytes]  uint8\n"
                                  "kv_row_bytes = head_dim/2 + head_dim/sf_vec_size:\n"
                                  "the packed FP4 values of one token, then that token's\n"
                                  "UE8M0 scale factors.")
    sf_vec_size = Param("sf_vec_size", "KEYWORD_ONLY", "int", "32", "", "number of FP4 values sharing one UE8M0 scale factor.")
    dims = call_dims([kv_fused, sf_vec_size], TABLE)
    assert dims["sf_vec_size"] == Dim(32, SIGNATURE, "the signature's default")
    assert dims["kv_row_bytes"].value == 34 and dims["kv_row_bytes"].source == DOCSTRING
    assert derive_call([kv_fused, sf_vec_size], TABLE).args == ("u8[16,16,1,34]",)


def test_symbols_of_one_kind_joined_by_a_slash_are_alternatives_not_a_quotient():
    """``[total_seq_len, num_q_heads / num_k_heads / num_v_heads, 128]`` (0.7.4 cudnn/linear_attention.py:701)
    names the head count of q, k or v: one dimension of 4, not 4 / 4 / 4 = 0."""
    qkv = tensor("q", "``[total_seq_len, num_q_heads / num_k_heads / num_v_heads, 128]``,\n"
                      "packed. Strides are passed through to cuDNN, so only the innermost dim\nhas to be contiguous.")
    assert derive_call([qkv], TABLE).args == ("bf16[16,4,128]=ones",)


def test_shapes_spelled_without_brackets_or_as_an_element_count():
    """"with shape ``batch_size, nb_pages_per_seq``" (0.7.0 xqa.py:239) and "with ``H`` elements" (0.7.0
    kda_decode.py:404) are shapes too; a dtype the description names still wins."""
    assert shape_text("Page table tensor with shape ``batch_size, nb_pages_per_seq``.\n"
                      "Data type should be torch.int32.") == "(batch_size, nb_pages_per_seq,)"
    page_table = tensor("page_table", "Page table tensor with shape ``batch_size, nb_pages_per_seq``.\n"
                                      "Data type should be torch.int32.\nK and V share the same table.")
    a_log = tensor("A_log", "Log decay parameter with ``H`` elements and dtype float32.")
    assert derive_call([page_table, a_log], TABLE).args == ("i32[16,4]", "f32[128]=ones")


def test_the_same_format_as_another_parameter_with_a_replacement():
    """kv_cache_sf: "the same tuple or stacked cache format as ``paged_kv_cache``, replacing ``head_dim // 2``
    with ``head_dim // 16``" (0.7.0 page.py:750-758): paged_kv_cache's documented shape, replaced, FP8 E4M3."""
    union = "Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]"
    cache = tensor("paged_kv_cache", "Caller-owned packed NVFP4 K/V cache. For tuple input, each tensor has\n"
                                     "shape ``[max_num_pages, page_size, num_kv_heads, head_dim // 2]`` when\n"
                                     "``kv_layout=\"NHD\"`` and ``[max_num_pages, num_kv_heads, page_size,\n"
                                     "head_dim // 2]`` when ``kv_layout=\"HND\"``. A stacked 5-D cache is also\n"
                                     "accepted with K/V on the second dimension.", annotation=union)
    scales = tensor("kv_cache_sf", "Caller-owned FP8 E4M3 scale cache with the same tuple or stacked cache\n"
                                   "format as ``paged_kv_cache``, replacing ``head_dim // 2`` with\n"
                                   "``head_dim // 16``.", annotation=union)
    assert derive_call([cache, scales], TABLE).args == (["u8[4,16,4,32]"] * 2, ["fp8e4m3[4,16,4,4]"] * 2)
    assert not derive_call([scales], TABLE).ok  # without the shape it refers to, no guess


def test_a_docstring_that_refers_to_another_for_its_arguments_takes_that_documentation():
    """prims_ts_bf16_routed_moe: "Same arguments and return value as :func:`~flashinfer.fused_moe.trtllm_bf16_routed_moe`"
    (0.7.0 fused_moe/backends/prims_ts/bf16_op.py:460-473): its summary entries ("Packed ``(expert_id, weight)``
    tensor", "First-layer expert weights.") give way to trtllm_bf16_routed_moe's sized ones (fused_moe/core.py:4932-4941);
    a parameter the other does not document keeps its own entry."""
    from lab.sweep.derive import with_documentation_of
    from lab.sweep.doctext import documented_by

    doc = ("BF16 Prims-TS MoE with precomputed packed or unpacked routing.\n\nSame arguments and return value as\n"
           ":func:`~flashinfer.fused_moe.trtllm_bf16_routed_moe`.")
    assert documented_by(doc) == "flashinfer.fused_moe.trtllm_bf16_routed_moe"
    assert documented_by("See :func:`cute_dsl_fused_moe` for the full parameter documentation; this\n"
                         "function forwards every argument unchanged.") == "cute_dsl_fused_moe"  # fused_moe.py:1422
    assert documented_by("Routing method (default ``0``).  See :func:`trtllm_bf16_moe`.") is None  # a pointer, not the arguments
    own = [tensor("topk_ids", "Packed ``(expert_id, weight)`` tensor or unpacked\n``(topk_ids, topk_weights)`` pair."),
           tensor("gemm1_weights", "First-layer expert weights."), tensor("extra", "Only here.")]
    theirs = [tensor("topk_ids", "``[seq_len, top_k]`` int32 tensor of packed expert indices and\n"
                                 "weights.  Format ``(expert_id << 16) | (weight_bf16.view(int16))``."),
              tensor("gemm1_weights", "``[num_experts, M // 128, hidden_size // 128, 128]`` first-layer\n"
                                      "weights, ``bfloat16``.")]
    merged = with_documentation_of(own, theirs)
    assert [p.doc for p in merged] == [theirs[0].doc, theirs[1].doc, "Only here."]
    table = {**TABLE, "seq_len": Dim(16, UPSTREAM), "top_k": Dim(2, UPSTREAM), "num_experts": Dim(8, UPSTREAM),
             "M": Dim(64, UPSTREAM)}
    assert not derive_call(own[:2], table).ok  # its own text sizes nothing
    assert derive_call(merged[:2], table).args == ("i32[16,2]", "bf16[8,1,1,128]=ones")


def test_a_shape_documented_for_each_tensor_of_a_tuple_gives_a_pair():
    """"For tuple input, each tensor has shape ``[max_num_pages, ...]``" (0.7.0 page.py:747-750): a (K, V) pair
    of that shape, not one 4-D tensor (which _unpack_paged_kv_cache would split along dim 1 into 16 "caches");
    its scale cache, "the same tuple or stacked cache format", is a pair too."""
    union = "Union[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]"
    cache = tensor("paged_kv_cache", "Caller-owned packed NVFP4 K/V cache. For tuple input, each tensor has\n"
                                     "shape ``[max_num_pages, page_size, num_kv_heads, head_dim // 2]`` when\n"
                                     "``kv_layout=\"NHD\"``.", annotation=union)
    scales = tensor("kv_cache_sf", "Caller-owned FP8 E4M3 scale cache with the same tuple or stacked cache\n"
                                   "format as ``paged_kv_cache``, replacing ``head_dim // 2`` with\n"
                                   "``head_dim // 16``.", annotation=union)
    assert derive_call([cache, scales], TABLE).args == (["u8[4,16,4,32]"] * 2, ["fp8e4m3[4,16,4,4]"] * 2)


def test_an_unsized_workspace_buffer_is_the_kits_bytes_and_says_so():
    """xqa_mla's "Workspace buffer for temporary computations. Data type should be torch.uint8." (0.7.0 xqa.py)
    gives no size: the kit's workspace_bytes, counted as kit default; any other unsized tensor stays a reason."""
    table = {**TABLE, "workspace_bytes": Dim(1048576, KIT, "pcgkit/sweep/dims.toml")}
    workspace = tensor("workspace_buffer", "Workspace buffer for temporary computations.\nData type should be torch.uint8.")
    derived = derive_call([workspace], table)
    assert derived.args == ("u8[1048576]",) and dict(derived.sources) == {"workspace_buffer": KIT}
    assert not derive_call([workspace], TABLE).ok  # no kit value, no guess
    assert not derive_call([tensor("semaphores", "Semaphore buffer for synchronization.")], table).ok


def test_same_dtype_as_another_parameter_takes_its_dtype():
    """append_kpe: "shape ``[append_indptr[-1], 64]``, same dtype as ``append_ckv``" (0.7.0
    nvfp4_quantize_append_paged_mla_kv_cache, page.py) is float16 when append_ckv's entry names float16 first
    (the release refused float16 with bfloat16: "append_ckv and append_kpe must have the same dtype")."""
    table = {**TABLE, "nnz": Dim(16, KIT)}
    ckv = tensor("append_ckv", "The compressed kv tensor to append in ragged tensor format, shape\n"
                               "``[append_indptr[-1], 512]``, dtype ``torch.float16`` or ``torch.bfloat16``.")
    kpe = tensor("append_kpe", "The rope part to append in ragged tensor format, shape ``[append_indptr[-1], 64]``,\n"
                               "same dtype as ``append_ckv``. Rope must already be applied by the caller.")
    assert derive_call([ckv, kpe], table).args == ("f16[16,512]=ones", "f16[16,64]=ones")


def test_an_upstream_call_the_test_expects_to_raise_or_monkeypatches_is_not_a_call_to_judge():
    """FlashInfer's tests/gemm/test_mm_bf16_fp4.py:548-555 (fb28d7242b35) calls prepare_bf16_fp4_weights with an int32
    B inside `with pytest.raises(TypeError)`; tests/kda/test_recurrent_kda_prefill.py:1064-1092 calls recurrent_kda
    after monkeypatching its backend. Neither is taken; an ordinary call in the same file still is."""
    from lab.sweep.upstream_tests import calls_in

    source = '''import pytest
import torch
from flashinfer import prepare_bf16_fp4_weights, recurrent_kda


def test_b_dtype_must_be_uint8_in_prepare():
    """Prepare rejects non-uint8 B."""
    device = torch.device("cuda")
    b_bad = torch.zeros((64, 64), device=device, dtype=torch.int32)
    b_descale = torch.zeros((4096,), device=device, dtype=torch.uint8)
    with pytest.raises(TypeError):
        prepare_bf16_fp4_weights(b_bad, b_descale, None, backend="cute-dsl")


def test_decode_and_spec_stay_on_existing_backend(monkeypatch):
    q = torch.empty((2, 1, 4, 128), dtype=torch.bfloat16)
    result = recurrent_kda(q, q, q, q, torch.empty((2, 1, 4)))


def test_prepare_ok():
    b = torch.zeros((64, 32), dtype=torch.uint8)
    b_descale = torch.zeros((4096,), dtype=torch.uint8)
    prepare_bf16_fp4_weights(b, b_descale, None, backend="cute-dsl")
'''
    found = calls_in({"tests/gemm/test_mm_bf16_fp4.py": source})
    assert set(found) == {"prepare_bf16_fp4_weights"}
    assert found["prepare_bf16_fp4_weights"]["test"] == "test_prepare_ok"
    assert found["prepare_bf16_fp4_weights"]["args"][0] == "u8[64,32]"
