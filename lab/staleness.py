"""Every statement source checked: measured, or dated and not too old. Pure.

Thresholds (days since the read or the measurement, per source kind), chosen as follows:
- upstream reads: 90 days. Issue/PR states here changed within weeks (flashinfer#2999 closed five
  weeks after it was filed); a quarter is the longest a state may be quoted without `bin/pcgkit
  lab refresh-upstream` being run again.
- parser (every SGLang release read from its wheel): 90 days. SGLang published a release about every
  two weeks in 2026; after a quarter the table is likely missing releases users run.
- cells (matrix verdicts): 180 days. A verdict of a pinned release does not change; what ages is the
  range (new releases are not in it), which `bin/pcgkit lab discover` reports; half a year bounds it.
- measurement (the cost on the H200, mode 2 both ways): 365 days: a measured figure of pinned
  software stays true; a year bounds drift of the hardware and drivers it ran on.
`tests/test_statement_sources.py` runs `problems(...)` against the machine's date: when it fails, the data
is stale and must be refreshed, not the threshold raised.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable

from pcgkit.advice.values import Statement

STALE_AFTER_DAYS: dict[str, int] = {"upstream": 90, "parser": 90, "cells": 180, "measurement": 365}


def _date(text: str) -> _dt.date | None:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text or ""):
        return None
    try:
        return _dt.date.fromisoformat(text)
    except ValueError:
        return None


def statement_problems(statements: Iterable[Statement], today: _dt.date) -> list[str]:
    """One line per statement without a source, or with a source undated, from the future, or too old. Pure."""
    problems = []
    for statement in statements:
        if not statement.sources:
            problems.append(f"no source: {statement.text[:80]!r}")
        for source in statement.sources:
            when = _date(source.as_of)
            if when is None:
                problems.append(f"undated {source.kind} source {source.ref[:60]!r} of {statement.text[:60]!r}")
            elif when > today:
                problems.append(f"{source.kind} source {source.ref[:60]!r} dated in the future ({source.as_of})")
            elif (today - when).days > STALE_AFTER_DAYS[source.kind]:
                problems.append(f"stale {source.kind} source {source.ref[:60]!r}: {source.as_of}, "
                                f"{(today - when).days} days > {STALE_AFTER_DAYS[source.kind]}")
    return problems


def upstream_file_problems(upstream: dict, read_ids: set[str], measured_cases: set[str]) -> list[str]:
    """fixtures/upstream.toml entries without a dated read or a measurement behind them. Pure."""
    problems = [f"[[link]] {link.get('id')!r} has no dated read in fixtures/upstream_reads.json"
                for link in upstream.get("link", ()) if link.get("id") not in read_ids]
    for workaround in upstream.get("workaround", ()):
        if not set(workaround.get("cases", ())) & measured_cases:
            problems.append(f"[[workaround]] {workaround.get('what')!r}: no case of it measured in the matrix snapshot")
    for dead in upstream.get("dead_end", ()):
        if dead.get("case") not in measured_cases:
            problems.append(f"[[dead_end]] {dead.get('case')!r}: not measured in the matrix snapshot")
        problems += [f"[[dead_end]] {dead.get('case')!r}: link {i!r} has no dated read"
                     for i in dead.get("links", ()) if i not in read_ids]
    for key in ("fixed_in", "piecewise_off", "switch"):
        if key in upstream:
            problems.append(f"[{key}] is hand-typed prose the kit no longer accepts")
    return problems
