"""Merge the cells' JUnit files into one xunit2-valid file, every testcase tagged with its cell.

Per-cell files are xunit1 (testcase <properties> carry the evidence). xunit2 forbids those, so the
evidence moves into the testcase's <system-out> (one `name=value` per line) and the cell's identity
into its testsuite's <properties>. junitparser does not de-duplicate, so each testcase's classname
and name carry the cell id: the same test in two cells stays two testcases.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from junitparser import Error, JUnitXml, Skipped, TestCase, TestSuite

from pcgkit import resources
from pcgkit.jobs.run import RunFiles
from pcgkit.matrix.outcome import CellOutcome
from pcgkit.matrix.uninstallable import expected_failure, load_uninstallable
from pcgkit.util import atomic
from pcgkit.util.sanitize import clean_text

SCHEMA_PATH = resources.fixture("schemas", "xunit2.xsd")


def _time(value: float | None) -> float:
    return round(float(value or 0.0), 3)  # the xunit2 time pattern allows at most three decimals


def _testcase_properties(case: TestCase) -> list[tuple[str, str]]:
    props = case._elem.find("properties")
    if props is None:
        return []
    return [(p.get("name", ""), p.get("value", "")) for p in props.findall("property")]


def _retag(case: TestCase, cell_id: str) -> TestCase:
    tagged = TestCase(f"{case.name}[cell={cell_id}]", f"{cell_id}.{case.classname or ''}", _time(case.time))
    tagged.result = list(case.result)
    lines = [f"{name}={value}" for name, value in _testcase_properties(case)]
    existing = case.system_out or ""
    tagged.system_out = "\n".join(x for x in ("\n".join(lines), existing) if x) or None  # type: ignore[assignment]  # junitparser accepts None
    if case.system_err:
        tagged.system_err = case.system_err
    return tagged


def _cell_suite(outcome: CellOutcome) -> TestSuite:
    cell = outcome.cell
    suite = TestSuite(f"pcgkit-matrix[cell={cell.id}]")
    identity = {"id": cell.id, "definition_hash": cell.definition_hash, "label": cell.label(),
                "pin_status": cell.pin_status, "status": outcome.status}
    versions = {f"version.{name}": str(value) if value else "not installed" for name, value in sorted(outcome.versions.items())}
    for name, value in {**identity, **versions}.items():
        suite.add_property(f"pcgkit.cell.{name}", value)
    return suite


def merge(outcomes: Sequence[CellOutcome], cells_root: Path) -> JUnitXml:
    merged = JUnitXml("pcgkit matrix")
    uninstallable = load_uninstallable()
    for outcome in outcomes:
        suite = _cell_suite(outcome)
        junit_path = RunFiles(cells_root / outcome.cell.id).junit_path
        if outcome.is_error or not junit_path.exists():
            # No verdicts: one testcase that errors, with the reason and the log tail.
            case = TestCase(f"cell-setup[cell={outcome.cell.id}]", f"{outcome.cell.id}.pcgkit", _time(outcome.duration_s))
            expected = expected_failure(outcome, uninstallable)
            if expected is not None:  # recorded in the baseline: a skip with its reason, not a red cell
                case.result = [Skipped(f"{expected.describe()}; {outcome.stage}: {outcome.reason}")]
            elif outcome.is_error:
                case.result = [Error(f"{outcome.stage}: {outcome.reason}", "pcgkit.CellError")]
                case.result[0].text = outcome.log_tail
            suite.add_testcase(case)
        else:
            source: list = []
            try:
                source = list(JUnitXml.fromfile(str(junit_path)))
            except Exception as exc:  # noqa: BLE001 - a truncated/corrupt cell JUnit is a visible error row
                case = TestCase(f"cell-junit[cell={outcome.cell.id}]", f"{outcome.cell.id}.pcgkit", 0.0)
                case.result = [Error(f"unreadable result: {junit_path}: {type(exc).__name__}: {exc}", "pcgkit.CellError")]
                suite.add_testcase(case)
            for source_suite in source:
                for case in source_suite:
                    suite.add_testcase(_retag(case, outcome.cell.id))
        suite.update_statistics()
        suite.time = _time(suite.time)
        merged.add_testsuite(suite)
    return _totalled(merged)


def _totalled(merged: JUnitXml) -> JUnitXml:
    merged.update_statistics()
    merged.time = _time(merged.time)
    merged._elem.attrib.pop("skipped", None)  # xunit2 counts skips per testsuite only
    return merged


def _write(merged: JUnitXml, path: Path) -> Path:
    """Atomic and redacted (pcgkit.util.atomic); every text is XML-clean (pcgkit.util.sanitize)."""
    import xml.etree.ElementTree as ET
    from xml.dom.minidom import parseString

    # cleaned before the pretty-printer parses it: one ANSI byte in a log tail made it raise ExpatError
    text = clean_text(ET.tostring(merged._elem, encoding="unicode"))
    return atomic.write_text(path, parseString(text).toprettyxml(indent="\t"))


def write_merged(outcomes: Sequence[CellOutcome], cells_root: Path, path: Path) -> Path:
    return _write(merge(outcomes, cells_root), path)


def validate(path: Path, schema: Path = SCHEMA_PATH) -> list[str]:
    """Schema violations of a JUnit file against xunit2; empty when valid."""
    import xmlschema

    return [str(err.reason or err) for err in xmlschema.XMLSchema(str(schema)).iter_errors(str(path))]


def validated(junit: Path) -> list[str]:
    """xunit2 problems of the merged JUnit. The check is pure in the file's bytes, and it is most of a
    re-run whose cells are all reused (xmlschema's import and schema build, ~0.9 s of 1.6 s), so a
    file byte-identical to the one last found valid is not checked again (its digest sits beside it)."""
    import hashlib

    digest = hashlib.sha256(junit.read_bytes()).hexdigest()
    stamp = junit.with_name(junit.name + ".valid")
    if stamp.exists() and stamp.read_text().strip() == digest:
        return []
    problems = validate(junit)
    if not problems:
        stamp.write_text(digest + "\n")
    elif stamp.exists():
        stamp.unlink()
    return problems


def splice_merged(measured: Path, fresh: Path) -> Path:
    """`fresh` (a merged JUnit) rewritten to hold `measured`'s cell suites (a merged JUnit, .xml or .xml.gz)
    with each of fresh's cells in place of the suite of the same name, the others kept as measured:
    `pcgkit report --over` for the JUnit beside the compat.json."""
    import gzip

    raw = measured.read_bytes()
    old = JUnitXml.fromstring(gzip.decompress(raw) if measured.suffix == ".gz" else raw)
    new = {s.name: s for s in JUnitXml.fromfile(str(fresh))}
    merged = JUnitXml("pcgkit matrix")
    for suite in old:
        merged.add_testsuite(new.pop(suite.name, suite))
    for suite in new.values():
        merged.add_testsuite(suite)
    return _write(_totalled(merged), fresh)
