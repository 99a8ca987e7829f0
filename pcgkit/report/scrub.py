"""Machine paths made relative for reports people paste upstream. Pure.

A frame like `/root/.pyenv/versions/3.12.1/lib/python3.12/subprocess.py:466:check_output` says the
same to a maintainer as `python3.12/subprocess.py:466:check_output`, minus this machine's layout.
"""

from __future__ import annotations

import re

# Order matters: the most specific prefix wins (site-packages lives under lib/pythonX.Y).
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?:/[^\s:'\"()]*)?/(?:site|dist)-packages/"), ""),  # installed packages: from the package
    (re.compile(r"/tmp/pytest-of-[^/\s]+/pytest-\d+/"), "<tmp>/"),
    (re.compile(r"(?:/[^\s:'\"()]*)?/lib/(python3\.\d+)/"), r"\1/"),  # the standard library
    (re.compile(r"(?:/[^\s:'\"()]*)?/((?:pcgkit|cases|tests)/[\w./-]+\.py)"), r"\1"),  # the kit's own checkout
    (re.compile(r"/(?:home/[^/\s]+|root|Users/[^/\s]+)/"), "~/"),
    (re.compile(r"/tmp/[\w.-]+/"), "<tmp>/"),
)


def relative_paths(text: str) -> str:
    """`text` with home folders, site-packages prefixes, stdlib prefixes and pytest tmp dirs made relative."""
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text
