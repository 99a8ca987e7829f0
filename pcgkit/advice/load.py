"""load_evidence(): the advice model's inputs, read from the kit's data files (the only I/O of pcgkit.advice).

- fixtures/matrix_snapshot.json: the newest matrix's verdicts per cell and case (what was measured,
  on which simulated or real device);
- fixtures/upstream_reads.json: upstream issue/PR states with the date they were read
  (`bin/pcgkit lab refresh-upstream`), and upstream figures kept as quotes;
- fixtures/sglang_releases.json: every SGLang release in range, read from its own wheel
  (`bin/pcgkit lab read-releases`);
- fixtures/measurements/piecewise-cost.json: the workaround's measured cost, once it exists;
- fixtures/measurements/first-try.json: what the first try's launches did on the lent GPU (a hybrid there);
- fixtures/certificates/certificate-*.json: each release's trace-safety certificate, for the FlashInfer
  calls it found breaking in a JIT loader under fullgraph (pcgkit.sweep.certificate.compile_unsafe_calls).
`parse_*` functions are pure over the decoded data; ValueError names what is wrong.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pcgkit import resources
from pcgkit.advice.cost import CostTable, capture_line, cost_table
from pcgkit.advice.model import COST_FILE, SGLANG_CASE_BY_ARCH, arch_family
from pcgkit.advice.values import (
    Evidence,
    FirstTryRun,
    Measurement,
    Mode2Run,
    Quote,
    UnsafeCall,
    UpstreamRead,
    Versions,
)
from pcgkit.errors import UsageError
from pcgkit.sglang.releases import TABLE_FILE, parse_table
from pcgkit.sweep.certificate import SCHEMA as CERTIFICATE_SCHEMA
from pcgkit.sweep.certificate import compile_unsafe_calls, with_op_rule
from pcgkit.values.verdict import Verdict

SNAPSHOT_FILE = "matrix_snapshot.json"
READS_FILE = "upstream_reads.json"
READS_SCHEMA = "pcgkit.upstream-reads/1"
COST_SCHEMA = "pcgkit.piecewise-cost/1"
MODE2_FILE = "fixtures/measurements/mode2-condition.json"
MODE2_SCHEMA = "pcgkit.mode2-condition/1"
FIRST_TRY_FILE = "fixtures/measurements/first-try.json"
FIRST_TRY_SCHEMA = "pcgkit.first-try-results/1"  # lab/e2e/firsttry.py fixture writes it
CERTIFICATES_DIR = "certificates"  # under fixtures/: certificate-<release>-<arch>[-scope].json
READ_KINDS = ("issue", "pr", "doc", "code")
READ_STATES = ("open", "closed", "merged", "pinned", "read")
# A case that simulates its own architecture whatever the cell's target (the non-SM120 SGLang case).
_CASE_ARCH = {case: arch for arch, case in SGLANG_CASE_BY_ARCH.items() if arch != "sm120"}
_DEVICE_ARCH = re.compile(r"\bSM ?(\d{2,3})\b", re.I)
_REAL_SM90 = re.compile(r"\b(H100|H200|H800|GH200)\b")


def device_arch(label: str) -> str | None:
    """The arch family a device label speaks for ('simulated SM120 (...)' -> sm120, 'NVIDIA H200' -> sm90). Pure."""
    match = _DEVICE_ARCH.search(label or "")
    if match:
        return arch_family(match.group(1))
    return "sm90" if _REAL_SM90.search(label or "") else None


_STATEMENTS = frozenset(v.value for v in Verdict if v.is_bug_verdict)


def parse_snapshot(data: dict, source: str = SNAPSHOT_FILE) -> tuple[Measurement, ...]:
    """One Measurement per (cell, case) with a verdict; cases whose arch cannot be told are left out. Pure."""
    if not str(data.get("schema", "")).startswith("pcgkit.matrix-snapshot/"):
        raise ValueError(f"{source}: not a matrix snapshot (schema {data.get('schema')!r})")
    as_of = str(data.get("matrix_created", ""))[:10] or "undated"  # a cell without its own `measured` date
    origin = str(data.get("source") or source)
    out = []
    for cell in data.get("cells", ()):
        versions = Versions(cell.get("sglang"), cell.get("flashinfer-python"), cell.get("torch"))
        cell_arch = device_arch(str(cell.get("device", "")))
        ran = set(cell.get("ran", ()))
        for case, verdict in sorted((cell.get("verdicts") or {}).items()):
            arch = _CASE_ARCH.get(case, cell_arch)
            if arch is None or verdict not in _STATEMENTS:
                continue  # an error or a skip says nothing about the bug: not a measurement (a named gap)
            out.append(Measurement(str(cell["id"]), case, str(verdict), arch, bool(cell.get("simulated", True)),
                                   versions, str(cell.get("measured") or as_of), origin, case in ran))
    return tuple(out)


def parse_reads(data: dict, source: str = READS_FILE) -> tuple[tuple[UpstreamRead, ...], tuple[Quote, ...]]:
    """The dated upstream reads and quotes; every read needs a state, an ISO date and how it was read. Pure."""
    if data.get("schema") != READS_SCHEMA:
        raise ValueError(f"{source}: schema {data.get('schema')!r}, expected {READS_SCHEMA!r}")
    reads = []
    for i, row in enumerate(data.get("reads", ())):
        try:
            read = UpstreamRead(**row)
        except TypeError as exc:
            raise ValueError(f"{source}: read {i}: {exc}") from exc
        if read.kind not in READ_KINDS or read.state not in READ_STATES or not read.url.startswith("https://"):
            raise ValueError(f"{source}: read {read.id!r}: kind {read.kind!r} / state {read.state!r} / url invalid")
        if not _iso_date(read.as_of) or not read.how.strip():
            raise ValueError(f"{source}: read {read.id!r} has no ISO 'as_of' date or no 'how'")
        reads.append(read)
    quotes = []
    for i, row in enumerate(data.get("quotes", ())):
        if not (_iso_date(str(row.get("as_of", ""))) and str(row.get("url", "")).startswith("https://") and row.get("phase")):
            raise ValueError(f"{source}: quote {i} needs an https url, a phase and an ISO as_of date")
        quotes.append(Quote(str(row["text"]), str(row["url"]), str(row["phase"]), str(row["as_of"])))
    return tuple(reads), tuple(quotes)


def _iso_date(text: str) -> bool:
    return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", text or ""))


def parse_cost(data: dict, source: str = COST_FILE) -> tuple[CostTable | None, CostTable | None, str,
                                                             tuple[CostTable, ...]]:
    """(piecewise off against on, the breakable runner against off, the start-up line, each `by_release` entry's own
    breakable table) from the measured cost file (benchmarks/piecewise_cost.py writes it on the lent GPU). Pure."""
    if data.get("schema") != COST_SCHEMA:
        raise ValueError(f"{source}: schema {data.get('schema')!r}, expected {COST_SCHEMA!r}")
    missing = [k for k in ("device", "model", "date", "phases") if not data.get(k)]
    if missing:
        raise ValueError(f"{source}: missing {missing}")
    by_release = tuple(t for release, doc in sorted((data.get("by_release") or {}).items())
                       if (t := cost_table(doc, f"{source} by_release[{release}]", breakable=True)) is not None)
    return cost_table(data, source), cost_table(data, source, breakable=True), capture_line(data), by_release


def parse_mode2(data: dict, source: str = MODE2_FILE) -> tuple[Mode2Run, ...]:
    """The mode-2 runs, both process states per measured environment. Pure."""
    if data.get("schema") != MODE2_SCHEMA or not _iso_date(str(data.get("date", ""))):
        raise ValueError(f"{source}: schema {data.get('schema')!r} (expected {MODE2_SCHEMA!r}) or no ISO date")
    runs = []
    for row in data.get("results", ()):
        v = row.get("versions", {})
        versions = Versions(v.get("sglang"), v.get("flashinfer-python"), v.get("torch"))
        for key, registered in (("not_registered", False), ("registered", True)):
            where = row["jit_spec_condition"].get(key)
            if where and not where.get("traced"):
                runs.append(Mode2Run(registered, str(where.get("innermost_frame")), str(where.get("skipped_callable")),
                                     versions, str(row.get("device", "")), bool(row.get("simulated")),
                                     str(data["date"]), f"{source} (from {data.get('source', '?')})"))
    return tuple(runs)


def parse_first_try(data: dict, source: str = FIRST_TRY_FILE) -> tuple[FirstTryRun, ...]:
    """The first try's launches (those that ran), each with the hybrid's label, the run's date and its sample. Pure."""
    if data.get("schema") != FIRST_TRY_SCHEMA or not _iso_date(str(data.get("date", ""))):
        raise ValueError(f"{source}: schema {data.get('schema')!r} (expected {FIRST_TRY_SCHEMA!r}) or no ISO date")
    runs = []
    for row in data.get("runs", ()):
        if row.get("not_run"):
            continue
        if not str(row.get("label", "")).startswith("hybrid: real ") and not data.get("simulated"):
            raise ValueError(f"{source}: a run on SM90 without its hybrid label: {row.get('label')!r}")
        runs.append(FirstTryRun(str(row["sglang"]), str(row["try"]), str(row["label"]), bool(row["past_crash_point"]),
                                str(row.get("outcome") or ""), str(data["date"]),
                                f"{source} (from {data.get('source', '?')})"))
    return tuple(runs)


def certificate_paths(folder: Path | None = None) -> list[Path]:
    """The committed trace-safety certificates (default fixtures/certificates/), sorted; the one place that
    names their files (the dashboard's page reads them through here too)."""
    folder = folder if folder is not None else resources.fixture(CERTIFICATES_DIR)
    return sorted(folder.glob("certificate-*.json")) if folder.is_dir() else []


def read_certificate(path: Path) -> dict:
    """One certificate's JSON, the opaque-op rule applied (pcgkit.sweep.certificate.with_op_rule); ValueError when it
    is not a pcgkit certificate."""
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or data.get("schema") != CERTIFICATE_SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"{path}: schema {found!r}, expected {CERTIFICATE_SCHEMA!r}")
    return with_op_rule(data)  # opaque-op only where the op's fake executed (rows written before the rule too)


def parse_certificates(certificates: list[tuple[str, dict]]) -> tuple[UnsafeCall, ...]:
    """The compile-unsafe calls of every whole certificate given as (file, data), per release. Pure."""
    out = []
    for source, cert in certificates:
        for entry in compile_unsafe_calls([cert], str(cert.get("flashinfer", ""))):
            out.append(UnsafeCall(str(entry["target"]), str(entry.get("loader", "")), str(entry.get("where", "")),
                                  str(entry["flashinfer"]), str(entry["arch"]), bool(entry["simulated"]),
                                  str(entry["device"]), str(entry.get("created", ""))[:10], source))
    return tuple(out)


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not readable as JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a JSON object")
    return data


def load_evidence(fixtures: Path | None = None) -> Evidence:
    """Read the evidence files (the checkout's or the wheel's fixtures, or another folder for tests)."""
    folder = fixtures or resources.fixtures_dir()
    try:
        measurements = parse_snapshot(_json(folder / SNAPSHOT_FILE), f"fixtures/{SNAPSHOT_FILE}")
        reads, quotes = parse_reads(_json(folder / READS_FILE), f"fixtures/{READS_FILE}")
        releases = parse_table(_json(folder / TABLE_FILE), f"fixtures/{TABLE_FILE}")
        cost_path = folder / Path(COST_FILE).relative_to("fixtures")
        costs = parse_cost(_json(cost_path), COST_FILE) if cost_path.is_file() else (None, None, "", ())
        mode2_path = folder / Path(MODE2_FILE).relative_to("fixtures")
        mode2 = parse_mode2(_json(mode2_path)) if mode2_path.is_file() else ()
        first_path = folder / Path(FIRST_TRY_FILE).relative_to("fixtures")
        first_try = parse_first_try(_json(first_path)) if first_path.is_file() else ()
        unsafe = parse_certificates([(f"fixtures/{CERTIFICATES_DIR}/{p.name}", read_certificate(p))
                                     for p in certificate_paths(folder / CERTIFICATES_DIR)])
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{exc}" if isinstance(exc, ValueError) else f"an evidence file is malformed: {exc!r}") from exc
    table, breakable, capture, by_release = costs
    return Evidence(measurements, reads, releases, f"fixtures/{TABLE_FILE}", quotes, mode2, unsafe, cost_table=table,
                    breakable_table=breakable, breakable_by_release=by_release, first_try_runs=first_try, capture=capture)
