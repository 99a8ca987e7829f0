"""The one validation of the matrix file (fixtures/matrix.toml and any --matrix), at plan time. Pure.

Every field is declared once here with its check; a wrong type, a version that is not PEP 440, a
requirement that is not PEP 508 or an unknown key is an error naming the file, line, table and field,
before anything is installed. TOML's own typing is the trap: `torch = 2.10` unquoted is the float 2.1,
`companions = "tabulate"` a string (one requirement per character), `timeout-s = "soon"` crashed a cell.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

from pcgkit.util.tomlschema import key_lines

Check = Callable[[Any], str | None]  # the problem with a value, or None when it is fine


def _string(value: Any) -> str | None:
    if isinstance(value, str):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (f"is the TOML number {value!r}, not a string: put it in quotes "
                f"(unquoted, 2.10 reads as the number 2.1)")
    return f"is {type(value).__name__} {value!r}, expected a string"


def _text(check: Callable[[str], str | None]) -> Check:
    """`check` for a string; any other value is `_string`'s problem."""
    return lambda value: _string(value) or check(value)


@_text
def _version(value: str) -> str | None:
    try:
        Version(value)
    except InvalidVersion:
        return f"{value!r} is not a PEP 440 version (e.g. \"2.9.1\", \"0.6.1.post1\")"
    return None


@_text
def _python(value: str) -> str | None:
    return None if re.fullmatch(r"3\.\d+(\.\d+)?", value) else f"{value!r} is not a Python version such as \"3.12\""


def _version_or(word: str) -> Check:
    return lambda value: None if value == word else _version(value)


@_text
def _requirement(value: str) -> str | None:
    try:
        Requirement(value)
    except InvalidRequirement as exc:
        return f"{value!r} is not a PEP 508 requirement ({str(exc).splitlines()[0]})"
    return None


@_text
def _name(value: str) -> str | None:
    return None if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", value) else f"{value!r}: use letters, digits, '.', '_', '-'"


def _list_of(item: Check, what: str) -> Check:
    def check(value: Any) -> str | None:
        if not isinstance(value, list):
            hint = f": write [{value!r}]" if isinstance(value, str) else ""
            return f"is {type(value).__name__} {value!r}, expected a list of {what}{hint}"
        for index, element in enumerate(value):
            problem = item(element)
            if problem:
                return f"item {index}: {problem}"
        return None

    return check


def _positive_seconds(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"is {type(value).__name__} {value!r}, expected a number of seconds"
    if value != value or value in (float("inf"), float("-inf")):  # TOML has inf and nan
        return f"is {value!r}, expected a finite number of seconds (a job needs a limit)"
    return None if value > 0 else f"is {value!r}, expected a positive number of seconds"


def _cell_id(value: Any) -> str | None:
    problem = _name(value)
    return f"(the cell id) {problem}" if problem else None


CELL_FIELDS: dict[str, Check] = {
    "id": _cell_id,
    "kind": _string,
    "python": _python,
    "sglang": _version,
    "flashinfer-python": _version,
    "torch": _version,
    "companions": _list_of(_requirement, "requirements (\"name==1.2\")"),
    "flashinfer-extras": _list_of(_name, "extra names"),
    "constraints": _list_of(_requirement, "requirements (\"name>=1.2\")"),
    "interpreter": _string,
    "base-image": _string,
    "timeout-s": _positive_seconds,
}
SGLANG_RELEASES_FIELDS: dict[str, Check] = {
    "from": _version_or("first-piecewise"),
    "to": _version_or("newest"),
    "python": _python,
    "constraints": _list_of(_requirement, "requirements (\"name>=1.2\")"),
}
DEFAULTS_FIELDS: dict[str, Check] = {"python": _python, "base-image": _string}
TOP_LEVEL = ("schema", "cell", "sglang_releases", "defaults")

def validate(data: dict, text: str, source: str) -> list[str]:
    """Every problem of a parsed matrix file, each one line: 'file:line: [[cell]] 2 (id "x") torch: ...'."""
    lines = key_lines(text)
    problems: list[str] = []

    def where(table: str, index: int, key: str) -> str:
        line = lines.get((table, index, key))
        return f"{source}:{line}" if line else source

    def check_table(table: str, index: int, label: str, values: Any, fields: dict[str, Check]) -> None:
        if not isinstance(values, dict):
            problems.append(f"{source}: {label} is {type(values).__name__}, expected a table")
            return
        for key, value in values.items():
            check = fields.get(key)
            if check is None:
                problems.append(f"{where(table, index, key)}: {label}: unknown key {key!r} (known: {', '.join(fields)})")
            elif problem := check(value):
                problems.append(f"{where(table, index, key)}: {label}: {key} {problem}")

    for key in data:
        if key not in TOP_LEVEL:
            problems.append(f"{where('', 0, key)}: unknown top-level key {key!r} (known: {', '.join(TOP_LEVEL)})")
    cells = data.get("cell", [])
    if not isinstance(cells, list):
        problems.append(f"{source}: 'cell' must be an array of tables ([[cell]]), got {type(cells).__name__}")
        cells = []
    for index, table in enumerate(cells):
        cell_id = table.get("id") if isinstance(table, dict) else None
        label = f"[[cell]] #{index + 1}" + (f" (id {cell_id!r})" if isinstance(cell_id, str) else "")
        check_table("cell", index, label, table, CELL_FIELDS)
    for table, fields in (("sglang_releases", SGLANG_RELEASES_FIELDS), ("defaults", DEFAULTS_FIELDS)):
        if table in data:
            check_table(table, 0, f"[{table}]", data[table], fields)
    return problems
