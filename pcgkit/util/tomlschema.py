"""Where a key of a TOML file was written, and one check of a user-edited TOML file's tables against their fields.
Pure.

A file the user edits (fixtures/expectations.toml, a matrix file, a launch file) is checked before any of it is
used: a misspelt key, a value of the wrong type or a broken version specifier is one line naming the file, the
line, the table and the key -- never a rule that silently applies to every version, never an internal error.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet

Check = Callable[[Any], str | None]  # the problem with a value, or None when it is fine

_HEADER_RE = re.compile(r"^\s*\[(\[)?\s*\"?([A-Za-z0-9_.-]+)\"?\s*\]")
_KEY_RE = re.compile(r"^\s*(?:\"([^\"]+)\"|([A-Za-z0-9_-]+))\s*=")


def key_lines(text: str) -> dict[tuple[str, int, str], int]:
    """(table, index of that table, key) -> line number, for naming the line of a bad field. A line scanner, not a
    TOML parser: it only finds where a key tomllib already parsed was written (tables `[x]`, arrays of tables `[[x]]`
    counted from 0, top-level keys under "")."""
    lines: dict[tuple[str, int, str], int] = {}
    table, counts = "", {"": 0}
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER_RE.match(line)
        if header:
            table = header.group(2)
            counts[table] = counts.get(table, -1) + 1 if header.group(1) else 0
            lines.setdefault((table, counts[table], ""), number)  # the table's own line
            continue
        key = _KEY_RE.match(line)
        if key:
            lines.setdefault((table, counts.get(table, 0), key.group(1) or key.group(2)), number)
    return lines


def string(value: Any) -> str | None:
    return None if isinstance(value, str) else f"is {type(value).__name__} {value!r}, expected a string"


def text(value: Any) -> str | None:
    """A string with something in it (a reason, a link)."""
    return string(value) or (None if value.strip() else "is empty")


def specifiers(value: Any) -> str | None:
    """A table of name -> PEP 440 specifier set (`{ "torch" = ">=2.6" }`)."""
    if not isinstance(value, dict):
        return (f"is {type(value).__name__} {value!r}, expected a table of name = \"specifier\" "
                "(e.g. when = { \"torch\" = \">=2.6\" })")
    for name, spec in value.items():
        if not isinstance(spec, str):
            return f"{name!r} is {type(spec).__name__} {spec!r}, expected a specifier string such as \">=2.6\""
        try:
            SpecifierSet(spec)
        except InvalidSpecifier:
            return f"{name!r} = {spec!r} is not a PEP 440 version specifier (e.g. \">=0.5\", \">=0.4.0,<=0.4.1\")"
    return None


def one_of(choices: tuple[str, ...]) -> Check:
    def check(value: Any) -> str | None:
        return None if value in choices else f"is {value!r}, expected one of {', '.join(choices)}"

    return check


def list_of_strings(value: Any) -> str | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return None
    return f"is {type(value).__name__} {value!r}, expected a list of strings"


def check_array_tables(data: Mapping[str, Any], text: str, source: str,
                       tables: Mapping[str, tuple[Mapping[str, Check], tuple[str, ...]]]) -> list[str]:
    """Every problem of a file made of arrays of tables, one line each: 'file:line: [[rule]] #3 (mode 'x'): ...'.
    tables: name -> (its fields and their checks, the fields it must have); any other top-level key is a problem."""
    lines = key_lines(text)
    problems: list[str] = []

    def where(table: str, index: int, key: str) -> str:
        line = lines.get((table, index, key)) or lines.get((table, index, ""))
        return f"{source}:{line}" if line else source

    for key in data:
        if key not in tables:  # a top-level key, or a misspelt [table] / [[table]] (its header's line)
            line = lines.get(("", 0, key)) or lines.get((key, 0, ""))
            at = f"{source}:{line}" if line else source
            problems.append(f"{at}: unknown top-level key {key!r} (known: {', '.join(tables)})")
    for name, (fields, required) in tables.items():
        entries = data.get(name, [])
        if not isinstance(entries, list):
            problems.append(f"{where('', 0, name)}: {name!r} must be an array of tables ([[{name}]])")
            continue
        for index, entry in enumerate(entries):
            label = f"[[{name}]] #{index + 1}"
            if not isinstance(entry, dict):
                problems.append(f"{where(name, index, '')}: {label} is {type(entry).__name__}, expected a table")
                continue
            first = next((entry[k] for k in ("mode", "match") if isinstance(entry.get(k), str)), None)
            label += f" ({first!r})" if first else ""
            for key, value in entry.items():
                check = fields.get(key)
                if check is None:
                    problems.append(f"{where(name, index, key)}: {label}: unknown key {key!r} "
                                    f"(known: {', '.join(fields)})")
                elif (problem := check(value)) is not None:
                    problems.append(f"{where(name, index, key)}: {label}: {key} {problem}")
            problems += [f"{where(name, index, '')}: {label}: no {key!r} (required: {', '.join(required)})"
                         for key in required if key not in entry]
    return problems
