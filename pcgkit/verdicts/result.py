"""CaseResult: one verdict with all of its evidence, and the versioned JSON results file.

A data boundary: reason and evidence are cleaned (ANSI/control characters) and redacted when a
result is made, and its dict/JUnit forms (signature included) pass the same pass on the way out.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any, Iterable

from pcgkit.errors import UsageError
from pcgkit.util import atomic, untrusted
from pcgkit.util.redact import redact_text, redact_tree, secret_values
from pcgkit.util.sanitize import clean_text, clean_tree
from pcgkit.util.untrusted import UntrustedValueError
from pcgkit.values.signature import Signature
from pcgkit.values.verdict import Verdict

RESULTS_SCHEMA = "pcgkit.results/1"
JUNIT_RESULT_PROPERTY = "pcgkit.result"  # the whole CaseResult as JSON, for lossless merging


@dataclasses.dataclass(frozen=True)
class CaseResult:
    mode: str
    variant: str  # "sim-sm120" | "gpu" | "sm120"
    verdict: Verdict
    reason: str
    device: dict[str, Any]  # Device.to_dict(): name, compute_capability, simulated, label
    versions: dict[str, str | None]
    duration_s: float
    signature: Signature | None = None
    expected: str | None = None  # the baseline verdict this result was compared with
    evidence: dict[str, Any] = dataclasses.field(default_factory=dict)
    nodeid: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", redact_text(clean_text(str(self.reason or ""))))
        object.__setattr__(self, "evidence", redact_tree(clean_tree(self.evidence or {})))

    @property
    def simulated(self) -> bool:
        return bool(self.device.get("simulated"))

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["verdict"] = self.verdict.value
        data["signature"] = self.signature.to_dict() if self.signature else None
        data["simulated"] = self.simulated
        return redact_tree(clean_tree(data))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaseResult:
        if not isinstance(data, dict):
            raise UntrustedValueError(f"result: expected an object, got {type(data).__name__}")
        return cls(
            # the case and target ids become report columns and JUnit names: one safe-id rule
            mode=untrusted.safe_id(data.get("mode"), "result case id"),
            variant=untrusted.safe_id(data.get("variant"), "result target id"),
            verdict=Verdict(data["verdict"]),
            reason=untrusted.text(data, "reason", "result"),
            device=untrusted.mapping(data, "device", "result"),
            versions=untrusted.str_map(data.get("versions"), "result.versions"),
            duration_s=untrusted.finite_number(data, "duration_s", "result"),
            expected=untrusted.optional_text(data, "expected", "result"),
            evidence=untrusted.mapping(data, "evidence", "result"),
            nodeid=untrusted.text(data, "nodeid", "result"),
            signature=Signature.from_dict(data["signature"]) if data.get("signature") else None,
        )

    def _run_check_properties(self) -> list[tuple[str, str]]:
        """Whether the call path ran right (pcgkit.fp4.argaudit) and whether numbers were checked, for JUnit
        readers who never open the JSON: what `fixed` / `traces-but-fails` rest on."""
        props = []
        audit = self.evidence.get("argument_audit")
        if isinstance(audit, dict):
            findings = audit.get("findings") or []
            props.append(("pcgkit.argument_audit", "passed" if audit.get("passed") else
                          "; ".join(str(f) for f in findings[:3]) or "inconclusive: no kernel boundary reached"))
        numbers = self.evidence.get("numbers")
        if isinstance(numbers, dict):
            props.append(("pcgkit.numbers", "checked against pcgkit/fp4/reference.py" if numbers.get("checked")
                          else f"{numbers.get('status', 'not checked')} (found {numbers.get('found', '?')})"))
        return props

    def junit_properties(self) -> list[tuple[str, str]]:
        """Flat properties for JUnit readers, plus the full JSON for pcgkit's own merge."""
        sig = self.signature
        props = [
            ("pcgkit.verdict", self.verdict.value),
            ("pcgkit.mode", self.mode),
            ("pcgkit.variant", self.variant),
            ("pcgkit.reason", self.reason),
            ("pcgkit.expected", self.expected or ""),
            ("pcgkit.device", self.device.get("label", "")),
            ("pcgkit.simulated", "true" if self.simulated else "false"),
            ("pcgkit.duration_s", f"{self.duration_s:.3f}"),
        ]
        props += [(f"pcgkit.version.{name}", value or "not installed") for name, value in self.versions.items()]
        if sig is not None:
            props += [
                ("pcgkit.signature.exception_type", sig.exception_type),
                ("pcgkit.signature.graph_break_id", sig.graph_break_id or ""),
                ("pcgkit.signature.message_head", sig.message_head),
                ("pcgkit.signature.innermost_library_frame", str(sig.innermost_library_frame or "")),
            ]
        props += self._run_check_properties()
        props.append((JUNIT_RESULT_PROPERTY, json.dumps(self.to_dict(), sort_keys=True)))
        return [(name, redact_text(clean_text(value))) for name, value in props]


def write_results(path: Path, results: Iterable[CaseResult], environment: dict[str, Any]) -> None:
    write_result_dicts(path, [result_dict(r) for r in sort_results(results)], environment)


def sort_results(results: Iterable[CaseResult]) -> list[CaseResult]:
    """The order a results file lists them in: by mode, then target (stable)."""
    return sorted(results, key=lambda r: (r.mode, r.variant))


def result_dict(result: CaseResult) -> dict[str, Any]:
    """One result as a results file holds it, redacted as atomic.write_json would (made once, written many times)."""
    return redact_tree(result.to_dict(), secret_values(dict(os.environ)))


def write_result_dicts(path: Path, results: list[dict[str, Any]], environment: dict[str, Any]) -> None:
    """A results file from result_dict()s in sort_results order: the same bytes write_results writes, but a run
    that rewrites the file after every case (pcgkit.plugin) no longer serialises and redacts every result each time."""
    head = redact_tree({
        "schema": RESULTS_SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "environment": environment,
    }, secret_values(dict(os.environ)))
    atomic.write_text(path, json.dumps({**head, "results": results}, indent=2, sort_keys=True) + "\n", redact=False)


class ResultsFileError(UsageError, ValueError):
    """A file given as a results.json that is not one: a usage error (exit 2, one line), never an internal error."""


def read_results(path: Path) -> tuple[dict[str, Any], list[CaseResult]]:
    """A results.json as typed results; ResultsFileError (one line, the path named) when it is not one."""
    try:
        data = atomic.parse_json(atomic.read_user_bytes(path, "results file", allow_pipe=True), str(path))
    except (UsageError, ValueError) as exc:
        raise ResultsFileError(str(exc)) from None
    if isinstance(data, dict) and str(data.get("schema", "")).startswith("pcgkit.compat/"):
        raise ResultsFileError(f"{path}: a matrix compat.json, not a results.json: pass the cells' results files "
                               "(REPORTS/matrix/cells/ID/results.json), or `pcgkit report --compat` for a compat.json")
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ResultsFileError(f"{path}: not a {RESULTS_SCHEMA} file (expected an object with a 'results' list)")
    if data.get("schema") != RESULTS_SCHEMA:
        raise ResultsFileError(f"{path}: schema {data.get('schema')!r}, expected {RESULTS_SCHEMA!r}")
    try:
        results = [CaseResult.from_dict(r) for r in data["results"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultsFileError(f"{path}: a result is malformed ({type(exc).__name__}: {exc})") from None
    environment = data.get("environment")
    return environment if isinstance(environment, dict) else {}, results
