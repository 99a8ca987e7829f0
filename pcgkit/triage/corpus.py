"""The labelled triage corpus (tests/data/triage_logs/INDEX.toml) scored against `pcgkit triage`. Pure
except `load_corpus`, which reads the files; shared by the benchmark and the tests.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import tomllib

from pcgkit.triage.diagnose import Diagnosis, Kind, diagnose
from pcgkit.values.signature import read_log

KINDS = tuple(str(k) for k in Kind)


@dataclasses.dataclass(frozen=True)
class Scored:
    file: str
    origin: str
    label: str
    mode: str
    piecewise: str
    got: Diagnosis


def load_corpus(folder: Path) -> list[Scored]:
    """Triage every indexed log of `folder` (its INDEX.toml) and keep the label beside the answer."""
    index = tomllib.loads((folder / "INDEX.toml").read_text())["log"]
    out = []
    for entry in index:
        text = (folder / entry["file"]).read_bytes().decode("utf-8", errors="replace")
        out.append(Scored(entry["file"], entry["origin"], entry["label"], entry.get("mode", ""),
                          entry.get("piecewise", "unknown"), diagnose(read_log(text))))
    return out


def confusion(scored: list[Scored]) -> dict[tuple[str, str], int]:
    """(label, answer) -> count. Pure."""
    return dict(Counter((s.label, str(s.got.kind)) for s in scored))


def render_confusion(scored: list[Scored]) -> str:
    matrix = confusion(scored)
    width = max(len(k) for k in KINDS) + 2
    rows = ["label \\ triage".ljust(width + 2) + "".join(k.rjust(width) for k in KINDS)]
    for label in KINDS:
        rows.append(label.ljust(width + 2) + "".join(str(matrix.get((label, got), 0)).rjust(width) for got in KINDS))
    return "\n".join(rows)


def false_known_bug(scored: list[Scored]) -> list[Scored]:
    """Logs that do not show this bug but were called known-bug: must stay empty."""
    return [s for s in scored if s.got.kind is Kind.KNOWN_BUG and s.label != "known-bug"]
