"""Materialize a spec's arguments as tensors (and dtypes, tuples, lists) on CPU, or on the real GPU for
`--real`. Needs torch; no I/O."""

from __future__ import annotations

import math
from typing import Any

from pcgkit.sweep.specs import Call, DtypeArg, NoneArg, SequenceArg, TensorArg


class InputBuildError(Exception):
    """The spec cannot build this argument in the installed torch (an `error`, never a verdict)."""


def torch_dtype(name: str):
    import torch

    table = {
        "bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "i8": torch.int8,
        "u8": torch.uint8, "i32": torch.int32, "u32": getattr(torch, "uint32", None), "i64": torch.int64, "bool": torch.bool,
        "fp8e4m3": getattr(torch, "float8_e4m3fn", None), "fp8e5m2": getattr(torch, "float8_e5m2", None),
        "e8m0": getattr(torch, "float8_e8m0fnu", None),
    }
    dtype = table.get(name)
    if dtype is None:
        raise InputBuildError(f"torch {torch.__version__} has no dtype for {name!r}")
    return dtype


def build_tensor(arg: TensorArg):
    """The tensor on the host (build_arg moves it to the device)."""
    import torch

    if arg.stride:  # a view: the storage the strides reach, filled as the init says, seen through the strides
        extent = 1 + sum((dim - 1) * step for dim, step in zip(arg.shape, arg.stride) if dim)
        flat = build_tensor(TensorArg(arg.dtype, (extent,), arg.init))
        return flat.as_strided(arg.shape, arg.stride)
    dtype = torch_dtype(arg.dtype)
    if arg.init == "values":
        return torch.tensor(arg.values, dtype=torch.float64).reshape(arg.shape).to(dtype)
    if arg.init == "arange":
        return torch.arange(math.prod(arg.shape), dtype=torch.float64).reshape(arg.shape).to(dtype)
    if arg.init == "probs":  # rows that sum to one
        return torch.full(arg.shape, 1.0 / arg.shape[-1], dtype=torch.float64).to(dtype)
    if arg.init == "randn":
        generator = torch.Generator().manual_seed(0)
        return torch.randn(arg.shape, generator=generator, dtype=torch.float32).to(dtype)
    fill = 1.0 if arg.init == "ones" else 0.0
    return torch.full(arg.shape, fill, dtype=torch.float32).to(dtype)


def build_arg(arg: Any, device: str = "cpu") -> Any:
    if isinstance(arg, TensorArg):
        return build_tensor(arg).to(device)
    if isinstance(arg, DtypeArg):
        return torch_dtype(arg.dtype)
    if isinstance(arg, NoneArg):
        return None
    if isinstance(arg, SequenceArg):
        items = [build_arg(item, device) for item in arg.items]
        return items if arg.as_list else tuple(items)
    return arg


def build_call(call: Call, device: str = "cpu") -> tuple[tuple, dict]:
    return tuple(build_arg(a, device) for a in call.args), {k: build_arg(v, device) for k, v in call.kwargs}
