"""What a FlashInfer docstring's prose says about one parameter, read as text. Pure.

The readers lab.sweep.derive builds calls from: the shape a description gives (every spelling the
releases use), the parameter whose shape or dtype it shares, the symbols it defines ("kv_row_bytes =
head_dim/2 + head_dim/sf_vec_size"), the callable it refers to for its arguments' documentation, and the
first dtype it names. Nothing here evaluates a shape: derive does, with the symbols' values.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# "shape (a, b)", "shape: ``[a, b]``", "of shape ``(a,)``", "2D shape (a, b)": the first group after "shape".
_SHAPE_RE = re.compile(r"shape\s*(?:is|should be|of|:)?\s*`{0,2}\s*([(\[](?:[^()\[\]]|\[[^()\[\]]*\]|\([^()\[\]]*\))*[)\]])")
# First dtype a description names wins (docstrings list the preferred one first).
_LITERAL_SHAPE_RE = re.compile(r"``\s*([(\[](?:[\w\s,*/+\-.]|\[[^()\[\]]*\]|\([^()\[\]]*\))*[)\]])\s*``")
_SAME_SHAPE_RE = re.compile(r"same (?:shape|layout)(?: and dtype)?(?: as|\s*\(?)\s*(?:the )?`{0,2}(\w+)`{0,2}")
# A description that opens with the shape itself: "[batch_size, next_n, num_heads, head_dim]  uint8".
_LEADING_SHAPE_RE = re.compile(r"^\s*([(\[][\w\s,*/+\-.\[\]]*[)\]])(?:\s|$)")
# "with shape ``batch_size, nb_pages_per_seq``": the dimensions listed without brackets.
_BARE_SHAPE_RE = re.compile(r"shape\s*(?:is|of|:)?\s*``\s*([\w*/+\-\s]+(?:,[\w*/+\-\s]+)+)``")
# "Log decay parameter with ``H`` elements": one dimension.
_ELEMENTS_RE = re.compile(r"with\s+``\s*([\w*/+\-\s]+?)\s*``\s+elements")
# "the same tuple or stacked cache format as ``paged_kv_cache``, replacing ``head_dim // 2`` with ``head_dim // 16``"
REPLACING_RE = re.compile(r"same [\w\s]*?(?:format|shape|layout) as\s+``(\w+)``,?\s+replacing\s+``([^`]+)``\s+with\s+``([^`]+)``")
SAME_DTYPE_RE = re.compile(r"same dtype as\s+``(\w+)``", re.IGNORECASE)
EACH_OF_TUPLE_RE = re.compile(r"for tuple input,\s+each tensor has", re.IGNORECASE)
# "kv_row_bytes = head_dim/2 + head_dim/sf_vec_size:", "where N_padded = round_up(n, 128) and ...": a symbol the
# release defines from others (the expression ends at a clause boundary; one that does not parse is ignored).
_DEFINITION_RE = re.compile(r"(?<![=!<>\w])([A-Za-z_]\w*)\s*=(?!=)\s*")
_DEFINITION_END_RE = re.compile(r"[:;]|``|,\s|\s(?:and|where|for|with)\s|\.\s|\.$")
_DTYPE_WORDS = (
    (r"float8_e4m3fn|\bfp8\b|e4m3|\bfloat8\b", "fp8e4m3"), (r"float8_e5m2|e5m2", "fp8e5m2"),
    (r"\buint8\b|e2m1|\bfp4\b|nvfp4", "u8"), (r"\bint8\b", "i8"), (r"\bint32\b", "i32"), (r"\bint64\b|\blong\b", "i64"),
    (r"bfloat16|\bbf16\b", "bf16"), (r"float16|\bfp16\b|\bhalf\b", "f16"), (r"float32|\bfp32\b", "f32"),
    (r"\bbool\b", "bool"),
)


def shape_text(doc: str) -> str | None:
    """The first shape a parameter's description gives ("(batch_size, hidden_size)"), or None: after
    the word "shape", else the first literal ``[S, C]`` / ``(S, C)`` of symbols and numbers. Pure."""
    text = doc.replace("\n", " ")
    match = _SHAPE_RE.search(text) or _LITERAL_SHAPE_RE.search(text) or _LEADING_SHAPE_RE.search(text)
    if match:
        return match.group(1)
    match = _BARE_SHAPE_RE.search(text) or _ELEMENTS_RE.search(text)
    return f"({match.group(1).strip()},)" if match else None


def replaced_shape(doc: str, shapes: Mapping[str, str]) -> str | None:
    """"the same ... format as ``paged_kv_cache``, replacing ``head_dim // 2`` with ``head_dim // 16``" -> that
    parameter's shape text with the replacement made, when the parameter's shape is known. Pure."""
    match = REPLACING_RE.search(" ".join(doc.split()))
    if match is None or match.group(1) not in shapes or match.group(2) not in shapes[match.group(1)]:
        return None
    return shapes[match.group(1)].replace(match.group(2), match.group(3))


# "Same arguments and return value as :func:`~flashinfer.fused_moe.trtllm_bf16_moe`." (the prims_ts MoE entry
# points); "See :func:`cute_dsl_fused_moe` for the full parameter documentation": another callable documents these.
_DOCUMENTED_BY_RE = re.compile(r"Same arguments(?: and return values?)? as\s+:func:`~?([\w.]+)`"
                               r"|See\s+:func:`~?([\w.]+)`\s+for the full parameter documentation")


def documented_by(doc: str) -> str | None:
    """The callable a docstring refers to for its parameters' documentation, as written, or None. Pure."""
    match = _DOCUMENTED_BY_RE.search(" ".join(doc.split()))
    return (match.group(1) or match.group(2)) if match else None


def definitions(text: str) -> list[tuple[str, str]]:
    """(symbol, expression) for each "symbol = expression" a description states, in order. Pure."""
    text = " ".join(text.split())
    found = []
    for match in _DEFINITION_RE.finditer(text):
        rest, depth, end = text[match.end():], 0, None
        for i, char in enumerate(rest):
            depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(char, 0)
            if depth < 0 or (depth == 0 and _DEFINITION_END_RE.match(rest, i)):
                end = i
                break
        expr = rest[:end].strip()
        if expr:
            found.append((match.group(1), expr))
    return found


def same_shape_as(doc: str) -> str | None:
    """"Must have the same shape and dtype as ``input``" -> "input". Pure."""
    match = _SAME_SHAPE_RE.search(doc.replace("\n", " "))
    return match.group(1) if match else None


def dtype_in(text: str) -> str | None:
    """The first dtype a description or type names, in the spec language ("bf16", "u8"), or None. Pure."""
    best: tuple[int, str] | None = None
    for pattern, dtype in _DTYPE_WORDS:
        match = re.search(pattern, text, re.IGNORECASE)
        if match and (best is None or match.start() < best[0]):
            best = (match.start(), dtype)
    return best[1] if best else None
