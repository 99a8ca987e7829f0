"""Keep secrets out of everything the kit exports: env captures, issue drafts, repro READMEs.

Pure: the environment to protect is passed in. Two rules, applied to every string of an export:
a variable whose *name* looks secret has its value replaced (and that value is scrubbed wherever
else it shows up, e.g. echoed inside a URL or a command line), and credentials inside URLs
(`scheme://user:password@host`) are removed whatever variable or file they came from.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

REDACTED = "<redacted>"
# Substrings of a variable name that mark its value as a secret (matched case-insensitively).
SECRET_NAME_MARKERS: tuple[str, ...] = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")
# Shorter values are not scrubbed elsewhere in the text: replacing every "1" or "on" would
# mangle the report without protecting anything.
MIN_SCRUBBED_VALUE_LENGTH = 6

# "https://user:pw@host/" and "https://token@host/": everything between "//" and "@" goes.
_URL_USERINFO_RE = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/@\s\"']+)@")


def is_secret_name(name: str) -> bool:
    upper = name.upper()
    return any(marker in upper for marker in SECRET_NAME_MARKERS)


def secret_values(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Values of secret-named variables, longest first (so a value containing another goes whole)."""
    values = {v for k, v in environ.items() if is_secret_name(k) and len(v) >= MIN_SCRUBBED_VALUE_LENGTH}
    return tuple(sorted(values, key=len, reverse=True))


def redact_text(text: str, secrets: tuple[str, ...] = ()) -> str:
    """Strip URL credentials and every known secret value from one string."""
    text = _URL_USERINFO_RE.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    for value in secrets:
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def redact_env_var(name: str, value: str, secrets: tuple[str, ...] = ()) -> str:
    if is_secret_name(name):
        return REDACTED
    return redact_text(value, secrets)


def redact_tree(data: Any, secrets: tuple[str, ...] = ()) -> Any:
    """redact_text applied to every string (keys included) of a JSON-like structure."""
    if isinstance(data, str):
        return redact_text(data, secrets)
    if isinstance(data, dict):
        return {redact_tree(k, secrets): redact_tree(v, secrets) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_tree(v, secrets) for v in data]
    return data
