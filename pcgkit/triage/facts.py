"""Versions, hardware, model and flags read from a log's text, each with the line it came from. Pure.

Only what the log prints is reported; a fact that is inferred (a compute capability from the
FlashInfer module name SGLang picked by it) says so in `how`.
"""

from __future__ import annotations

import dataclasses
import re

from pcgkit.values.paste import interesting_lines

_FACT_RES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("gpu", re.compile(r"(NVIDIA (?:GeForce |RTX )?[A-Z][\w-]*(?: [A-Z0-9][\w-]*){0,3}|DGX Spark|GB10)\b"), "named"),
    ("compute_capability", re.compile(r"Current capability: (\d+)"), "SGLang's quantization check"),
    ("compute_capability", re.compile(r"[Cc]ompute [Cc]apability:? (\d+\.\d+)"), "named"),
    ("compute_capability", re.compile(r"gen_fp4_quantization_(sm1\d\d[af]?)_module"),
     "inferred: FlashInfer builds the fp4 module for the GPU's own architecture"),
    ("compute_capability", re.compile(r"(sm_1[0-2]\d[af]?)\b"), "an architecture named by the toolchain"),
    # a release tag (lmsysorg/sglang:v0.5.10-cu129), not a nightly (nightly-dev-cu13-20260416-...)
    ("sglang", re.compile(r"lmsysorg/sglang:v?(\d+\.\d+\.\d+(?:\.post\d+)?)"), "docker image tag"),
    # "sglang==0.5.10", "SGLang version 0.5.10", a banner's "SGLang Version 0.5.10+516d57ac", "sglang-0.5.9.dist-info"
    ("sglang", re.compile(r"\b(?:sglang|SGLang|SGLANG)(?!-kernel|_kernel)(?:==| [Vv]ersion:? |-)v?(\d+\.\d+\.\d+(?:\.post\d+|rc\d+|"
                          r"\.dev\d+)?)"), "named"),
    # `pip list` ("sglang    0.5.10"), `python -m sglang.check_env` ("sglang: 0.5.10"), a dist-info path
    ("sglang", re.compile(r"^\s*sglang(?:[ \t]{2,}|\s*:\s*)v?(\d+\.\d+\.\d+(?:\.post\d+|rc\d+)?)\s*$", re.M), "pip list / check_env"),
    ("flashinfer", re.compile(r"(?:flashinfer|FlashInfer)(?:[-_]python)?(?:==| [Vv]ersion:? |-)v?(\d+\.\d+\.\d+[\w.+]*)"), "named"),
    ("flashinfer", re.compile(r"^\s*flashinfer(?:[-_]python)?(?:[ \t]{2,}|\s*:\s*)v?(\d+\.\d+\.\d+[\w.+]*)\s*$", re.M),
     "pip list / check_env"),
    ("torch", re.compile(r"\b(?:torch(?:==| [Vv]ersion:? | )|PyTorch [Vv]ersion:? )v?(\d+\.\d+\.\d+(?:\+\w+)?)"), "named"),
    ("torch", re.compile(r"^\s*(?:torch|PyTorch)(?:[ \t]{2,}|\s*:\s*)v?(\d+\.\d+\.\d+(?:\+\w+)?)\s*$", re.M),
     "pip list / check_env"),
    ("torch", re.compile(r"cu\d+torch(\d+\.\d+)"), "from a wheel/build tag"),
    ("python", re.compile(r"/python(3\.\d+)/"), "from a site-packages path"),
    ("model", re.compile(r"model_path='([^']+)'|--model(?:-path)? (\S+)"), "server arguments"),
    ("model", re.compile(r"type=(\w+For\w+)"), "SGLang's load log"),
    ("model", re.compile(r"sglang/srt/models/(\w+)\.py"), "inferred: the model file in the frames"),
    ("quantization", re.compile(r"quantization='(\w+)'|--quantization (\S+)"), "server arguments"),
    ("quantization", re.compile(r"Detected (nvfp4) checkpoint|quantization method (\w+)"), "SGLang's load log"),
    ("quantization", re.compile(r"quantization/(modelopt)_quant\.py"), "inferred: ModelOpt's linear method in the frames"),
    ("prefill_backend", re.compile(r"CUDA graph begin\. backend=(\w+)"), "SGLang's capture log"),
    ("prefill_backend", re.compile(r"cuda_graph_backend_prefill='(\w+)'|--cuda-graph-backend-prefill[= ](\w+)"), "server arguments"),
)
_FLAG_RE = re.compile(r"--(?:enable|disable|enforce)-piecewise-cuda-graph\b|\b(?:enable|disable|enforce)_piecewise_cuda_graph=\w+")


@dataclasses.dataclass(frozen=True)
class Fact:
    name: str
    value: str
    line: int
    how: str

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


_WORD_RE = re.compile(r"[A-Za-z_]{4,}")


def _start(text: str, pattern: re.Pattern[str]) -> int:
    """Where the pattern can first match: the first occurrence of one of its literal words (str.find is
    fast), so a 10 MB log is not run through twenty regexes from the top. -1 when none occurs."""
    alternatives = pattern.pattern.split("|")
    positions = []
    for alternative in alternatives:
        word = _WORD_RE.search(re.sub(r"\\.|\[[^\]]*\]|\(\?[:=!]", " ", alternative))
        if word is None:
            return 0
        found = text.find(word.group(0))
        if found >= 0:
            positions.append(max(found - 64, 0))
    return min(positions) if positions else -1


# Every fact pattern above needs one of these words on its line: a large log is cut down to those lines
# (found with bytes.find, the first and last 64 of each) before any pattern runs.
_FACT_WORDS = ("NVIDIA", "DGX", "GB10", "apability", "gen_fp4_quantization", "sm_1", "sglang", "SGLang", "flashinfer",
               "FlashInfer", "torch", "PyTorch", "python3", "model", "For", "quantization", "nvfp4", "CUDA graph begin",
               "cuda_graph_backend", "iecewise")
_SELECT_ABOVE = 256 * 1024


FACT_NEEDLES = tuple((word, 0, 64) for word in _FACT_WORDS)


def read_facts(text: str, numbers: tuple[int, ...] | None = None) -> tuple[Fact, ...]:
    """The first fact of each kind in the log (the first pattern that finds one wins). Pure. `numbers`: `text`
    is an excerpt of a longer log and these are its lines' own numbers (pcgkit.values.paste.LogExcerpt)."""
    if len(text) <= _SELECT_ABOVE:
        found = _read_facts(text)
        keep = list(range(text.count("\n") + 1))
    else:
        keep = interesting_lines(text, FACT_NEEDLES)
        lines = text.split("\n")
        found = _read_facts("\n".join(lines[i] for i in keep))
    # line numbers of the cut-down text -> the log's own
    own = (lambda i: numbers[i]) if numbers is not None else (lambda i: i + 1)
    return tuple(dataclasses.replace(f, line=own(keep[f.line - 1])) for f in found)


def _read_facts(text: str) -> tuple[Fact, ...]:
    found: dict[str, Fact] = {}
    for name, pattern, how in _FACT_RES:
        if name in found:
            continue
        start = _start(text, pattern)
        if start < 0:
            continue
        for match in pattern.finditer(text, start):
            value = next((g for g in match.groups() if g), "") if match.groups() else match.group(0)
            if value and not value.startswith(("<", "None")):  # "--model-path <model>" is a usage hint
                found[name] = Fact(name, value, _line_of(text, match.start()), how)
                break
    flags = list(_FLAG_RE.finditer(text))
    if flags:
        printed = " ".join(dict.fromkeys(f.group(0) for f in flags))
        found["piecewise_flags"] = Fact("piecewise_flags", printed, _line_of(text, flags[0].start()),
                                        "as printed (launch command, hint or server_args)")
    return tuple(found.values())


def fact(facts: tuple[Fact, ...], name: str) -> str | None:
    return next((f.value for f in facts if f.name == name), None)
