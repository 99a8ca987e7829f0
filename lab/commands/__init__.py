"""The workshop's commands, one module each with `register(subparsers)` (lab.cli lists them)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pcgkit.util import atomic


def write_fixture(prog: str, out: str | None, default: Path, data: Any, summary: str) -> Path:
    """A refresher's one output: the JSON file `out` names, else the kit's own data file `default`, written whole
    (pcgkit.util.atomic.write_json: sorted keys, redacted), then one line on stderr: "PROG: SUMMARY TARGET"."""
    target = Path(out) if out else default
    atomic.write_json(target, data, indent=1)
    print(f"{prog}: {summary} {target}", file=sys.stderr)
    return target
