"""The one redaction pass: keep secrets out of everything the kit prints or writes.

Pure: the environment to protect is passed in. `redact_text` applies every rule to one string, and
every output path calls it (proc.py on child output and the echoed command, util/atomic on every
file the kit writes, the data boundaries CellOutcome / CaseResult, cli.main on error messages):

1. a variable whose *name* looks secret has its value replaced (`redact_env_var`), and that value
   is scrubbed wherever else it shows up (echoed in a URL, a command line, a log). Names are read
   word by word (`UV_KEYRING_PROVIDER` is no KEY, `DB_PASS` and `SMTP_PWD` are secrets, `PWD` is
   the working folder); for the ambiguous words KEY and AUTH the value is scrubbed elsewhere only when
   it looks like a token, so `UV_KEYRING_PROVIDER=subprocess` or `X_KEY_TYPE=rsa` never rewrite an
   ordinary word in a report;
2. credentials inside any URL (`scheme://user:password@host`, `scheme://token@host`) anywhere in
   any string, a password containing '@' included (everything up to the host's '@' goes), so a
   requirement `name @ https://user:pass@host/x.whl` keeps only `name @ https://<redacted>@host/...`;
3. argv-like secrets: `--api-key X`, `--token=X`, `--hf-token X`, `API_KEY=X`, `-u USER -p X`
   (a bare `-p` is not touched: pytest's `-p plugin` is the kit's own argv), and a config or log
   line's `api_key=X`, `password: X`, `client_secret=X`, quoted too (`api_key='X'`, `password="X"`,
   as SGLang's `ServerArgs(...)` start-up line prints them). An argument *list* is read as one:
   `["--api-key", "X"]` as JSON or a Python repr shows it, and `redact_tree` / `redact_argv` on a
   list whose item is a secret flag redact the next item;
4. well-known token shapes wherever they stand: Hugging Face `hf_...`, GitHub `ghp_`/`github_pat_`,
   OpenAI-style `sk-...`, AWS access key ids, GitLab, Slack, PyPI and npm tokens, bearer and basic
   `Authorization` values.

Redaction is idempotent (the marker matches none of the rules) and never raises.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

REDACTED = "<redacted>"
# Substrings of a variable name that mark its value as a secret (matched case-insensitively).
SECRET_NAME_MARKERS: tuple[str, ...] = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")
# Words of a variable name (split on _ - .) that make it secret. KEY and AUTH are also parts of
# ordinary settings (a key type, an auth method): their values count as secrets elsewhere in a text
# only when they look like tokens. PASS and PWD count as the last word only (PWD alone is the cwd).
STRONG_NAME_WORDS = frozenset({"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS", "APIKEY", "PAT"})
WEAK_NAME_WORDS = frozenset({"KEY", "AUTH"})
LAST_NAME_WORDS = frozenset({"PASS", "PWD"})
_STRONG_SUFFIXES = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "APIKEY")
# Shorter values are not scrubbed elsewhere in the text: replacing every "1" or "on" would
# mangle the report without protecting anything.
MIN_SCRUBBED_VALUE_LENGTH = 6

_MARKERS = "|".join(m.lower() for m in SECRET_NAME_MARKERS)
_UPPER_MARKERS = "|".join(SECRET_NAME_MARKERS)
# A value stops at whitespace, quotes, a backslash (JSON escapes) and markup brackets, so that
# redacting inside a JSON/XML/Markdown text never eats the syntax around the value.
_VALUE = r"[^\s\"'\\<>`|,;&]+"

# userinfo: anything but whitespace, quotes, markup, '/', '?', '#' up to the LAST '@' before the host.
_URL_USERINFO_RE = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^\s/?#\"'<>`]+)@")
# `--api-key X`, `--token=X`, `--hf-token X` (the value must not look like the next option); also the two
# items of an argument list as JSON or a Python repr print it: `"--api-key", "X"`, `'--api-key', 'X'`.
_FLAG_RE = re.compile(
    rf"(?P<head>(?<![\w-])--?[a-z0-9_.-]*(?:{_MARKERS})[a-z0-9_.-]*(?:=|[ \t]+|[\"'][ \t]*,\s*[\"']))(?!-)"
    rf"(?P<value>{_VALUE})",
    re.IGNORECASE,
)
# `HF_TOKEN=X` as a shell or log line shows it: upper-case names only, so that source lines in a
# traceback (`sorted(x, key=len)`) stay readable evidence.
_ASSIGN_RE = re.compile(rf"(?P<head>\b[A-Z0-9_]*(?:{_UPPER_MARKERS})[A-Z0-9_]*=)(?P<value>{_VALUE})")
# `-u USER -p PASSWORD` (docker login, mysql): a bare `-p` is ambiguous and left alone.
_USER_PASSWORD_RE = re.compile(rf"(?P<head>(?<![\w-])(?:-u|--user(?:name)?)(?:=|[ \t]+){_VALUE}[ \t]+-p[ \t]*)(?P<value>{_VALUE})")
# `api_key=X`, `password: X`, `client_secret=X` in a config dump or a log line (lower case: the
# upper-case form is _ASSIGN_RE's); only these exact names, so `key=len` in a source line stays.
_CONFIG_NAMES = (r"(?:[a-z0-9]+_)*(?:api[_-]?key|password|passwd|secret|client[_-]?secret|access[_-]?token|auth[_-]?token|"
                 r"private[_-]?token|hf[_-]?token)")
_CONFIG_PAIR_RE = re.compile(
    r"(?P<head>(?<![\w.-])" + _CONFIG_NAMES + r"[ \t]*[=:][ \t]*)(?![<(\[{]|None\b|null\b)(?P<value>" + _VALUE + ")",
    re.IGNORECASE,
)
# The quoted forms: `api_key='X'`, `password="X y"`, `'api_key': 'X'` (a repr of a dict or a dataclass):
# everything up to the closing quote goes, spaces included; also JSON-escaped (`password=\\"X\\"` in a printed document).
_QUOTED_PAIR_RE = re.compile(
    r"(?P<head>(?<![\w.-])" + _CONFIG_NAMES + r"\\?[\"']?[ \t]*[=:][ \t]*\\?(?P<quote>[\"']))(?P<value>[^\"'\\\n]+)(?=\\?(?P=quote))",
    re.IGNORECASE,
)
_AUTH_HEADER_RE = re.compile(
    r"(?P<head>(?:\bAuthorization:[ \t]*(?:Bearer|Basic|Token)|\b[Bb]earer)[ \t]+)(?P<value>[A-Za-z0-9._~+/=-]{8,})"
)
_TOKEN_SHAPES: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    r"\bhf_[A-Za-z0-9]{20,}",                      # Hugging Face
    r"\bgh[pousr]_[A-Za-z0-9]{20,}",               # GitHub classic tokens
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",             # GitHub fine-grained tokens
    r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}",     # OpenAI / Anthropic style keys
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",              # AWS access key ids
    r"\bglpat-[A-Za-z0-9_-]{20,}",                 # GitLab
    r"\bxox[abprs]-[A-Za-z0-9-]{10,}",             # Slack
    r"\bpypi-[A-Za-z0-9_-]{40,}",                  # PyPI upload tokens
    r"\bnpm_[A-Za-z0-9]{36}\b",                    # npm
))
_VALUE_RULES = (_AUTH_HEADER_RE, _USER_PASSWORD_RE, _FLAG_RE, _ASSIGN_RE, _QUOTED_PAIR_RE, _CONFIG_PAIR_RE)
# For option and assignment names the markers must be whole words: `--api-key`, `HF_TOKEN` are
# secrets; `--max-new-tokens 16`, `--tokenizer-path`, `--keyring-provider` are evidence.
SECRET_WORDS = frozenset({
    "token", "key", "secret", "password", "passwd", "pass", "credential", "credentials", "auth",
    "authorization", "apikey", "pat",
})


def _name_strength(name: str) -> int:
    """2: the name says secret (HF_TOKEN, DB_PASS, API_KEY); 1: it may (SIGNING_KEY, X_AUTH); 0: no."""
    words = [w for w in re.split(r"[_.\-]+", name.upper()) if w]
    if not words or name.upper() in ("PWD", "OLDPWD"):
        return 0
    if any(w in STRONG_NAME_WORDS or w.endswith(_STRONG_SUFFIXES) for w in words):
        return 2
    if len(words) > 1 and words[-1] in LAST_NAME_WORDS:
        return 2
    if any(a == "API" and b == "KEY" for a, b in zip(words, words[1:])):
        return 2
    return 1 if any(w in WEAK_NAME_WORDS for w in words) else 0


def is_secret_name(name: str) -> bool:
    return _name_strength(name) > 0


def secret_values(environ: Mapping[str, str]) -> tuple[str, ...]:
    """Values of secret-named variables to scrub wherever they show up, longest first (so a value
    containing another goes whole): any value of 6+ characters for a name that says secret, only a
    token-looking one for a name that merely may (see SECRET_NAME words above)."""
    values = set()
    for name, value in environ.items():
        strength = _name_strength(name)
        if len(value) < MIN_SCRUBBED_VALUE_LENGTH or strength == 0:
            continue
        if strength == 2 or _looks_like_token(value):
            values.add(value)
    return tuple(sorted(values, key=len, reverse=True))


def _is_secret_match(match: re.Match[str]) -> bool:
    if match.re not in (_FLAG_RE, _ASSIGN_RE):
        return True
    name = match["head"].strip().rstrip("=\"', \t\n").lstrip("-")
    return any(word in SECRET_WORDS for word in re.split(r"[-_.]", name.lower()))


def _looks_like_token(value: str) -> bool:
    """Worth scrubbing everywhere in the string: long, or letters and digits mixed (not a plain word)."""
    if value == REDACTED or len(value) < MIN_SCRUBBED_VALUE_LENGTH:
        return False
    return len(value) >= 20 or (any(c.isdigit() for c in value) and any(c.isalpha() for c in value))


def redact_text(text: str, secrets: tuple[str, ...] = (), marker: str = REDACTED) -> str:
    """Every rule of the module docstring applied to one string; `marker` replaces each secret
    (XML/HTML writers pass the escaped form, so the marker is text there, not a tag)."""
    if not text:
        return text
    # Values found by an argv/assignment rule are secrets for the whole string: the same token
    # echoed again later (a log line repeating the command) goes too.
    found = {m["value"] for rule in _VALUE_RULES for m in rule.finditer(text) if _is_secret_match(m)}
    found = {v for v in found if _looks_like_token(v)}
    # URL credentials first: once a token inside them is a marker, the userinfo would no longer match
    text = _URL_USERINFO_RE.sub(lambda m: f"{m['scheme']}{marker}@", text)
    for value in sorted(found | set(secrets), key=len, reverse=True):
        if value in text:
            text = text.replace(value, marker)
    for shape in _TOKEN_SHAPES:
        text = shape.sub(marker, text)
    for rule in _VALUE_RULES:
        text = rule.sub(lambda m: f"{m['head']}{marker}" if _is_secret_match(m) and m["value"] != marker else m.group(0),
                        text)
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
        return redact_list([redact_tree(v, secrets) for v in data])
    return data


def is_secret_flag(item: object) -> bool:
    """`--api-key`, `--hf-token`, `-password` as one argv item (no value attached): the next item is its value."""
    if not isinstance(item, str) or not re.fullmatch(r"--?[A-Za-z0-9_.-]+", item):
        return False
    return any(word in SECRET_WORDS for word in re.split(r"[-_.]", item.lstrip("-").lower()))


def redact_list(items: list) -> list:
    """An argument list with the value after each secret flag replaced (`["--api-key", "X"]`). Pure."""
    out = list(items)
    for index in range(1, len(out)):
        if is_secret_flag(out[index - 1]) and isinstance(out[index], str) and not out[index].startswith("-"):
            out[index] = REDACTED
    return out


def redact_argv(argv: tuple[str, ...], secrets: tuple[str, ...] = ()) -> str:
    """A command line as the terminal echo shows it: joined, then redacted (so `--token X` pairs are seen)."""
    import shlex

    return redact_text(shlex.join(redact_list(list(argv))), secrets)


class RedactingStream:
    """A text stream that passes every write through the redaction pass: what cli.main puts in
    front of stdout and stderr, so every printer (triage's text and JSON, `env --diff`, progress
    lines, rich tables) is covered at one place. Anything else is the wrapped stream's."""

    def __init__(self, stream, secrets: tuple[str, ...] = ()) -> None:
        self._stream = stream
        self._secrets = secrets

    def write(self, text: str) -> int:
        self._stream.write(redact_text(text, self._secrets) if isinstance(text, str) else text)
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
