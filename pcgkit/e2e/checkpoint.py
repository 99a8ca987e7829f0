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

Shapes: every K is a multiple of 128 and every N of 128, so no FP4 GEMM / swizzle padding rule
(K % 16 for the scales, K % 32 / N % 32 tiles, 128x4 scale tiles) is near its edge.
Weights are random (seeded); the model generates nonsense, quickly. The quantization reuses
pcgkit.fp4.reference (FlashInfer's fp4_quantize step by step).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from pcgkit.errors import UsageError
from pcgkit.util import atomic

GROUP_SIZE = 16
E2M1_MAX = 6.0
E4M3_MAX = 448.0
QUANTIZED_PROJECTIONS = (
    "self_attn.q_proj",
    "self_attn.k_proj",
    "self_attn.v_proj",
    "self_attn.o_proj",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj",
)
SPECIAL_TOKENS = ("<unk>", "<s>", "</s>", "<pad>")
TRAINING_TEXT = (
    "the quick brown fox jumps over the lazy dog",
    "piecewise cuda graphs capture the dense layers of a tiny model",
    "a small checkpoint in nvfp4 with block scales of sixteen values",
    "hello world this is a tiny llama model made for a launch test",
    "one two three four five six seven eight nine ten",
)


@dataclasses.dataclass(frozen=True)
class TinyLlamaShape:
    layers: int = 2
    hidden: int = 256
    intermediate: int = 512
    heads: int = 4
    kv_heads: int = 2
    vocab: int = 256  # >= the tokenizer's size; a multiple of 128
    max_positions: int = 2048

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

    def check(self) -> None:
        if self.layers not in (2, 4):
            raise UsageError(f"layers must be 2 or 4, not {self.layers}")
        if self.hidden % self.heads or self.heads % self.kv_heads:
            raise UsageError("hidden must split into heads, and heads into kv_heads groups")
        for name, (out_f, in_f) in self.projections().items():
            if in_f % 128 or out_f % 128:
                raise UsageError(f"{name} is {out_f}x{in_f}: both must be multiples of 128 for the FP4 kernels")


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
        "rope_theta": 10000.0,
        "vocab_size": shape.vocab,
        "bos_token_id": bos_id,
        "eos_token_id": eos_id,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
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
        "input_scale": torch.tensor(amax_input / (E2M1_MAX * E4M3_MAX), dtype=torch.float32),
    }


def dense_weights(shape: TinyLlamaShape, seed: int = 0) -> dict:
    """The unquantized weights (seeded), by Hugging Face name: what the NVFP4 tensors encode."""
    import torch

    generator = torch.Generator().manual_seed(seed)

    def randn(*size: int, std: float = 0.02):
        return torch.randn(*size, generator=generator) * std

    weights = {
        "model.embed_tokens.weight": randn(shape.vocab, shape.hidden, std=1.0),
        "model.norm.weight": torch.ones(shape.hidden),
        "lm_head.weight": randn(shape.vocab, shape.hidden),
    }
    for layer in range(shape.layers):
        prefix = f"model.layers.{layer}"
        weights[f"{prefix}.input_layernorm.weight"] = torch.ones(shape.hidden)
        weights[f"{prefix}.post_attention_layernorm.weight"] = torch.ones(shape.hidden)
        for name, (out_f, in_f) in shape.projections().items():
            weights[f"{prefix}.{name}.weight"] = randn(out_f, in_f)
    return weights


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


def build_tokenizer():
    """A WordLevel tokenizer trained on TRAINING_TEXT (the `tokenizers` library; nothing fetched)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(TRAINING_TEXT, trainers.WordLevelTrainer(special_tokens=list(SPECIAL_TOKENS)))
    return tokenizer


def tokenizer_config() -> dict:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "pad_token": "<pad>",
        "model_max_length": 2048,
        "clean_up_tokenization_spaces": False,
    }


NVFP4 = "nvfp4"
BF16 = "bf16"  # the piecewise control (issue 13): the same model, unquantized
FORMATS = (NVFP4, BF16)


CHECKPOINT_FILES = ("tokenizer.json", "config.json", "tokenizer_config.json", "special_tokens_map.json",
                    "generation_config.json", "hf_quant_config.json", "model.safetensors")


def write_checkpoint(out: Path, shape: TinyLlamaShape = TinyLlamaShape(), seed: int = 0, fmt: str = NVFP4,
                     force: bool = False) -> Path:
    """Write the whole checkpoint into `out` (created; files of the same names replaced only when the
    kit wrote them, or with force: a real checkpoint's config and weights are never overwritten unasked).

    fmt "nvfp4": ModelOpt's NVFP4 layout (above); "bf16": the same seeded weights, every tensor in
    bf16 and no quantization config at all, for the piecewise control launch."""
    if fmt not in FORMATS:
        raise UsageError(f"checkpoint format must be one of {FORMATS}, not {fmt!r}")
    shape.check()
    folder = atomic.OutputFolder(out, force=force).check(CHECKPOINT_FILES)  # before torch is even imported
    from safetensors.torch import save_file

    tokenizer = build_tokenizer()
    if tokenizer.get_vocab_size() > shape.vocab:
        raise UsageError(f"tokenizer has {tokenizer.get_vocab_size()} tokens, more than vocab {shape.vocab}")
    tokenizer.save(str(out / "tokenizer.json"))
    bos_id, eos_id = tokenizer.token_to_id("<s>"), tokenizer.token_to_id("</s>")
    quantized = fmt == NVFP4
    files = {
        "config.json": model_config(shape, bos_id, eos_id, quantized=quantized),
        "tokenizer_config.json": tokenizer_config(),
        "special_tokens_map.json": {k: v for k, v in tokenizer_config().items() if k.endswith("_token")},
        "generation_config.json": {"bos_token_id": bos_id, "eos_token_id": eos_id, "do_sample": False},
    }
    if quantized:
        files["hf_quant_config.json"] = hf_quant_config()
    else:
        (out / "hf_quant_config.json").unlink(missing_ok=True)  # a stale one would make SGLang quantize
    for name, payload in files.items():
        folder.write_text(name, json.dumps(payload, indent=2) + "\n")
    tensors = model_tensors(shape, seed) if quantized else bf16_tensors(shape, seed)
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    folder.record("tokenizer.json", "model.safetensors")
    return out


def bf16_tensors(shape: TinyLlamaShape, seed: int = 0) -> dict:
    """Every tensor of the control checkpoint: the same seeded weights as the NVFP4 one, in bf16."""
    import torch

    return {name: weight.to(torch.bfloat16).contiguous() for name, weight in dense_weights(shape, seed).items()}
