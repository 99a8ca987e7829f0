"""The one redaction pass: keep secrets out of everything the kit prints or writes.

Pure: the environment to protect is passed in. `redact_text` applies every rule to one string, and every output
path calls it (proc.py on child output and the echoed command, util/atomic on every file the kit writes, the
data boundaries CellOutcome / CaseResult, cli.main on error messages):

1. a variable whose *name* looks secret has its value replaced (`redact_env_var`), and that value is scrubbed
   wherever else it shows up. Names are read word by word (`UV_KEYRING_PROVIDER` is no KEY, `DB_PASS` and
   `SMTP_PWD` are secrets, `PWD` is the working folder); under the ambiguous words KEY and AUTH a value is
   scrubbed elsewhere only when it looks like a token (`X_KEY_TYPE=rsa` never rewrites a word in a report);
2. credentials inside any URL (`scheme://user:password@host`, `scheme://token@host`), a password containing '@'
   included: `name @ https://user:pass@host/x.whl` keeps only `name @ https://<redacted>@host/...`;
3. argv-like secrets: `--api-key X`, `--token=X`, `API_KEY=X`, `-u USER -p X` (a bare `-p` is pytest's
   `-p plugin`), and every `name=value` / `name: value` pair whose name reads secret by the same words: a log's
   `api_key=X`, a header `X-Api-Key: X`, JSON `"github_token": "X"`, TOML `aws_secret_access_key = X`, SGLang's
   `ServerArgs(api_key='X', password="X y")`; a value's `&`, `;`, `,` are part of it. An argument *list*
   (`["--api-key", "X"]`, as JSON or a repr) is read as one, and `redact_tree` / `redact_argv` redact the item
   after a secret flag;
4. well-known token shapes wherever they stand: Hugging Face, GitHub, OpenAI-style `sk-...`, AWS access key ids,
   GitLab, Slack, PyPI and npm tokens, bearer and basic `Authorization` values.

Redaction is idempotent (the marker matches none of the rules), never raises, and is linear in the text's
length: every rule starts only where a name starts and judges the captured name in code.
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Mapping

REDACTED = "<redacted>"
# Words of a variable name (split on _ - .) that make it secret. KEY and AUTH are also parts of
# ordinary settings (a key type, an auth method): their values count as secrets elsewhere in a text
# only when they look like tokens. PASS and PWD count as the last word only (PWD alone is the cwd).
STRONG_NAME_WORDS = frozenset({"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS", "APIKEY", "PAT"})
WEAK_NAME_WORDS = frozenset({"KEY", "AUTH"})
LAST_NAME_WORDS = frozenset({"PASS", "PWD"})
_STRONG_SUFFIXES = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "APIKEY")
# Shorter values are not scrubbed elsewhere in the text: replacing every "1" or "on" protects nothing.
MIN_SCRUBBED_VALUE_LENGTH = 6
# Substrings of an option's name that mark its value as a secret (with a whole word of SECRET_WORDS).
_MARKERS = ("token", "key", "secret", "password", "passwd", "credential", "auth")
# A value stops at whitespace, quotes, a backslash (JSON escapes), markup brackets and '|' (a Markdown cell): the
# syntax around it survives. '&', ';', ',' inside a value are part of it (`Tr0ub4dor&3` goes whole), at its end
# the list's or the call's (`hf_token=X, tp_size=1)`, `[--env KEY=VALUE]`).
_VALUE = r"[^\s\"'\\<>`|]*[^\s\"'\\<>`|,;)\]}]"
# A quoted value, up to its closing quote: "..." with JSON escapes, '...', and the JSON-escaped \"...\" of a
# document printed inside another. Each form is unambiguous (one way to match a character): linear time.
_QUOTED_VALUE = r"""(?:"(?P<dq>(?:[^"\\\n]|\\.)+)"|'(?P<sq>[^'\n]+)'|\\"(?P<eq>[^"\\\n]+)\\")"""
# Every rule below starts only where a name or scheme starts (a look-behind, never `\b` inside a run) and has no
# nested or adjacent unbounded repeats (linear time): a name is captured whole and judged by a function.

# userinfo: anything but whitespace, quotes, markup, '/', '?', '#' up to the LAST '@' before the host.
_URL_USERINFO_RE = re.compile(
    r"(?P<scheme>(?<![a-zA-Z0-9+.-])[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^\s/?#\"'<>`]+)@"
)
# `--api-key X`, `--token=X`, `--hf-token X` (the value must not look like the next option); also the two
# items of an argument list as JSON or a Python repr print it: `"--api-key", "X"`, `'--api-key', 'X'`.
_FLAG_RE = re.compile(
    r"(?P<head>(?<![\w-])--?(?P<name>[a-z0-9_.-]+)(?:=|[ \t]+|[\"'][ \t]*,\s*[\"']))(?!-)"
    rf"(?P<value>{_VALUE})",
    re.IGNORECASE,
)
# `name=value`, `name: value`, `"name": "value"`, `name = 'value'`: a shell or log assignment (`HF_TOKEN=X`),
# a config dump or an INI/TOML line (`aws_secret_access_key = X`), an HTTP header (`X-Api-Key: X`), JSON
# (`"github_token": "X"`), a Python repr (`api_key='X'`, `'token': 'X'`), JSON-escaped (`\"token\": \"X\"`).
# Whether the name is secret is _name_strength's answer (the same words as for variables).
_PAIR_RE = re.compile(
    r"(?P<head>(?<![\w./-])(?P<nq>\\?[\"'])?(?=[A-Za-z0-9_.-]*?(?i:token|key|secret|pass|pwd|credential|auth|pat))"
    r"(?P<name>[A-Za-z][A-Za-z0-9_.-]*)(?(nq)\\?[\"'])[ \t]*[=:][ \t]*)"
    rf"(?![<(\[{{])(?:{_QUOTED_VALUE}|(?P<value>{_VALUE}))"
)
# `-u USER -p PASSWORD` (docker login, mysql): a bare `-p` is ambiguous and left alone.
_USER_PASSWORD_RE = re.compile(
    rf"(?P<head>(?<![\w-])(?:-u|--user(?:name)?)(?:=|[ \t]+){_VALUE}[ \t]+-p[ \t]*)(?P<value>{_VALUE})"
)
_AUTH_HEADER_RE = re.compile(
    r"(?P<head>(?:\bAuthorization:[ \t]*(?:Bearer|Basic|Token)|\b[Bb]earer)[ \t]+)(?P<value>[A-Za-z0-9._~+/=-]{8,})"
)
_TOKEN_SHAPES: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        r"\bhf_[A-Za-z0-9]{20,}",  # Hugging Face
        r"\bgh[pousr]_[A-Za-z0-9]{20,}",  # GitHub classic tokens
        r"\bgithub_pat_[A-Za-z0-9_]{20,}",  # GitHub fine-grained tokens
        r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}",  # OpenAI / Anthropic style keys
        r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",  # AWS access key ids
        r"\bglpat-[A-Za-z0-9_-]{20,}",  # GitLab
        r"\bxox[abprs]-[A-Za-z0-9-]{10,}",  # Slack
        r"\bpypi-[A-Za-z0-9_-]{40,}",  # PyPI upload tokens
        r"\bnpm_[A-Za-z0-9]{36}\b",  # npm
    )
)
_VALUE_RULES = (_AUTH_HEADER_RE, _USER_PASSWORD_RE, _FLAG_RE, _PAIR_RE)
# For option names the markers must be whole words: `--api-key`, `--hf-token` are secrets;
# `--max-new-tokens 16`, `--tokenizer-path`, `--keyring-provider` are evidence.
SECRET_WORDS = frozenset(
    "token key secret password passwd pass credential credentials auth authorization apikey pat".split()
)
# Values of a `name=value` pair that are evidence whatever the name (an upper-case variable's own assignment
# aside): None/null and booleans (`hf_token=None`), short numbers (SGLang's `#token: 20,` is a count) and
# references to a variable (`token: ${{ secrets.X }}`, `$HF_TOKEN`): the secret is elsewhere.
_NOT_A_SECRET_RE = re.compile(r"(?i)none|null|nil|true|false|[\d.,:%+-]{1,11}")
_FILE_NAME_RE = re.compile(r"\.(?:py|pyi|pyx|so|c|h|cc|cpp|cu|cuh|json|toml|ya?ml|txt|log|md|sh|whl)$")
# A short plain lower-case word is a secret only under a password-like name (`password: hunter`); under a token or
# key name it is a setting (GitHub Actions' `id-token: write`, `token: expired`).
_PLAIN_WORD_RE = re.compile(r"[a-z]{1,11}")
_PASSWORD_WORDS = frozenset({"PASSWORD", "PASSWD", "PASS", "PWD", "SECRET"})


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
    """Values of secret-named variables to scrub wherever they show up, longest first (a value containing another
    goes whole): any of 6+ characters for a name that says secret, only a token-looking one for one that may."""
    values = set()
    for name, value in environ.items():
        strength = _name_strength(name)
        if (strength == 2 and len(value) >= MIN_SCRUBBED_VALUE_LENGTH) or (strength == 1 and _looks_like_token(value)):
            values.add(value)
    return tuple(sorted(values, key=len, reverse=True))


def _secret_value(match: re.Match[str]) -> str | None:
    """The secret a rule's match holds, or None where the match is evidence (a non-secret name, `None`, a count)."""
    value = match.groupdict().get("value")
    if match.re is _PAIR_RE:
        value = value or match["dq"] or match["sq"] or match["eq"]
    if not value or value == REDACTED:
        return None
    if match.re is _FLAG_RE:
        name = match["name"].lower()
        words = re.split(r"[-_.]", name)
        secret = any(m in name for m in _MARKERS) and any(word in SECRET_WORDS for word in words)
        return value if secret else None
    if match.re is _PAIR_RE:
        name = match["name"]
        if _FILE_NAME_RE.search(name):  # `per_token_quant.py:57:fn` is a frame, not a pair
            return None
        if value.startswith("$") or (_NOT_A_SECRET_RE.fullmatch(value) and not name.isupper()):
            return None  # a reference to a variable is never the secret; `HF_TOKEN=12345` is the variable's own
        name_words = set(re.split(r"[_.\-]+", name.upper()))
        if _PLAIN_WORD_RE.fullmatch(value) and not name.isupper() and not name_words & _PASSWORD_WORDS:
            return None
        strength = _name_strength(name)
        # KEY/AUTH alone (`key=len` in a source line, `auth_type=basic`): a secret only when it looks like one, or as
        # an upper-case variable's own assignment (`SIGNING_KEY=plainword`; a help text's `KEY=VALUE` is neither).
        assignment = name.isupper() and "=" in match["head"] and not re.fullmatch(r"[A-Z_]+", value)
        return value if strength == 2 or (strength == 1 and (_looks_like_token(value) or assignment)) else None
    return value


def _looks_like_token(value: str) -> bool:
    """Worth scrubbing everywhere in the string: long, or letters and digits mixed (not a plain word)."""
    if value == REDACTED or len(value) < MIN_SCRUBBED_VALUE_LENGTH:
        return False
    return len(value) >= 20 or (any(c.isdigit() for c in value) and any(c.isalpha() for c in value))


# Up to this many distinct secrets found in one text are scrubbed wherever they stand (one C-speed replace
# each); beyond it (a crafted or huge text with thousands) each repeat is found through one index, as a whole
# word (not glued to letters or digits), so the time stays linear in the text's length.
_REPLACE_EACH_LIMIT = 32
_ALNUM_RUN_RE = re.compile(r"[A-Za-z0-9]+")


def _scrub_values(text: str, values: set[str], marker: str) -> str:
    if len(values) <= _REPLACE_EACH_LIMIT:
        for value in sorted(values, key=len, reverse=True):
            if value in text:
                text = text.replace(value, marker)
        return text
    # index: a value's first run of letters/digits -> (offset in the value, the value), longest first
    index: dict[str, list[tuple[int, str]]] = {}
    for value in sorted(values, key=len, reverse=True):
        first = _ALNUM_RUN_RE.search(value)
        if first is not None:
            index.setdefault(first.group(0), []).append((first.start(), value))
    pieces, done = [], 0
    for run in _ALNUM_RUN_RE.finditer(text):
        if run.start() < done:
            continue
        for offset, value in index.get(run.group(0), ()):
            start = run.start() - offset
            end = start + len(value)
            if (
                start >= done
                and text.startswith(value, start)
                and not text[end : end + 1].isalnum()
                and not text[start - 1 : start].isalnum()
            ):
                pieces += [text[done:start], marker]
                done = end
                break
    return "".join(pieces) + text[done:]


def redact_text(text: str, secrets: tuple[str, ...] = (), marker: str = REDACTED) -> str:
    """Every rule of the module docstring applied to one string, in time linear in its length; `marker`
    replaces each secret (XML/HTML writers pass the escaped form, so the marker is text there, not a tag)."""
    if not text:
        return text
    # Values found by an argv/assignment rule are secrets for the whole string: the same token
    # echoed again later (a log line repeating the command) goes too.
    found = {value for rule in _VALUE_RULES for m in _matches(rule, text) if (value := _secret_value(m))}
    found = {v for v in found if _looks_like_token(v)}
    # URL credentials first: once a token inside them is a marker, the userinfo would no longer match
    text = _URL_USERINFO_RE.sub(lambda m: f"{m['scheme']}{marker}@", text)
    for value in sorted(secrets, key=len, reverse=True):  # the environment's: a small set whatever the text
        if value in text:
            text = text.replace(value, marker)
    text = _scrub_values(text, found, marker)
    for shape in _TOKEN_SHAPES:
        text = shape.sub(marker, text)
    for rule in _VALUE_RULES:
        pieces, done = [], 0
        for match in _matches(rule, text):  # the secret's span (the value, inside its quotes if quoted) goes
            group = next(g for g in ("value", "dq", "sq", "eq") if match.groupdict().get(g))
            pieces += [text[done : match.start(group)], marker]
            done = match.end(group)
        text = "".join(pieces) + text[done:]
    return text


def _matches(rule: re.Pattern[str], text: str):
    """rule's secret-holding matches left to right. After a quoted value that holds no secret the search goes on
    inside it, so `"message": "... api_key=X"` hides nothing; an unquoted one is passed whole (each character is
    scanned a bounded number of times: linear)."""
    position = 0
    while (match := rule.search(text, position)) is not None:
        if _secret_value(match) is not None:
            yield match
            position = match.end()
        elif match.groupdict().get("value") is None:
            position = max(match.end("head"), match.start() + 1)
        else:
            position = match.end()


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
