"""The tiny NVFP4 checkpoint: ModelOpt's file layout, packed tensors that decode back, a local tokenizer.

SGLang's own view of it (ModelOptFp4Config.from_config, create_weights' shapes and dtypes) is
checked per SGLang release by `bin/pcgkit lab validate-launch`, recorded in
fixtures/sglang_launch_validation.json and pinned by tests/test_e2e_launch.py.
"""

from __future__ import annotations

import json
import math

import pytest
import torch
from safetensors import safe_open

from pcgkit.e2e.checkpoint import QUANTIZED_PROJECTIONS, TinyLlamaShape, dense_weights, model_tensors, write_checkpoint
from pcgkit.errors import UsageError
from pcgkit.fp4 import reference as ref


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return write_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny-nvfp4")


def _tensors(path):
    with safe_open(str(path / "model.safetensors"), framework="pt") as handle:
        return {name: handle.get_tensor(name) for name in handle.keys()}


def test_files_and_quantization_configs(checkpoint):
    """config.json carries the flat ModelOpt NVFP4 config; hf_quant_config.json the nested one."""
    names = {p.name for p in checkpoint.iterdir()}
    assert {"config.json", "hf_quant_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= names
    config = json.loads((checkpoint / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["num_hidden_layers"] == 2
    quant = config["quantization_config"]
    assert (quant["quant_method"], quant["quant_algo"], quant["group_size"], quant["ignore"]) == ("modelopt", "NVFP4", 16, ["lm_head"])
    nested = json.loads((checkpoint / "hf_quant_config.json").read_text())["quantization"]
    assert (nested["quant_algo"], nested["group_size"], nested["exclude_modules"]) == ("NVFP4", 16, ["lm_head"])


def test_every_linear_has_the_packed_nvfp4_tensors(checkpoint):
    """Each quantized projection: uint8 [N, K/2], e4m3 [N, K/16], fp32 scalar weight_scale_2 and input_scale."""
    tensors = _tensors(checkpoint)
    shape = TinyLlamaShape()
    for layer in range(shape.layers):
        for name, (out_f, in_f) in shape.projections().items():
            prefix = f"model.layers.{layer}.{name}"
            assert tensors[f"{prefix}.weight"].dtype == torch.uint8
            assert tuple(tensors[f"{prefix}.weight"].shape) == (out_f, in_f // 2)
            assert tensors[f"{prefix}.weight_scale"].dtype == torch.float8_e4m3fn
            assert tuple(tensors[f"{prefix}.weight_scale"].shape) == (out_f, in_f // 16)
            for scalar in ("weight_scale_2", "input_scale"):
                assert tensors[f"{prefix}.{scalar}"].dtype == torch.float32 and tensors[f"{prefix}.{scalar}"].dim() == 0
    assert tensors["lm_head.weight"].dtype == torch.bfloat16  # excluded from quantization, as configured
    assert sum(n.endswith(".weight_scale_2") for n in tensors) == shape.layers * len(QUANTIZED_PROJECTIONS)


def test_packed_weights_decode_to_the_original(checkpoint):
    """e2m1 * weight_scale * weight_scale_2 gives back every seeded projection within NVFP4's rounding error."""
    tensors = _tensors(checkpoint)
    dense = dense_weights(TinyLlamaShape(), seed=0)
    checked = 0
    for name, original in dense.items():
        module = name.removesuffix(".weight")
        if not module.endswith(QUANTIZED_PROJECTIONS):
            continue
        decoded = ref.dequantize(
            tensors[f"{module}.weight"],
            tensors[f"{module}.weight_scale"].view(torch.uint8),
            1.0 / tensors[f"{module}.weight_scale_2"],
            is_sf_swizzled_layout=False,
        )
        relative = float((decoded - original).norm() / original.norm())
        # NVFP4 with E4M3 block scales lands near 0.1 on Gaussian weights; a wrong layout is ~1.4.
        assert relative < 0.15, f"{module}: relative error {relative:.3f}: the layout or the scales are wrong"
        checked += 1
    assert checked == 2 * len(QUANTIZED_PROJECTIONS)


def test_generation_is_deterministic():
    """The same seed gives byte-identical tensors (a reproduction must not change between runs)."""
    shape = TinyLlamaShape()
    first, second = model_tensors(shape, seed=3), model_tensors(shape, seed=3)
    assert all(torch.equal(first[k].view(torch.uint8) if first[k].dtype == torch.float8_e4m3fn else first[k],
                           second[k].view(torch.uint8) if second[k].dtype == torch.float8_e4m3fn else second[k])
               for k in first)


def test_tokenizer_is_local_and_knows_its_special_tokens(checkpoint):
    """tokenizer.json encodes a training sentence without <unk>; config's bos/eos ids are its own."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(checkpoint / "tokenizer.json"))
    ids = tokenizer.encode("the quick brown fox").ids
    assert len(ids) == 4 and tokenizer.token_to_id("<unk>") not in ids
    config = json.loads((checkpoint / "config.json").read_text())
    assert config["bos_token_id"] == tokenizer.token_to_id("<s>")
    assert config["eos_token_id"] == tokenizer.token_to_id("</s>")
    assert tokenizer.get_vocab_size() <= config["vocab_size"]


@pytest.mark.parametrize("bad", [TinyLlamaShape(layers=3), TinyLlamaShape(hidden=200, heads=4, kv_heads=2)])
def test_shapes_the_kernels_would_reject_are_refused(bad, tmp_path):
    """A layer count other than 2/4, or dimensions off the 128 grid, is a usage error before anything is written."""
    with pytest.raises(UsageError):
        write_checkpoint(tmp_path / "x", bad)
    assert not (tmp_path / "x").exists()


def test_cli_writes_a_four_layer_checkpoint(tmp_path, capsys):
    """`pcgkit e2e checkpoint --out DIR --layers 4` writes the checkpoint and says where."""
    from pcgkit.cli import main

    assert main(["e2e", "checkpoint", "--out", str(tmp_path / "c4"), "--layers", "4"]) == 0
    assert json.loads((tmp_path / "c4" / "config.json").read_text())["num_hidden_layers"] == 4
    assert "model.layers.3.mlp.down_proj.weight_scale" in _tensors(tmp_path / "c4")
    assert str(tmp_path / "c4") in capsys.readouterr().out


def test_bf16_control_checkpoint_is_the_same_model_unquantized(tmp_path):
    """The control's checkpoint: the NVFP4 one's seeded weights in bf16, no quantization config anywhere."""
    from pcgkit.e2e.checkpoint import BF16

    out = tmp_path / "ckpt"
    write_checkpoint(out, fmt="nvfp4")  # a stale NVFP4 checkpoint in the same folder must not leak through
    write_checkpoint(out, fmt=BF16)
    config = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in config and not (out / "hf_quant_config.json").exists()
    tensors = _tensors(out)
    dense = dense_weights(TinyLlamaShape())
    assert set(tensors) == set(dense)
    assert all(t.dtype == torch.bfloat16 for t in tensors.values())
    assert torch.equal(tensors["model.layers.0.mlp.down_proj.weight"], dense["model.layers.0.mlp.down_proj.weight"].to(torch.bfloat16))
    assert (out / "tokenizer.json").exists()


def test_unknown_checkpoint_format_is_refused(tmp_path):
    """Only nvfp4 and bf16 are written."""
    with pytest.raises(UsageError, match="format"):
        write_checkpoint(tmp_path, fmt="fp8")


# Named shapes (issue 40): published architectures with random bf16 weights, for measuring at a real size.

def test_named_shapes_have_the_published_parameter_counts_without_allocating():
    """Llama-3.2-1B and Llama-3.1-8B count 1,235,814,400 and 8,030,261,248 parameters from their shapes alone."""
    from pcgkit.e2e.checkpoint import NAMED_SHAPES

    counts = {name: shape.parameter_count() for name, shape in NAMED_SHAPES.items()}
    assert counts == {"llama-3.2-1b": 1_235_814_400, "llama-3.1-8b": 8_030_261_248}
    assert TinyLlamaShape().parameter_count() == 1_312_000  # the cost file's "1.31 M parameters"
    for shape in NAMED_SHAPES.values():
        shape.check()  # 16 and 32 layers are allowed for named shapes, and every projection is on the 128 grid
        assert shape.source.startswith("config.json of meta-llama/") and "read 2026-12-05" in shape.source


def test_named_config_carries_the_published_architecture():
    """config.json of the 8B shape: its dimensions, llama3 rope scaling, untied head; the 1B one ties it and ships no lm_head."""
    from pcgkit.e2e.checkpoint import NAMED_SHAPES, model_config

    config = model_config(NAMED_SHAPES["llama-3.1-8b"], 1, 2, quantized=False)
    assert (config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"], config["num_attention_heads"],
            config["num_key_value_heads"], config["head_dim"], config["vocab_size"]) == (4096, 14336, 32, 32, 8, 128, 128256)
    assert config["rope_theta"] == 500000.0 and config["rope_scaling"]["rope_type"] == "llama3"
    assert config["rope_scaling"]["factor"] == 8.0 and config["tie_word_embeddings"] is False
    assert "quantization_config" not in config
    one_b = NAMED_SHAPES["llama-3.2-1b"]
    assert model_config(one_b, 1, 2, quantized=False)["tie_word_embeddings"] is True
    assert "lm_head.weight" not in dict(one_b.tensor_specs())


def test_sharded_bf16_writer_streams_the_same_weights_as_the_in_memory_one(tmp_path):
    """Forced into several shards, the streaming writer's tensors are dense_weights' in bf16 and the index maps each to its file."""
    from pcgkit.e2e.checkpoint import INDEX_FILE, shard_plan, write_bf16_shards

    shape = TinyLlamaShape()
    total = sum(math.prod(d) for _, d in shape.tensor_specs()) * 2
    count = len(shard_plan(shape.tensor_specs(), 2, total // 3 + 1))
    names = write_bf16_shards(tmp_path, shape, seed=3, max_bytes=total // 3 + 1)
    assert count >= 3 and names == [f"model-{i:05d}-of-{count:05d}.safetensors" for i in range(1, count + 1)]
    assert sorted(p.name for p in tmp_path.glob("*.safetensors")) == names
    index = json.loads((tmp_path / INDEX_FILE).read_text())
    assert index["metadata"]["total_size"] == total
    expected = {name: weight.to(torch.bfloat16) for name, weight in dense_weights(shape, seed=3).items()}
    assert set(index["weight_map"]) == set(expected)
    for name, tensor in expected.items():
        with safe_open(str(tmp_path / index["weight_map"][name]), framework="pt") as handle:
            assert torch.equal(handle.get_tensor(name), tensor), name


def test_shard_plan_keeps_order_and_puts_an_oversized_tensor_alone():
    """Shards fill in order up to the limit; a tensor larger than the limit gets a shard of its own."""
    from pcgkit.e2e.checkpoint import shard_file_names, shard_plan

    specs = [("a", (4,)), ("b", (4,)), ("big", (100,)), ("c", (2,))]
    assert shard_plan(specs, 1, max_bytes=8) == [["a", "b"], ["big"], ["c"]]
    assert shard_file_names(1) == ["model.safetensors"]


def test_cli_writes_a_named_shape_scaled_down_by_nothing_but_refuses_nvfp4(tmp_path, monkeypatch, capsys):
    """`e2e checkpoint --shape llama-3.2-1b` writes the named config with a full-vocabulary tokenizer; NVFP4 or --layers is refused."""
    from tokenizers import Tokenizer

    from pcgkit.cli import main
    from pcgkit.e2e import checkpoint as ck

    written = {}
    monkeypatch.setattr(ck, "write_bf16_shards", lambda out, shape, seed, device: written.update(shape=shape, device=device))
    assert main(["e2e", "checkpoint", "--out", str(tmp_path / "c"), "--shape", "llama-3.2-1b", "--device", "cpu"]) == 0
    assert written["shape"] is ck.NAMED_SHAPES["llama-3.2-1b"] and "1235.81 M parameters" in capsys.readouterr().out
    config = json.loads((tmp_path / "c" / "config.json").read_text())
    assert config["num_hidden_layers"] == 16 and config["pcgkit_shape"]["name"] == "llama-3.2-1b"
    tokenizer = Tokenizer.from_file(str(tmp_path / "c" / "tokenizer.json"))
    assert tokenizer.get_vocab_size() == 128256 and tokenizer.decode([128255]) == "w128255"
    assert tokenizer.token_to_id("</s>") == config["eos_token_id"]
    assert main(["e2e", "checkpoint", "--out", str(tmp_path / "d"), "--shape", "llama-3.2-1b", "--format", "nvfp4"]) != 0
    assert main(["e2e", "checkpoint", "--out", str(tmp_path / "d"), "--shape", "llama-3.1-8b", "--layers", "2"]) != 0
