"""Rules for values read from files the kit did not just write (a cell.json from a CI artifact, a results.json
handed to `repro`, a history line, a `--compat` or `--pins` file: any may be crafted). Pure.

Every reader passes a value through the rule for its kind before it names a folder, a table column, a
requirement in a script a maintainer runs, or a number the report formats: `safe_id` (one path component and one
Markdown/HTML-safe word: never `..`, `/`, `|`, a newline), `pep440_version` (so `1.0 --extra-index-url X` never
reaches a requirements file), `python_minor`, `pinned_requirement` (one PEP 508 requirement), and typed field
readers (`text`, `finite_number`, `str_map`, ...) that turn a wrong type into one ValueError naming the field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

MAX_ID_LENGTH = 128
_SAFE_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+@-]*")
_PYTHON_MINOR_RE = re.compile(r"3\.\d{1,2}")


class UntrustedValueError(ValueError):
    """A value read from an untrusted file that does not have the shape its destination needs."""


def is_safe_id(value: object) -> bool:
    return isinstance(value, str) and len(value) <= MAX_ID_LENGTH and _SAFE_ID_RE.fullmatch(value) is not None


def safe_id(value: object, what: str) -> str:
    """value when it is a safe id (see the module docstring); UntrustedValueError naming `what` otherwise."""
    if not is_safe_id(value):
        shown = repr(value) if not isinstance(value, str) or len(value) <= 60 else repr(value[:60] + "...")
        raise UntrustedValueError(
            f"{what} {shown} is not a safe name (letters, digits and ._+@- only, starting with a letter or digit, "
            f"at most {MAX_ID_LENGTH} characters)"
        )
    return value  # type: ignore[return-value]


def pep440_version(value: object, what: str) -> str:
    """value, normalised as `packaging` writes it, when it is a PEP 440 version; UntrustedValueError otherwise."""
    from packaging.version import InvalidVersion, Version

    if not isinstance(value, str):
        raise UntrustedValueError(f"{what}: expected a version string, got {type(value).__name__}")
    try:
        return str(Version(value.strip()))
    except InvalidVersion:
        raise UntrustedValueError(f"{what} {value[:60]!r} is not a PEP 440 version") from None


def python_minor(value: object, what: str) -> str:
    """'3.12' from '3.12' or '3.12.1'; UntrustedValueError for anything else."""
    text = str(value).strip() if isinstance(value, (str, int, float)) else ""
    minor = ".".join(text.split(".")[:2])
    if not _PYTHON_MINOR_RE.fullmatch(minor):
        raise UntrustedValueError(f"{what} {str(value)[:60]!r} is not a Python version like 3.12")
    return minor


def pinned_requirement(line: str, what: str) -> str:
    """One PEP 508 requirement, as packaging renders it (no options, no URLs, no second line)."""
    from packaging.requirements import InvalidRequirement, Requirement

    text = line.strip()
    if text.startswith("-"):
        raise UntrustedValueError(f"{what}: {text[:60]!r} is a pip option, not a requirement (options are refused)")
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        raise UntrustedValueError(f"{what}: {text[:60]!r} is not a PEP 508 requirement ({exc})") from None
    if requirement.url:
        raise UntrustedValueError(f"{what}: {requirement.name} @ URL: direct URLs are refused, pin a version")
    return str(requirement)


# --- typed field readers: a wrong type is one ValueError naming the field ---


def text(data: Mapping[str, Any], key: str, what: str, default: str | None = "") -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise UntrustedValueError(f"{what}.{key}: expected a string, got {type(value).__name__}")
    return value


def optional_text(data: Mapping[str, Any], key: str, what: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise UntrustedValueError(f"{what}.{key}: expected a string or null, got {type(value).__name__}")
    return value


def finite_number(data: Mapping[str, Any], key: str, what: str, default: float = 0.0) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UntrustedValueError(f"{what}.{key}: expected a finite number, got {value!r:.40}")
    return float(value)


def mapping(data: Mapping[str, Any], key: str, what: str) -> dict:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise UntrustedValueError(f"{what}.{key}: expected an object, got {type(value).__name__}")
    return value


def str_list(data: Mapping[str, Any], key: str, what: str) -> tuple[str, ...]:
    value = data.get(key) or ()
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise UntrustedValueError(f"{what}.{key}: expected a list of strings")
    return tuple(value)


def str_map(value: object, what: str) -> dict[str, str | None]:
    """{str: str|None} (a versions table)."""
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in value.items()
    ):
        raise UntrustedValueError(f"{what}: expected an object of strings")
    return dict(value)


def typed_fields(cls: type, data: Mapping[str, Any], names: Any, what: str) -> dict[str, Any]:
    """{name: value} for the dataclass fields `names` present (not null) in data, each checked against the field's
    declared type (str, float, int, bool, a mapping, a tuple, or one of them | None)."""
    import dataclasses

    declared = {f.name: str(f.type).replace(" ", "") for f in dataclasses.fields(cls)}
    out: dict[str, Any] = {}
    for name in names:
        value = data.get(name)
        if value is None:
            continue
        kind = declared[name].removesuffix("|None")
        if kind == "float":
            value = finite_number(data, name, what)
        elif kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
            raise UntrustedValueError(f"{what}.{name}: expected a whole number, got {value!r:.40}")
        elif kind == "str" and not isinstance(value, str):
            raise UntrustedValueError(f"{what}.{name}: expected a string, got {type(value).__name__}")
        elif kind == "bool" and not isinstance(value, bool):
            raise UntrustedValueError(f"{what}.{name}: expected true or false, got {value!r:.40}")
        elif kind.startswith(("Mapping", "dict")) and not isinstance(value, dict):
            raise UntrustedValueError(f"{what}.{name}: expected an object, got {type(value).__name__}")
        elif kind.startswith("tuple") and not isinstance(value, (list, tuple)):
            raise UntrustedValueError(f"{what}.{name}: expected a list, got {type(value).__name__}")
        out[name] = value
    return out
