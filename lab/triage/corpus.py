"""The labelled triage corpora scored against `pcgkit triage`: the tuning corpus (tests/data/triage_logs/),
the held-out set (tests/data/triage_heldout/) and the metamorphic set degraded from their real logs
(lab.triage.degrade). Pure except `load_corpus`/`load_texts`, which read the files; shared by the
benchmark and the tests.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path
from typing import Sequence

import tomllib

from lab.triage.degrade import DEGRADATIONS, still_shows_family
from pcgkit.triage.diagnose import Diagnosis, Kind, MatchableMode, diagnose
from pcgkit.triage.steps import FlashInferSource, load_source
from pcgkit.values.logread import read_log

KINDS = tuple(str(k) for k in Kind)


@dataclasses.dataclass(frozen=True)
class Scored:
    file: str
    origin: str
    label: str
    mode: str
    piecewise: str
    got: Diagnosis


def load_texts(folder: Path) -> list[tuple[dict, str]]:
    """(index entry, text) for every log indexed in `folder`'s INDEX.toml."""
    index = tomllib.loads((folder / "INDEX.toml").read_text())["log"]
    return [(entry, (folder / entry["file"]).read_bytes().decode("utf-8", errors="replace")) for entry in index]


def score(texts: list[tuple[dict, str]], modes: Sequence[MatchableMode],
          source: FlashInferSource | None = None) -> list[Scored]:
    """Triage each text with the catalog's `modes` (and FlashInfer's source table); keep the label beside the answer.
    Pure."""
    return [Scored(entry["file"], entry["origin"], entry["label"], entry.get("mode", ""),
                   entry.get("piecewise", "unknown"), diagnose(read_log(text), modes, source)) for entry, text in texts]


def load_corpus(folder: Path, modes: Sequence[MatchableMode]) -> list[Scored]:
    """Triage every indexed log of `folder` (its INDEX.toml) with the catalog's `modes` and FlashInfer's source table."""
    return score(load_texts(folder), modes, load_source())


@dataclasses.dataclass(frozen=True)
class Degraded:
    file: str
    degradation: str
    label: str  # the original's label
    required: bool  # a positive whose degraded text still shows the family: known-bug must stay
    got: Diagnosis


def degraded_set(texts: list[tuple[dict, str]], modes: Sequence[MatchableMode],
                 source: FlashInferSource | None = None) -> list[Degraded]:
    """Every real log (public or device, not the kit's own) under every degradation, triaged. Pure."""
    out = []
    for entry, text in texts:
        if entry["origin"] == "kit":
            continue
        for name, degrade in DEGRADATIONS.items():
            damaged = degrade(text)
            required = entry["label"] == "known-bug" and still_shows_family(damaged)
            out.append(Degraded(entry["file"], name, entry["label"], required, diagnose(read_log(damaged), modes, source)))
    return out


@dataclasses.dataclass(frozen=True)
class Rates:
    positives: int  # logs (or degraded texts) that must be called known-bug
    recalled: int
    negatives: int  # logs that do not show this bug
    false_known_bug: int

    def line(self) -> str:
        recall = f"{self.recalled}/{self.positives} = {self.recalled / self.positives:.0%}" if self.positives else "n/a"
        false = (f"{self.false_known_bug}/{self.negatives} = {self.false_known_bug / self.negatives:.0%}"
                 if self.negatives else "n/a")
        return f"known-bug recall {recall}; false known-bug {false}"


def rates_of_scored(scored: list[Scored]) -> Rates:
    pos = [s for s in scored if s.label == "known-bug"]
    neg = [s for s in scored if s.label != "known-bug"]
    return Rates(len(pos), sum(s.got.kind is Kind.KNOWN_BUG for s in pos),
                 len(neg), sum(s.got.kind is Kind.KNOWN_BUG for s in neg))


def rates_of_degraded(degraded: list[Degraded]) -> Rates:
    """Recall over the degraded positives that still show the family; false calls over degraded negatives."""
    pos = [d for d in degraded if d.required]
    neg = [d for d in degraded if d.label != "known-bug"]
    return Rates(len(pos), sum(d.got.kind is Kind.KNOWN_BUG for d in pos),
                 len(neg), sum(d.got.kind is Kind.KNOWN_BUG for d in neg))


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
