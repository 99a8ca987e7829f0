"""Does a failure show this bug's family, from whatever part of the evidence survived the paste? Pure: no I/O.

The family is three facts together: dynamo was tracing (its exception, its message body, its frames,
its user-code section or its hints), the code it traced was FlashInfer's FP4 quantize path (an fp4
frame, `fp4_quantize` named, the FP4 build flag `-DENABLE_FP4` in a failing source line), and it
died where this bug dies (the lazy JIT loader's frames or names, or the two known rejections:
`torch.compiler.disable` under fullgraph, fake tensors reaching the loader). Each fact can survive a
paste through different text, so each is a list of the signs seen; a paste that kept only one sign
of each still shows the family, and `survived` says how much evidence there was (it sets confidence).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterable

from pcgkit.values.signature import Frame

_DYNAMO_SIGNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("dynamo's exception", re.compile(r"torch\._dynamo\.exc\.\w+|\bUnsupported: ")),
    ("dynamo's message", re.compile(r"Attempted to call function marked as skipped|Skip calling `torch\.compiler\.disable|"
                                    r"Attempted to graph break|Dynamo does not know how to trace|Unsupported method call|"
                                    r"Dynamo failed to run FX node|graph break", re.I)),
    ("dynamo's user-code section", re.compile(r"from user code:")),
    ("dynamo's hint", re.compile(r"TORCHDYNAMO_VERBOSE|compile-graph-break-site|Developer debug context")),
    ("dynamo's polyfill frame", re.compile(r"_dynamo/polyfills|getattr_and_trace")),
    ("dynamo's eval_frame", re.compile(r"torch[./]_dynamo[./]eval_frame")),
    ("dynamo named as the tracer", re.compile(r"\b(?:[Tt]orch\.?)?[Dd]ynamo (?:refuses to|cannot|can't|could not|fails to|"
                                              r"failed to) trace")),
    ("torch.compile(fullgraph=True)", re.compile(r"torch\.compile\([^)]{0,80}fullgraph\s*=\s*True|fullgraph=True")),
)
_FP4_SIGNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("fp4_quantize named", re.compile(r"\bfp4_quantize\b")),
    ("FlashInfer's FP4 module", re.compile(r"fp4_quantization(?:\.py)?|gen_fp4_quantization|get_fp4_quantization_module")),
    ("the FP4 build flag", re.compile(r"-DENABLE_FP4")),
)
_LOADER_NAMES = ("get_fp4_quantization_module", "build_and_load", "gen_fp4_quantization", "is_cuda_version_at_least",
                 "get_cuda_version", "get_cuda_path", "is_aot", "gen_jit_spec", "get_aot_artifacts")
_LOADER_SIGNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("the JIT loader named", re.compile(r"\b(?:" + "|".join(_LOADER_NAMES) + r")\b")),
    ("torch.compiler.disable rejected", re.compile(r"Skip calling `torch\.compiler\.disable\(\)`d function")),
    ("fake tensors at the loader", re.compile(r"data pointer of Tensor|FakeTensor|fake tensor", re.I)),
)


@dataclasses.dataclass(frozen=True)
class FamilyEvidence:
    dynamo: tuple[str, ...]
    fp4: tuple[str, ...]
    loader: tuple[str, ...]

    @property
    def complete(self) -> bool:
        """All three facts shown: the paste shows this bug."""
        return bool(self.dynamo and self.fp4 and self.loader)

    @property
    def survived(self) -> tuple[str, ...]:
        return self.dynamo + self.fp4 + self.loader


def _signs(text: str, table: tuple[tuple[str, re.Pattern[str]], ...]) -> list[str]:
    return [name for name, pattern in table if pattern.search(text)]


def family_evidence(text: str, frames: Iterable[Frame], exception_type: str | None) -> FamilyEvidence:
    """The signs of each fact in a failure's text (message, source lines, nearby lines) and frames. Pure."""
    frames = tuple(frames)
    dynamo = _signs(text, _DYNAMO_SIGNS)
    if exception_type and (exception_type.startswith("torch._dynamo.") or exception_type.endswith("Unsupported")):
        dynamo.insert(0, "dynamo's exception")
    if any(f.file.startswith("torch/_dynamo/") for f in frames):
        dynamo.append("dynamo frames")
    fp4 = _signs(text, _FP4_SIGNS)
    if any(f.file.startswith("flashinfer/") and ("fp4" in f.file or "fp4" in f.function) for f in frames):
        fp4.insert(0, "FlashInfer fp4 frames")
    loader = _signs(text, _LOADER_SIGNS)
    if any(f.file.startswith("flashinfer/") and (f.function.startswith(_LOADER_NAMES) or "/jit/" in f"/{f.file}")
           for f in frames):
        loader.insert(0, "JIT-loader frames")
    return FamilyEvidence(tuple(dict.fromkeys(dynamo)), tuple(dict.fromkeys(fp4)), tuple(dict.fromkeys(loader)))
