"""A tiny Llama-style NVFP4 checkpoint in ModelOpt's layout (or its bf16 twin), made locally (no downloads).

Layout (as ModelOpt's NVFP4 exports, e.g. nvidia/Llama-3.1-8B-Instruct-FP4, ship it):
  config.json            LlamaForCausalLM + a flat `quantization_config` (quant_method "modelopt",
                         quant_algo "NVFP4", group_size 16, ignore ["lm_head"])
  hf_quant_config.json   the older nested form {"producer", "quantization": {...}} that SGLang
                         releases before the flat form read
  model.safetensors      per quantized linear: weight uint8 [out, in/2] (two E2M1 per byte, even
                         element in the low nibble), weight_scale float8_e4m3fn [out, in/16] (linear
                         layout: SGLang swizzles after loading), weight_scale_2 fp32 scalar,
                         input_scale fp32 scalar; embeddings, norms and lm_head in bf16
  tokenizer.json         a WordLevel tokenizer trained here on a few sentences, + tokenizer_config.json

Shapes: every K and N is a multiple of 128, so no FP4 GEMM / swizzle padding rule (K % 16 for the scales,
K % 32 / N % 32 tiles, 128x4 scale tiles) is near its edge. Weights are random (seeded); the model generates
nonsense, quickly. The quantization reuses pcgkit.fp4.reference (FlashInfer's fp4_quantize step by step).

Named shapes (NAMED_SHAPES, issue 40): published architectures (each cites the config it was copied from) with
random bf16 weights, for measuring at a real model's size. The bf16 writer streams tensor by tensor (generated on
`device`) into safetensors shards of at most SHARD_BYTES with Hugging Face's index file, so an 8B checkpoint never
sits whole in memory; the tokenizer is filled with placeholder words up to the shape's vocabulary, so that every
token id the model can emit decodes.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

from pcgkit.errors import UsageError
from pcgkit.util import atomic

GROUP_SIZE = 16
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>", "<pad>")
TRAINING_TEXT = (
    "the quick brown fox jumps over the lazy dog",
    "piecewise cuda graphs capture the dense layers of a tiny model",
    "a small checkpoint in nvfp4 with block scales of sixteen values",
    "hello world this is a tiny llama model made for a launch test",
    "one two three four five six seven eight nine ten",
)


TINY = "tiny"


@dataclasses.dataclass(frozen=True)
class TinyLlamaShape:
    """A Llama-style architecture: the kit's tiny one by default, or a published one (NAMED_SHAPES)."""

    layers: int = 2
    hidden: int = 256
    intermediate: int = 512
    heads: int = 4
    kv_heads: int = 2
    vocab: int = 256  # >= the tokenizer's size; a multiple of 128
    max_positions: int = 2048
    name: str = TINY
    rope_theta: float = 10000.0
    rope_scaling: tuple[tuple[str, float | int | str], ...] = ()  # config.json's rope_scaling, as pairs (frozen)
    tie_word_embeddings: bool = False
    source: str = ""  # where a named shape's numbers were read

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def projections(self) -> dict[str, tuple[int, int]]:
        """(out_features, in_features) of each quantized projection in one layer."""
        kv = self.kv_heads * self.head_dim
        return {
            "self_attn.q_proj": (self.hidden, self.hidden),
            "self_attn.k_proj": (kv, self.hidden),
            "self_attn.v_proj": (kv, self.hidden),
            "self_attn.o_proj": (self.hidden, self.hidden),
            "mlp.gate_proj": (self.intermediate, self.hidden),
            "mlp.up_proj": (self.intermediate, self.hidden),
            "mlp.down_proj": (self.hidden, self.intermediate),
        }

    def tensor_specs(self) -> list[tuple[str, tuple[int, ...]]]:
        """(Hugging Face name, shape) of every tensor, in the order the writers generate them. Pure."""
        specs: list[tuple[str, tuple[int, ...]]] = [("model.embed_tokens.weight", (self.vocab, self.hidden)),
                                                    ("model.norm.weight", (self.hidden,))]
        if not self.tie_word_embeddings:
            specs.append(("lm_head.weight", (self.vocab, self.hidden)))
        for layer in range(self.layers):
            prefix = f"model.layers.{layer}"
            specs += [(f"{prefix}.input_layernorm.weight", (self.hidden,)),
                      (f"{prefix}.post_attention_layernorm.weight", (self.hidden,))]
            specs += [(f"{prefix}.{name}.weight", dims) for name, dims in self.projections().items()]
        return specs

    def parameter_count(self) -> int:
        """Parameters of the unquantized model, counted from the shapes (nothing allocated). Pure."""
        return sum(math.prod(dims) for _, dims in self.tensor_specs())

    def check(self) -> None:
        if self.name == TINY and self.layers not in (2, 4):
            raise UsageError(f"layers must be 2 or 4, not {self.layers}")
        if self.hidden % self.heads or self.heads % self.kv_heads:
            raise UsageError("hidden must split into heads, and heads into kv_heads groups")
        for name, (out_f, in_f) in self.projections().items():
            if in_f % 128 or out_f % 128:
                raise UsageError(f"{name} is {out_f}x{in_f}: both must be multiples of 128 for the FP4 kernels")


QUANTIZED_PROJECTIONS = tuple(TinyLlamaShape().projections())  # every layer's linears; embeddings and lm_head stay bf16
LLAMA3_ROPE = (("high_freq_factor", 4.0), ("low_freq_factor", 1.0), ("original_max_position_embeddings", 8192),
               ("rope_type", "llama3"))
NAMED_SHAPES = {
    "llama-3.2-1b": TinyLlamaShape(
        layers=16, hidden=2048, intermediate=8192, heads=32, kv_heads=8, vocab=128256, max_positions=131072,
        name="llama-3.2-1b", rope_theta=500000.0, rope_scaling=(("factor", 32.0), *LLAMA3_ROPE), tie_word_embeddings=True,
        source="config.json of meta-llama/Llama-3.2-1B (https://huggingface.co/meta-llama/Llama-3.2-1B/blob/main/config.json), "
               "read 2026-12-05 as copied in github.com/kevinstephano/thunder_model_blocks hf_llama/llama_config.py "
               "(_commit_hash 4e20de36, the -Instruct twin: same architecture); published size 1.23 B parameters"),
    "llama-3.1-8b": TinyLlamaShape(
        layers=32, hidden=4096, intermediate=14336, heads=32, kv_heads=8, vocab=128256, max_positions=131072,
        name="llama-3.1-8b", rope_theta=500000.0, rope_scaling=(("factor", 8.0), *LLAMA3_ROPE), tie_word_embeddings=False,
        source="config.json of meta-llama/Llama-3.1-8B (https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json), "
               "read 2026-12-05 as transcribed in github.com/zyzshishui/slime scripts/models/llama3.1-8B.sh (32 layers, hidden "
               "4096, FFN 14336, 32 heads, 8 KV groups, 131072 positions, rotary base 500000, rope scaling factor 8.0, vocab "
               "128256, untied) and github.com/vulkomilev/oumi configs/recipes/llama3_1/README.md (the same numbers); "
               "published size 8.03 B parameters"),
}


def quant_config_flat() -> dict:
    """config.json's quantization_config, the form current ModelOpt exports write."""
    return {
        "quant_method": "modelopt",
        "quant_algo": "NVFP4",
        "producer": {"name": "modelopt", "version": "pcgkit-tiny"},
        "group_size": GROUP_SIZE,
        "kv_cache_quant_algo": None,
        "ignore": ["lm_head"],
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 4, "type": "float", "group_size": GROUP_SIZE, "dynamic": False},
                "input_activations": {"num_bits": 4, "type": "float", "group_size": GROUP_SIZE, "dynamic": False},
            }
        },
    }


def hf_quant_config() -> dict:
    """hf_quant_config.json, the nested form older ModelOpt exports (and SGLang releases) use."""
    return {
        "producer": {"name": "modelopt", "version": "pcgkit-tiny"},
        "quantization": {
            "quant_algo": "NVFP4",
            "kv_cache_quant_algo": None,
            "group_size": GROUP_SIZE,
            "exclude_modules": ["lm_head"],
        },
    }


def model_config(shape: TinyLlamaShape, bos_id: int, eos_id: int, quantized: bool = True) -> dict:
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": shape.hidden,
        "intermediate_size": shape.intermediate,
        "num_hidden_layers": shape.layers,
        "num_attention_heads": shape.heads,
        "num_key_value_heads": shape.kv_heads,
        "head_dim": shape.head_dim,
        "hidden_act": "silu",
        "max_position_embeddings": shape.max_positions,
        "rms_norm_eps": 1e-5,
        "vocab_size": shape.vocab,
        "bos_token_id": bos_id,
        "eos_token_id": eos_id,
        "tie_word_embeddings": shape.tie_word_embeddings,
        "torch_dtype": "bfloat16",
        "rope_theta": shape.rope_theta,
    }
    if shape.rope_scaling:
        config["rope_scaling"] = dict(shape.rope_scaling)
    if shape.name != TINY:
        config["pcgkit_shape"] = {"name": shape.name, "source": shape.source, "weights": "random (seeded), bf16"}
    if quantized:
        config["quantization_config"] = quant_config_flat()
    return config


def quantize_linear(weight, amax_input: float) -> dict:
    """ModelOpt's four tensors for one linear, from a bf16/fp32 [out, in] weight."""
    import torch

    from pcgkit.fp4 import reference as ref

    weight = weight.to(torch.float32)
    global_scale = ref.global_scale_for(weight)  # 448 * 6 / amax(w)
    packed, scales = ref.quantize(weight, global_scale, is_sf_swizzled_layout=False)
    out_features, in_features = weight.shape
    return {
        "weight": packed.contiguous(),
        "weight_scale": scales.reshape(out_features, in_features // GROUP_SIZE).view(torch.float8_e4m3fn).contiguous(),
        # ModelOpt stores the per-tensor scales as dequantization factors: amax / (6 * 448).
        "weight_scale_2": (1.0 / global_scale).reshape(()).to(torch.float32),
        "input_scale": torch.tensor(amax_input / (ref.E2M1_MAX * ref.E4M3_MAX), dtype=torch.float32),
    }


def _initial(name: str, dims: tuple[int, ...], generator, device: str = "cpu"):
    """One tensor's seeded fp32 value: norms are ones (no draw), embeddings N(0, 1), the rest N(0, 0.02)."""
    import torch

    if name.endswith("norm.weight"):
        return torch.ones(*dims, device=device)
    std = 1.0 if name == "model.embed_tokens.weight" else 0.02
    return torch.randn(*dims, generator=generator, device=device) * std


def dense_weights(shape: TinyLlamaShape, seed: int = 0) -> dict:
    """The unquantized weights (seeded), by Hugging Face name: what the NVFP4 tensors encode."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    return {name: _initial(name, dims, generator) for name, dims in shape.tensor_specs()}


def model_tensors(shape: TinyLlamaShape, seed: int = 0) -> dict:
    """Every tensor of the checkpoint: projections in NVFP4 (ModelOpt's four tensors), the rest bf16."""
    import torch

    tensors = {}
    for name, weight in dense_weights(shape, seed).items():
        module = name.removesuffix(".weight")
        if module.endswith(QUANTIZED_PROJECTIONS):
            # Activations after an RMSNorm of unit weight sit within a few units; 8 is generous.
            for suffix, tensor in quantize_linear(weight, amax_input=8.0).items():
                tensors[f"{module}.{suffix}"] = tensor
        else:
            tensors[name] = weight.to(torch.bfloat16)
    return tensors


def build_tokenizer(vocab_size: int | None = None):
    """A WordLevel tokenizer trained on TRAINING_TEXT (the `tokenizers` library; nothing fetched).

    vocab_size: fill the vocabulary with placeholder words `w<id>` up to that size, so that every id a
    model of that vocabulary emits decodes to a word (the named shapes; the tiny model leaves it out)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(TRAINING_TEXT, trainers.WordLevelTrainer(special_tokens=list(SPECIAL_TOKENS)))
    if vocab_size is None or vocab_size <= tokenizer.get_vocab_size():
        return tokenizer
    vocab = dict(tokenizer.get_vocab())
    vocab.update({f"w{i}": i for i in range(len(vocab), vocab_size)})
    filled = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    filled.pre_tokenizer = pre_tokenizers.Whitespace()
    filled.add_special_tokens(list(SPECIAL_TOKENS))
    return filled


def tokenizer_config(max_length: int = 2048) -> dict:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "pad_token": "<pad>",
        "model_max_length": max_length,
        "clean_up_tokenization_spaces": False,
    }


NVFP4 = "nvfp4"
BF16 = "bf16"  # the piecewise control (issue 13): the same model, unquantized
FORMATS = (NVFP4, BF16)


SHARD_BYTES = 4 << 30  # Hugging Face's habit (~4-5 GB per file); a one-shard model is plain model.safetensors
INDEX_FILE = "model.safetensors.index.json"


def shard_plan(specs: list[tuple[str, tuple[int, ...]]], bytes_per_value: int, max_bytes: int = SHARD_BYTES) -> list[list[str]]:
    """Tensor names per shard file, in order, each shard at most max_bytes (a larger tensor alone). Pure."""
    shards: list[list[str]] = [[]]
    size = 0
    for name, dims in specs:
        nbytes = math.prod(dims) * bytes_per_value
        if shards[-1] and size + nbytes > max_bytes:
            shards.append([])
            size = 0
        shards[-1].append(name)
        size += nbytes
    return shards


def shard_file_names(count: int) -> list[str]:
    """model.safetensors for one shard, else Hugging Face's model-0000i-of-0000n.safetensors. Pure."""
    if count == 1:
        return ["model.safetensors"]
    return [f"model-{i:05d}-of-{count:05d}.safetensors" for i in range(1, count + 1)]


def write_bf16_shards(out: Path, shape: TinyLlamaShape, seed: int = 0, device: str = "cpu",
                      max_bytes: int = SHARD_BYTES) -> list[str]:
    """The bf16 weights, generated tensor by tensor on `device` (one seeded generator, in tensor_specs
    order: on the CPU the same values as dense_weights) and written shard by shard; the index file when
    there are several. Only one shard's tensors are ever held. Returns the file names written."""
    import torch
    from safetensors.torch import save_file

    specs = shape.tensor_specs()
    dims_of = dict(specs)
    plan = shard_plan(specs, 2, max_bytes)
    names = shard_file_names(len(plan))
    for stale in [*out.glob("model*.safetensors"), out / INDEX_FILE]:
        stale.unlink(missing_ok=True)
    generator = torch.Generator(device=device).manual_seed(seed)
    weight_map, total = {}, 0
    for file_name, tensor_names in zip(names, plan):
        shard = {}
        for name in tensor_names:
            shard[name] = _initial(name, dims_of[name], generator, device).to(torch.bfloat16).cpu().contiguous()
            weight_map[name] = file_name
            total += shard[name].numel() * 2
        save_file(shard, str(out / file_name), metadata={"format": "pt"})
        del shard
    if len(names) > 1:
        index = {"metadata": {"total_size": total}, "weight_map": weight_map}
        (out / INDEX_FILE).write_text(json.dumps(index, indent=2) + "\n")
    return names


CHECKPOINT_FILES = ("tokenizer.json", "config.json", "tokenizer_config.json", "special_tokens_map.json",
                    "generation_config.json", "hf_quant_config.json", "model.safetensors", INDEX_FILE)


def write_checkpoint(out: Path, shape: TinyLlamaShape = TinyLlamaShape(), seed: int = 0, fmt: str = NVFP4,
                     device: str = "cpu", force: bool = False) -> Path:
    """Write the whole checkpoint into `out` (created; files of the same names, and weight shards it would
    replace, only when the kit wrote them, or with force: a real checkpoint is never overwritten unasked).

    fmt "nvfp4": ModelOpt's NVFP4 layout (above; the tiny shapes only); "bf16": the same seeded weights,
    every tensor in bf16 and no quantization config at all (the piecewise control, and the named shapes,
    streamed in shards, generated on `device`)."""
    if fmt not in FORMATS:
        raise UsageError(f"checkpoint format must be one of {FORMATS}, not {fmt!r}")
    shape.check()
    quantized = fmt == NVFP4
    if quantized and shape.name != TINY:
        raise UsageError(f"the {shape.name} shape is written in bf16 only (the NVFP4 writer quantizes on the CPU, "
                         "in memory: meant for the tiny model)")
    shards = sorted(p.name for p in out.glob("model*.safetensors")) if out.is_dir() else []
    folder = atomic.OutputFolder(out, force=force).check([*CHECKPOINT_FILES, *shards])  # before torch is imported
    from safetensors.torch import save_file

    tokenizer = build_tokenizer(None if shape.name == TINY else shape.vocab)
    if tokenizer.get_vocab_size() > shape.vocab:
        raise UsageError(f"tokenizer has {tokenizer.get_vocab_size()} tokens, more than vocab {shape.vocab}")
    tokenizer.save(str(out / "tokenizer.json"))
    bos_id, eos_id = tokenizer.token_to_id("<s>"), tokenizer.token_to_id("</s>")
    files = {
        "config.json": model_config(shape, bos_id, eos_id, quantized=quantized),
        "tokenizer_config.json": tokenizer_config(shape.max_positions),
        "special_tokens_map.json": {k: v for k, v in tokenizer_config().items() if k.endswith("_token")},
        "generation_config.json": {"bos_token_id": bos_id, "eos_token_id": eos_id, "do_sample": False},
    }
    if quantized:
        files["hf_quant_config.json"] = hf_quant_config()
    else:
        (out / "hf_quant_config.json").unlink(missing_ok=True)  # a stale one would make SGLang quantize
    for name, payload in files.items():
        folder.write_text(name, json.dumps(payload, indent=2) + "\n")
    if quantized:
        save_file(model_tensors(shape, seed), str(out / "model.safetensors"), metadata={"format": "pt"})
        weights = ["model.safetensors"]
    else:
        weights = [*(write_bf16_shards(out, shape, seed, device) or ()),
                   *([INDEX_FILE] if (out / INDEX_FILE).is_file() else [])]
    folder.record("tokenizer.json", *weights)
    return out
