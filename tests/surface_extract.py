"""What each maintainer-facing surface says, read back from its rendered text (for the agreement checks: this
branch's tests/test_surfaces_agree.py and the answer model's tests/test_agreement.py). Pure: text in, answers out.

Questions use the answer model's labels (pcgkit.advice.render.QUESTIONS): "affected" ("yes" / "no" / "unknown"),
"fixed in" (the first SGLang release measured fixed, or ""), "safe call" (the status the page gives
torch.ops.flashinfer.fp4_quantize for a FlashInfer release: "compile-safe", "traces-but-fails", "not-judged", ...).
- extract_compat_md(text, release): compat.md (its SGLang section, its per-release "what to pass" table: "pass first",
  "turn off", and its verdict grid; the grid may be in the sidecar: pass compat.md + compat-cells.md joined);
- extract_issue_draft(text, release): the SGLang issue draft, above its fold;
- extract_dashboard(html, release): the dashboard's answers table and grid;
- extract_certificate_page(html, flashinfer, arch="sm120"): the certificate page's row of the op.
"""

from __future__ import annotations

import html as _html
import re

from pcgkit.util.ranges import version_key

SGLANG_CASE = "sglang-compile-sm120"
OP = "torch.ops.flashinfer.fp4_quantize"
_RANGE = re.compile(r"(\d[\w.]*)\s*[–-]\s*(\d[\w.]*)")


def _in(release: str, span: str) -> bool:
    """Whether `release` is one of the releases a range text names ('0.5.4.post3–0.5.11', '0.5.12', a list)."""
    for part in (p.strip() for p in re.split(r",\s*", span)):
        m = _RANGE.fullmatch(part.split(" ")[0])
        if m and version_key(m[1]) <= version_key(release) <= version_key(m[2]):
            return True
        if part.split(" ")[0] == release:
            return True
    return False


def _affected(release: str, fails: str, fixed: str) -> str:
    return "yes" if fails and _in(release, fails) else "no" if fixed and _in(release, fixed) else "unknown"


def extract_compat_md(text: str, release: str) -> dict[str, str]:
    """compat.md's answer for an SGLang release: its grid row's sglang-compile-sm120 symbol, and the SGLang section's
    'fixed from' for that case."""
    line = next((ln for ln in text.splitlines() if ln.startswith(f"- **{SGLANG_CASE}**")), "")
    fixed = re.search(r"fixed from ([\w.]+)", line)
    head = next((ln for ln in text.splitlines() if ln.startswith("| cell |") and SGLANG_CASE in ln), "")
    column = [c.strip() for c in head.strip("|").split("|")].index(SGLANG_CASE) if head else -1
    symbols = set()
    for row in text.splitlines():
        cells = [c.strip() for c in row.strip("|").split("|")]
        if head and row.startswith("| `") and len(cells) > column and cells[1] == release:
            symbols.add(cells[column][:1])
    affected = "yes" if "✗" in symbols else "no" if "✓" in symbols else "unknown"
    said = {"affected": affected, "fixed in": fixed[1] if fixed else ""}
    for row in text.split("**What to pass, per SGLang release**", 1)[-1].splitlines()[3:]:
        cells = [c.strip() for c in row.strip("|").split("|")] if row.startswith("| ") else []
        if len(cells) == 3 and _in(release, cells[0].split(" (")[0].replace("–", "-")):
            said.update({"pass first": cells[1], "turn off": cells[2]})
            break
    return said


def extract_issue_draft(text: str, release: str) -> dict[str, str]:
    """The SGLang draft's answer, from its 'where it fails and where it is fixed' line above the fold."""
    above = text.split("<details>", 1)[0]
    m = re.search(r"fails on SGLang ([^;(]*?)\s*(?:\(|;).*?traces cleanly on SGLang (.+?)\.?$", above, re.MULTILINE)
    if not m:
        return {"affected": "unknown", "fixed in": ""}
    fails, fixed = m[1], m[2]
    first = _RANGE.match(fixed)
    return {"affected": _affected(release, fails, fixed), "fixed in": first[1] if first else fixed.split(",")[0].strip()}


def extract_dashboard(page: str, release: str) -> dict[str, str]:
    """The dashboard's answer: its grid cell for the release's own row, and the answers table's first fixed release."""
    text = _html.unescape(page)
    row = re.search(rf'<tr[^>]*data-sglang="{re.escape(release)}"[^>]*>.*?</tr>', text, re.DOTALL)
    verdict = re.search(rf'data-case="{SGLANG_CASE}" data-verdict="([\w-]+)"', row[0]) if row else None
    answer = re.search(rf'<tr data-case="{SGLANG_CASE}">.*?</tr>', text, re.DOTALL)
    fixed = re.search(r"★ SGLang ([\w.]+)", answer[0]) if answer else None
    affected = {"reproduced": "yes", "drifted": "yes", "fixed": "no"}.get(verdict[1] if verdict else "", "unknown")
    return {"affected": affected, "fixed in": fixed[1] if fixed else ""}


def extract_certificate_page(page: str, flashinfer: str, arch: str = "sm120") -> dict[str, str]:
    """The certificate page's status for the op on a FlashInfer release ('compile-safe' for opaque-op), with what the
    row says the matrix found ('matrix')."""
    text = _html.unescape(page)
    block = re.search(rf"<summary>flashinfer {re.escape(flashinfer)} \({arch}, [a-z]+\)</summary>(.*?)</details>", text,
                      re.DOTALL)
    row = re.search(rf"<li><code>{re.escape(OP)}</code>: ([\w-]+)(.*?)</li>", block[1], re.DOTALL) if block else None
    if row is None:
        return {"safe call": "not on the page", "matrix": ""}
    status = "compile-safe" if row[1] in ("opaque-op", "traces-and-runs") else row[1]
    matrix = re.search(r"<b>(the matrix[^<]*)</b>", row[2])
    return {"safe call": status, "matrix": matrix[1] if matrix else ""}
