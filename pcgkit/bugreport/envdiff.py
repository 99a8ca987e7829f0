"""`pcgkit env --diff A B`: only what differs between two cells' environments.

The first question when one cell passes and another fails. A side may be an env capture
(`pcgkit env --json`), a results.json (which embeds a capture under environment.env, or at
least the versions, devices and CUDA home the run recorded), or a report folder holding either.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pcgkit.bugreport.envcapture import ENV_SCHEMA
from pcgkit.errors import UsageError
from pcgkit.util.atomic import read_json_object
from pcgkit.verdicts.result import RESULTS_SCHEMA

# Differ on every capture and say nothing about the cell.
VOLATILE_KEYS = frozenset({"created", "torch_collect_env.text"})
CANDIDATE_FILES = ("env.json", "results.json")


def capture_from_results(data: dict) -> dict:
    """The env capture a results file carries, or the subset of one it can be mapped to."""
    environment = data.get("environment", {})
    if isinstance(environment.get("env"), dict):
        return environment["env"]
    versions = dict(environment.get("versions", {}))
    python = versions.pop("python", None)
    torch_cuda = versions.pop("torch_cuda", None)
    devices = environment.get("devices") or []
    return {
        "schema": ENV_SCHEMA + " (subset recorded in a results file)",
        "python": {"version": python},
        "packages": versions,
        "torch": {"cuda": torch_cuda},
        "cuda_toolkit": {"cuda_home": environment.get("cuda_home")},
        "devices": {"mode": "real" if devices else "simulated SM120", "gpus": devices},
    }


def resolve_side(side: str, reports: Path = Path("reports")) -> Path:
    """A path as given, or a matrix cell id: that cell's folder under reports/matrix/cells/."""
    path = Path(side)
    if path.exists():
        return path
    cell_dir = reports / "matrix" / "cells" / side
    if cell_dir.is_dir():
        return cell_dir
    raise UsageError(f"{side}: neither a file/folder nor a cell run under {cell_dir.parent} (run `pcgkit matrix` first)")


def load_capture(path: Path) -> dict:
    if path.is_dir():
        for name in CANDIDATE_FILES:
            if (path / name).is_file():
                return load_capture(path / name)
        raise UsageError(f"{path}: no {' or '.join(CANDIDATE_FILES)} in this folder")
    data = read_json_object(path, "capture")  # missing, not JSON, not an object: one-line UsageError
    schema = data.get("schema", "")
    if schema == ENV_SCHEMA:
        return data
    if schema == RESULTS_SCHEMA:
        return capture_from_results(data)
    raise UsageError(f"{path}: schema {schema!r} is neither {ENV_SCHEMA!r} nor {RESULTS_SCHEMA!r}")


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": [1]}} -> {"a.b[0]": 1}. Pure."""
    if isinstance(data, dict):
        items = [(f"{prefix}.{key}" if prefix else str(key), value) for key, value in data.items()]
    elif isinstance(data, list) and data and not all(isinstance(v, (str, int, float, bool)) for v in data):
        items = [(f"{prefix}[{index}]", value) for index, value in enumerate(data)]
    else:
        return {prefix: data}
    return {key: leaf for name, value in items for key, leaf in flatten(value, name).items()}


def _show(value: Any) -> str:
    if value is None:
        return "(absent)"
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 160 and "\n" not in text else text.replace("\n", " ")[:157] + "..."


def diff_lines(a: dict, b: dict) -> list[str]:
    """'key: A -> B' for every key whose value differs. Pure. A key on one side only is a difference between two
    full captures (a variable set in one cell), but unknown, so left out, where a side is a results file's subset."""
    flat_a, flat_b = flatten(a), flatten(b)
    both_full = a.get("schema") == ENV_SCHEMA and b.get("schema") == ENV_SCHEMA
    keys = set(flat_a) | set(flat_b) if both_full else set(flat_a) & set(flat_b)
    lines = []
    for key in sorted(keys):
        if key in VOLATILE_KEYS or key.startswith("schema"):
            continue
        if flat_a.get(key) != flat_b.get(key):
            lines.append(f"{key}: {_show(flat_a.get(key))} -> {_show(flat_b.get(key))}")
    return lines
