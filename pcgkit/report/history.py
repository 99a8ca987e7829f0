"""Every run's compat summary, kept beside the report (history.jsonl, one line per `pcgkit report`),
and the timelines the dashboard draws from it: per cell x case, the verdict in each run, the flips,
and since when the current verdict holds. `append_history` / `load_history` are the only I/O here.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pcgkit.errors import UsageError
from pcgkit.report.model import READABLE_SCHEMAS, Change, CompatReport, from_json
from pcgkit.util import atomic, untrusted
from pcgkit.values.verdict import LEGEND

HISTORY_SCHEMA = "pcgkit.compat-history/1"
HISTORY_FILE = "history.jsonl"
LEGACY_DIR = "history"  # older kits kept a full compat.json copy per run there
# The newest runs the dashboard draws and the report reads; the file itself keeps every run (read a line at a
# time, so its size never matters).
MAX_RUNS = 1000


@dataclasses.dataclass(frozen=True)
class RunSummary:
    created: str
    kit_version: str
    verdicts: Mapping[str, Mapping[str, str]]  # cell id -> case id -> verdict
    simulated: Mapping[str, bool]  # cell id -> simulated

    def to_json(self) -> dict:
        return {"schema": HISTORY_SCHEMA, "created": self.created, "kit_version": self.kit_version,
                "verdicts": {c: dict(v) for c, v in self.verdicts.items()}, "simulated": dict(self.simulated)}

    @classmethod
    def from_json(cls, data: Mapping) -> RunSummary:
        """One history line, every field typed and every id safe (ValueError naming the field otherwise):
        a line accepted here is appended again by later reports, so a bad one must stop here."""
        if not isinstance(data, dict):
            raise ValueError(f"a JSON {type(data).__name__}, expected an object")
        if data.get("schema") != HISTORY_SCHEMA:
            raise ValueError(f"history schema {data.get('schema')!r}, expected {HISTORY_SCHEMA!r}")
        created = untrusted.text(data, "created", "history", default=None)
        verdicts = data.get("verdicts")
        if not isinstance(verdicts, dict):
            raise ValueError(f"history.verdicts: expected an object, got {type(verdicts).__name__}")
        for cell, cases in verdicts.items():
            untrusted.safe_id(cell, "history cell id")
            if not isinstance(cases, dict):
                raise ValueError(f"history.verdicts[{cell}]: expected an object")
            for case, verdict in cases.items():
                untrusted.safe_id(case, "history case id")
                untrusted.safe_id(verdict, "history verdict")
        simulated = data.get("simulated") or {}
        if not isinstance(simulated, dict) or not all(isinstance(v, bool) for v in simulated.values()):
            raise ValueError("history.simulated: expected an object of true/false")
        return cls(created, untrusted.text(data, "kit_version", "history"), verdicts, simulated)


# One character per verdict in a timeline (the dashboard's sidecars carry these strings, not 100 dated
# points per case); a verdict outside this table gets the next free letter of EXTRA_CODES.
VERDICT_CODES: dict[str, str] = {v.value: legend.letter for v, legend in LEGEND.items()}
EXTRA_CODES = "abcdefghijklmnopqrstuvwxyz"
ABSENT = "."  # the cell was not in that run


@dataclasses.dataclass(frozen=True)
class Timeline:
    """One cell x case across the runs: a verdict code per run (the dates and the code table are the
    history's, shared by every timeline), the flips, and since when the current verdict holds."""

    dates: tuple[str, ...]  # every run's created, oldest first
    codes: str  # one character per run (VERDICT_CODES, ABSENT)
    verdicts: Mapping[str, str]  # code -> verdict
    flips: int  # how many times the verdict changed between consecutive runs that had this cell
    since: str  # the run from which the current verdict holds

    @property
    def flipped_last(self) -> bool:
        """The latest run changed this verdict."""
        present = self.codes.replace(ABSENT, "")
        return len(present) > 1 and present[-1] != present[-2]


def summarize(report: CompatReport) -> RunSummary:
    """The compact per-run record: one verdict per cell x case. Pure."""
    return RunSummary(
        report.created, report.kit_version,
        {c.id: {case: e.verdict for case, e in c.entries.items()} for c in report.cells},
        {c.id: c.simulated for c in report.cells},
    )


def with_current(history: Sequence[RunSummary], report: CompatReport) -> list[RunSummary]:
    """History plus this run (once: a report regenerated for the same run replaces its line). Pure."""
    current = summarize(report)
    return [h for h in history if h.created != current.created] + [current]


def _track(codes: str) -> tuple[int, int]:
    """(flips, index of the run the current verdict holds since) of one code string; string ops, not
    a Python loop per run: 7,500 tracks x 100 runs is the dashboard's scale."""
    present = codes.replace(ABSENT, "")
    if not present:
        return 0, 0
    flips = sum(1 for _ in itertools.groupby(present)) - 1
    current = present[-1]
    last_other = max((codes.rfind(c) for c in set(present) if c != current), default=-1)
    return flips, codes.index(current, last_other + 1)


def timelines(runs: Sequence[RunSummary]) -> dict[tuple[str, str], Timeline]:
    """Per (cell, case) across the runs, oldest first. Pure."""
    ordered = sorted(runs, key=lambda r: r.created)
    dates = tuple(r.created for r in ordered)
    codes = dict(VERDICT_CODES)
    extra = iter(EXTRA_CODES)
    tracks: dict[tuple[str, str], list[str]] = {}
    for index, run in enumerate(ordered):
        for cell, cases in run.verdicts.items():
            for case, verdict in cases.items():
                code = codes.get(verdict)
                if code is None:  # a verdict this kit does not know (a newer kit's history): keep it, coded
                    code = codes[verdict] = next(extra, "?")
                track = tracks.get((cell, case))
                if track is None:
                    track = tracks[(cell, case)] = [ABSENT] * len(ordered)
                track[index] = code
    verdicts = {c: v for v, c in codes.items()}
    out = {}
    for key, track in tracks.items():
        text = "".join(track)
        flips, since = _track(text)
        out[key] = Timeline(dates, text, verdicts, flips, dates[since])
    return out


def verdict_changes(before: RunSummary, after: Mapping[str, Mapping[str, str]]) -> tuple[Change, ...]:
    """The cell x case verdicts in `after` (cell id -> case id -> verdict) that differ from `before`'s, in
    `after`'s order. Pure."""
    return tuple(Change(cell, case, was, now) for cell, cases in after.items() for case, now in cases.items()
                 if (was := before.verdicts.get(cell, {}).get(case)) is not None and was != now)


def load_history(reports_dir: Path) -> list[RunSummary]:
    """history.jsonl, plus the per-run compat copies older kits left in history/; unreadable lines skipped."""
    runs: dict[str, RunSummary] = {}
    legacy = reports_dir / LEGACY_DIR
    for path in sorted(legacy.glob("*.json")) if legacy.is_dir() else ():
        try:
            data = json.loads(path.read_text())
            if data.get("schema") in READABLE_SCHEMAS:
                run = summarize(from_json(data))
                runs[run.created] = run
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # the others still count
            print(f"pcgkit report: {path}: not JSON, or the right schema but the wrong shape: skipped "
                  f"({type(exc).__name__})")
    path = reports_dir / HISTORY_FILE
    number = 0
    try:  # a line at a time whatever its size, a regular file only (a FIFO here is one line, not a hang)
        for number, raw in enumerate(atomic.iter_user_lines(path, "history") if path.exists() else (), 1):
            line = raw.decode("utf-8", "replace")  # bytes that are not UTF-8 are replaced
            if not line.strip():
                continue
            try:
                run = RunSummary.from_json(json.loads(line))
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:  # said, never dropped silently
                print(f"pcgkit report: {path}:{number}: unreadable history line, skipped ({type(exc).__name__})")
                continue
            runs[run.created] = run
            if len(runs) > 2 * MAX_RUNS:  # memory bounded: the newest runs are the ones drawn
                runs = dict(sorted(runs.items())[-MAX_RUNS:])
    except UsageError as exc:
        print(f"pcgkit report: {exc}: earlier runs not read" + (f" past line {number}" if number else ""))
    return sorted(runs.values(), key=lambda r: r.created)[-MAX_RUNS:]


def append_history(reports_dir: Path, report: CompatReport) -> Path:
    """One line for this run, appended. A report regenerated for a run already there (`report --compat`
    of a committed sample) replaces that run's line instead, so the file does not grow duplicates."""
    path = reports_dir / HISTORY_FILE
    line = json.dumps(summarize(report).to_json(), sort_keys=True, separators=(",", ":")) + "\n"
    marker = json.dumps({"created": report.created}, separators=(",", ":"))[1:-1]  # '"created":"..."'
    return atomic.append_line(path, line, drop=marker)  # whole or old, a cut line ended first, the path named
