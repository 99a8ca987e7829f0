"""The newest matrix evidence a draft can be built from: the last run's report or a committed matrix sample.

A matrix's report folder holds compat.json (the ranges) and the merged JUnit (matrix-junit.xml, or .xml.gz
in a committed sample), whose every testcase carries its whole CaseResult (`pcgkit.result`, written by
the plugin: lossless). `newest_matrix` picks, among the candidates that have both, the one whose
compat.json was created last; `results_from_junit` reads the results back. Pure but for reading files.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import Path

from pcgkit.util.ranges import version_key
from pcgkit.verdicts.result import JUNIT_RESULT_PROPERTY, CaseResult

COMPAT_FILE = "compat.json"
JUNIT_NAMES = ("matrix-junit.xml", "matrix-junit.xml.gz")
# Whose release a draft pins, and the case that says whether that release still fails.
TARGET_AXIS = {"flashinfer": "flashinfer-python", "pytorch": "torch", "sglang": "sglang"}
TARGET_CASE = {"flashinfer": "mode1", "pytorch": "mode1", "sglang": "sglang-compile-sm120"}


@dataclasses.dataclass(frozen=True)
class MatrixEvidence:
    compat: Path
    junit: Path
    created: str  # the compat.json's `created`

    def describe(self) -> str:
        return f"{self.compat.parent} (matrix of {self.created[:10]})"


def matrix_at(compat: Path) -> MatrixEvidence | None:
    """The evidence in compat.json's folder; None when it has no merged JUnit or is unreadable."""
    junit = next((p for p in (compat.with_name(n) for n in JUNIT_NAMES) if p.is_file()), None)
    if junit is None:
        return None
    try:
        created = str(json.loads(compat.read_text()).get("created") or "")
    except (OSError, ValueError, AttributeError):
        return None
    return MatrixEvidence(compat, junit, created)


def newest_matrix(candidates: Iterable[Path]) -> MatrixEvidence | None:
    """Of these compat.json paths (a missing one is skipped), the newest with its merged JUnit beside it."""
    found = [m for p in candidates if p.is_file() and (m := matrix_at(p)) is not None]
    return max(found, key=lambda m: m.created, default=None)


def default_candidates(reports: Path, samples: Path) -> list[Path]:
    """The last run's report (REPORTS/compat.json) and every committed matrix sample's."""
    return [reports / COMPAT_FILE, *sorted(samples.glob(f"*/{COMPAT_FILE}"))]


def results_from_junit(text: str) -> list[tuple[str, CaseResult]]:
    """(cell id, CaseResult) for every result a merged JUnit carries (testcase system-out
    `pcgkit.result=<json>`, the cell id from its testsuite's `pcgkit.cell.id` property). Pure."""
    results = []
    prefix = f"{JUNIT_RESULT_PROPERTY}="
    for suite in ET.fromstring(text).iter("testsuite"):
        cell = next((p.get("value", "") for p in suite.iter("property") if p.get("name") == "pcgkit.cell.id"), "")
        for out in suite.iter("system-out"):
            for line in (out.text or "").splitlines():
                if line.startswith(prefix):
                    results.append((cell, CaseResult.from_dict(json.loads(line[len(prefix):]))))
    return results


def read_junit(path: Path) -> str:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8")


def newest_failing_release(results: Sequence[CaseResult], target: str) -> str | None:
    """The newest release of the target's project where the target's case still fails. Pure."""
    axis, case = TARGET_AXIS[target], TARGET_CASE[target]
    failing = [str(r.versions[axis]) for r in results
               if r.mode == case and r.verdict.value in ("reproduced", "drifted") and r.versions.get(axis)]
    return max(failing, key=version_key) if failing else None
