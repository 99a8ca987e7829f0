"""The one sanitiser for text that goes into XML, HTML or Markdown. Pure.

Child output is untrusted (uv with FORCE_COLOR=1 writes ANSI colours, a crash prints any byte, a crafted cell id
carries '|' or a newline). `clean_text` is applied once at the data boundary (CellOutcome, CaseResult), so every
writer after it sees valid XML 1.0 character data; `md_cell` / `md_code` make a table cell that cannot shift.
"""

from __future__ import annotations

import re

# CSI (colours, cursor moves), OSC (window titles, hyperlinks; BEL- or ST-terminated), and any
# other two-byte escape: the whole sequence goes, not just the ESC byte (or "[31m" would remain).
_ANSI_RE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
# What XML 1.0 forbids, plus C1 controls and DEL: everything but \t and \n among the controls.
_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def strip_ansi(text: str) -> str:
    return _ANSI_RE.sub("", text)


def clean_text(text: str) -> str:
    """ANSI escapes and control characters removed; CR-LF and lone CR (progress bars) become LF."""
    if not text:
        return text
    text = strip_ansi(text).replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL_RE.sub("", text)


def clean_tree(data):
    """clean_text over every string of a JSON-like structure (keys included)."""
    if isinstance(data, str):
        return clean_text(data)
    if isinstance(data, dict):
        return {clean_tree(k): clean_tree(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [clean_tree(v) for v in data]
    return data


def one_line(text: str) -> str:
    """Cleaned, every run of whitespace (newlines included) one space: for a table cell or a message."""
    return " ".join(clean_text(str(text)).split())


def md_cell(text: object) -> str:
    """Plain text as one Markdown table cell: one line, '|' escaped, '<'/'>' as entities (no raw HTML).

    Other markup characters stay: they can change emphasis but never the table's columns. A
    backslash is doubled first, so a value ending in one cannot escape the next column's '|'."""
    return one_line(str(text)).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def md_code(text: object) -> str:
    """Text as an inline code span in a table cell: '|' escaped (GFM splits cells on '|' even inside code spans)."""
    return _code_span(one_line(str(text)).replace("|", "\\|"), pad_empty=False)


def _code_span(body: str, pad_empty: bool) -> str:
    """body in a fence longer than any backtick run inside, padded where it starts or ends with a backtick."""
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or (pad_empty and not body) else ""
    return f"{fence}{pad}{body}{pad}{fence}"


# Markdown punctuation that can start markup inside a line of prose (emphasis, links, images, code,
# tables, headings, HTML, strikethrough); a backslash before any ASCII punctuation is a literal in
# CommonMark, so escaping is always safe.
_MD_PROSE_RE = re.compile(r"([\\`*_\[\]|#!~])")
# An @mention notifies people when a draft is posted: a zero-width space after '@' keeps the text
# readable and the mention inert (what Renovate does in its pull-request bodies).
_MENTION_RE = re.compile(r"@(?=[A-Za-z0-9])")


def md_text(text: object) -> str:
    """Untrusted text as inert Markdown prose for a post (an issue draft): one line, markup escaped,
    '<'/'>'/'&' as entities (no HTML, no comments), @mentions neutralised. Pure."""
    body = one_line(str(text)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MENTION_RE.sub("@&#8203;", _MD_PROSE_RE.sub(r"\\\1", body))


def md_fence(text: object, info: str = "text") -> str:
    """Untrusted text as a fenced code block whose fence no line inside can close: longer than any
    run of backticks in the text (a '~~~' line cannot close a backtick fence). Pure."""
    body = clean_text(str(text)).rstrip("\n")
    longest = max((len(run) for run in re.findall(r"`{3,}", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def md_inline_code(text: object) -> str:
    """Untrusted text as one inline code span (no line break). Pure."""
    return _code_span(one_line(str(text)), pad_empty=True)
