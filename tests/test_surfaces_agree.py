"""The maintainer-facing surfaces agree with each other and with the matrix, release by release (issue 44).

compat.md, the SGLang issue draft and the dashboard, rendered from the committed matrix sample, each say for every
SGLang release whether it is affected and where it is fixed (read back by tests/surface_extract.py); the certificate
page calls torch.ops.flashinfer.fp4_quantize compile-safe on a FlashInfer release only where the matrix ran that call
with a caller's arguments there (it called it compile-safe on 0.6.12-0.7.0, where the matrix's argument audit fails).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pcgkit.report.certificate_page import load_certificates
from pcgkit.report.model import from_json
from pcgkit.report.writers import publish
from pcgkit.values.runcheck import says_call_path_ran

sys.path.insert(0, str(Path(__file__).parent))
from surface_extract import (  # noqa: E402
    extract_certificate_page,
    extract_compat_md,
    extract_dashboard,
    extract_issue_draft,
)

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "reports" / "samples" / "matrix-2026-12-01"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> dict[str, str]:
    """compat.md (with its sidecar), the dashboard and the certificate page as `pcgkit report` writes them today from
    the committed sample, and the committed SGLang draft (tests/test_issuedraft.py pins it to what the command renders)."""
    out = tmp_path_factory.mktemp("site")
    report = from_json(json.loads((SAMPLE / "compat.json").read_text()))
    publish(report, out, names=("markdown", "dashboard"), certificates=load_certificates())
    sidecar = out / "compat-cells.md"
    return {"compat": (out / "compat.md").read_text() + (sidecar.read_text() if sidecar.exists() else ""),
            "dashboard": (out / "index.html").read_text(), "certificate": (out / "certificate.html").read_text(),
            "draft": (ROOT / "reports" / "samples" / "issue-sglang.md").read_text()}


def _matrix_affected(release: str) -> str:
    report = from_json(json.loads((SAMPLE / "compat.json").read_text()))
    verdicts = {e.verdict for c in report.cells
                if c.axis_value("sglang") == release and (e := c.entries.get("sglang-compile-sm120")) is not None}
    return "yes" if verdicts & {"reproduced", "drifted"} else "no" if "fixed" in verdicts else "unknown"


def _releases() -> list[str]:
    return list(json.loads((SAMPLE / "compat.json").read_text())["releases"]["sglang"])


@pytest.mark.parametrize("release", _releases())
def test_compat_md_the_draft_and_the_dashboard_say_the_same_for_each_release(site, release):
    """Affected (as the matrix measured it, 'unknown' where it has no verdict) and fixed-in agree on every surface."""
    said = {"compat.md": extract_compat_md(site["compat"], release),
            "issue draft": extract_issue_draft(site["draft"], release),
            "dashboard": extract_dashboard(site["dashboard"], release)}
    matrix = _matrix_affected(release)
    for surface, answer in said.items():
        assert answer["affected"] == matrix, f"{release}: {surface} says affected={answer['affected']}, matrix {matrix}"
    fixed = {surface: answer["fixed in"] for surface, answer in said.items()}
    assert len(set(fixed.values())) == 1 and all(fixed.values()), f"{release}: fixed in disagrees: {fixed}"


def test_the_certificate_page_calls_the_op_safe_only_where_the_matrix_ran_it(site):
    """For every committed SM120 certificate, the op's status on the page matches the matrix's fix-upstream-op for that
    release: compile-safe only with its call path run there; traces-but-fails with the argument audit on 0.6.12 and
    0.7.0; a release without such a run is not called safe."""
    report = from_json(json.loads((SAMPLE / "compat.json").read_text()))
    certs = [c for c in load_certificates() if c["arch"] == "sm120"]
    assert {c["flashinfer"] for c in certs} >= {"0.6.12", "0.7.0", "0.7.4"}
    for cert in certs:
        said = extract_certificate_page(site["certificate"], cert["flashinfer"])
        entries = [e for c in report.cells if c.axis_value("flashinfer-python") == cert["flashinfer"]
                   and (e := c.entries.get("fix-upstream-op")) is not None]
        ran = any(e.verdict == "fixed" and says_call_path_ran(e.reason) for e in entries)
        fails = any(e.verdict == "traces-but-fails" for e in entries)
        if said["safe call"] == "not on the page":
            continue  # the release registers no such op
        assert (said["safe call"] == "compile-safe") == (ran and not fails), (cert["flashinfer"], said)
        if fails:
            assert said["safe call"] == "traces-but-fails" and "argument audit" in said["matrix"], said
    for release in ("0.6.12", "0.7.0"):
        assert extract_certificate_page(site["certificate"], release)["safe call"] == "traces-but-fails"
    assert extract_certificate_page(site["certificate"], "0.7.4")["safe call"] == "compile-safe"


def test_the_committed_certificate_page_and_compat_md_say_it_too():
    """The committed sample's certificate page and compat.md section (re-rendered) carry the matrix's result."""
    page = (SAMPLE / "certificate.html").read_text()
    assert extract_certificate_page(page, "0.6.12")["safe call"] == "traces-but-fails"
    assert extract_certificate_page(page, "0.7.2.post1")["safe call"] == "not-judged"


@pytest.mark.parametrize("release", _releases())
def test_compat_md_says_what_the_answer_model_says_to_pass(site, release):
    """compat.md's per-release table gives the answer model's 'pass first' and 'turn off' for every release (it had
    composed its own table, headed 'not run by the kit; cost not measured' beside measured breakable figures)."""
    from pcgkit.advice import Versions, advise, load_evidence, render

    answer = advise(Versions(sglang=release), "sm120", load_evidence())
    said = extract_compat_md(site["compat"], release)
    assert (said.get("pass first"), said.get("turn off")) == (render.pass_words(answer), render.off_words(answer)), release
    assert "cost not measured" not in site["compat"]
