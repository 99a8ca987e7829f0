"""Realistic damage a log takes on its way to a triager, as pure text transforms (the metamorphic set).

Each degradation is what people and tools really do to a pasted crash: the paste starts late (a third or half
way in) or ends early, the exception line is left out (SGLang's "Piecewise CUDA Graph failed with error:" prints
only the message), the FP4 frame is cut, GitHub flattens indentation, Markdown quotes it, TP ranks
interleave, a terminal wraps at 80 columns, Windows adds CRLF, a web page escapes quotes. The tests
and benchmarks/bench_triage.py require `known-bug` to survive every degradation whose remaining text
still shows the family (`still_shows_family`, a literal-word check independent of triage's rules),
and never to appear on a degraded negative.
"""

from __future__ import annotations

import html
import re
from typing import Callable

_EXCEPTION_LINE = re.compile(r"^\s*(?:\[[^\]]*\] )?(?:[\w ]{0,40}? hit an exception: )?(?:[A-Za-z_]\w*\.)*"
                             r"(?:\w*Error|\w*Exception|\w*Unsupported):")
_FP4_FRAME = re.compile(r'File "[^"]*fp4_quantization\.py"')


def cut_head(text: str) -> str:
    """The paste starts a third of the way in."""
    lines = text.splitlines()
    return "\n".join(lines[len(lines) // 3 :])


def cut_first_half(text: str) -> str:
    """The paste starts half way in, mid-traceback (the user copied from where their scrollback began)."""
    lines = text.splitlines()
    return "\n".join(lines[len(lines) // 2 :])


def cut_tail(text: str) -> str:
    """The paste ends two thirds of the way through."""
    lines = text.splitlines()
    return "\n".join(lines[: max(1, 2 * len(lines) // 3)])


def drop_exception_line(text: str) -> str:
    """Every '<Type>: message' line removed: the message body alone, as SGLang's piecewise runner prints it."""
    return "\n".join(line for line in text.splitlines() if not _EXCEPTION_LINE.match(line))


def drop_fp4_frame(text: str) -> str:
    """The fp4_quantization.py frames (and the source line under each) cut from the paste."""
    out, skip = [], False
    for line in text.splitlines():
        if _FP4_FRAME.search(line):
            skip = True
            continue
        if skip and line.startswith((" ", "\t")) and 'File "' not in line:
            skip = False
            continue
        skip = False
        out.append(line)
    return "\n".join(out)


def flatten(text: str) -> str:
    """Indentation lost and every line run together (a web page's rendering, a log collector's field)."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def lose_indentation(text: str) -> str:
    """Leading whitespace stripped from every line (GitHub without a code block)."""
    return "\n".join(line.lstrip() for line in text.splitlines())


def quote(text: str) -> str:
    """A Markdown quote: '> ' before every line."""
    return "\n".join("> " + line for line in text.splitlines())


def interleave_ranks(text: str) -> str:
    """Two TP ranks printing the same log at once, each line tagged and interleaved."""
    out = []
    for line in text.splitlines():
        out.append(f"[2026-04-15 08:10:01 TP0] {line}")
        out.append(f"[2026-04-15 08:10:01 TP1] {line}")
    return "\n".join(out)


def wrap_80(text: str) -> str:
    """A terminal or mail client hard-wrapping every line at 80 columns."""
    out = []
    for line in text.splitlines():
        out.extend([line[i : i + 80] for i in range(0, len(line), 80)] or [""])
    return "\n".join(out)


def crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def html_escape(text: str) -> str:
    """A page that escaped quotes and angle brackets (&quot;, &#x27;, &lt;)."""
    return html.escape(text, quote=True)


DEGRADATIONS: dict[str, Callable[[str], str]] = {
    "cut-head": cut_head, "cut-first-half": cut_first_half, "cut-tail": cut_tail, "drop-exception-line": drop_exception_line,
    "drop-fp4-frame": drop_fp4_frame, "flatten": flatten, "lose-indentation": lose_indentation, "quote": quote,
    "interleave-ranks": interleave_ranks, "wrap-80": wrap_80, "crlf": crlf, "html-escape": html_escape,
}

_DYNAMO_WORDS = ("_dynamo", "Dynamo", "dynamo", "marked as skipped", "from user code", "fullgraph", "torch.compiler.disable")
_FP4_WORDS = ("fp4_quantiz", "FP4", "gen_fp4")
_LOADER_WORDS = ("get_cuda_version", "get_cuda_path", "build_and_load", "is_aot", "get_fp4_quantization_module",
                 "is_cuda_version_at_least", "gen_fp4_quantization", "torch.compiler.disable()`d")


def still_shows_family(text: str) -> bool:
    """Whether a degraded text still names all three facts of the family, by literal words only (an oracle
    independent of triage's rules: the paste keeps dynamo, FlashInfer's FP4 path and the loader/rejection)."""
    return all(any(word in text for word in words) for words in (_DYNAMO_WORDS, _FP4_WORDS, _LOADER_WORDS))
