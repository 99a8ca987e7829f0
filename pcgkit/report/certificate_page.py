"""The certificate's dashboard page (reports/certificate.html) and its compat.md section, from the
committed certificates (fixtures/certificates/*.json, written by `bin/pcgkit sweep --certificate`).
Pure but for `load_certificates`.

A certificate judges a registered op with inputs derived from its spec and its fake: it can show the op traces as
one node, not that a caller's arguments reach the kernel as passed. Where the matrix runs the same call with a
caller's arguments, the page says what the matrix found for that release (`with_matrix_runs`): the op counts as
compile-safe only where the matrix's case is `fixed` with its call path run there; traces-but-fails where the
matrix's argument audit failed; not-judged where the matrix has only a trace or no cell of that release (issue 44:
the page called torch.ops.flashinfer.fp4_quantize opaque-op on 0.6.12-0.7.0, where it misbinds `enable_pdl`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import jinja2

from pcgkit import resources
from pcgkit.advice.load import certificate_paths, read_certificate
from pcgkit.report.model import CompatReport
from pcgkit.sweep.certificate import STATUSES, diffs, table
from pcgkit.values import targets
from pcgkit.values.runcheck import says_call_path_ran
from pcgkit.values.verdict import BROKEN, Verdict

TEMPLATE = "certificate.html.j2"
PAGE = "certificate.html"


def load_certificates(folder: Path | None = None) -> tuple[dict, ...]:
    """Every certificate JSON in the folder (default fixtures/certificates/); other files ignored
    (pcgkit.advice.load reads them, for the dashboard as for the advice model)."""
    return tuple(read_certificate(path) for path in certificate_paths(folder))


def _arch_of(variant: str) -> str | None:
    """The architecture a result's target judged: a simulated target's arch, the exact-SM120 target's, the hybrid's
    answered arch; None for any real GPU (its family is not in the id). Pure."""
    target = targets.BY_ID.get(variant)
    if target is None:
        return None
    return target.arch or target.answered_as or (targets.SM120.id if target is targets.SM120 else None)


def matrix_run(report: CompatReport, case: str, flashinfer: str, arch: str = "sm120") -> tuple[str, str]:
    """(status, what the matrix found) for `case` on FlashInfer `flashinfer` and `arch`, from every cell of that
    release whose result judged that arch: the statuses of the module's docstring, or `breaks` where a cell broke
    other than by traces-but-fails. Pure."""
    found = [(c.id, e) for c in report.cells if c.axis_value("flashinfer-python") == flashinfer
             and (e := c.entries.get(case)) is not None and e.verdict in (*BROKEN, Verdict.FIXED.value)
             and _arch_of(e.variant) == arch]
    failing = [(cell, e) for cell, e in found if e.verdict in BROKEN]
    ran = [(cell, e) for cell, e in found if e.verdict == Verdict.FIXED.value and says_call_path_ran(e.reason)]
    if failing:
        cell, e = failing[0]
        return Verdict.TRACES_BUT_FAILS.value if e.verdict == Verdict.TRACES_BUT_FAILS.value else "breaks", \
            f"the matrix's {case} ({e.verdict} in {', '.join(c for c, _ in failing)}): {e.reason}"
    if ran:
        return "opaque-op", f"the matrix's {case} ran it with a caller's arguments ({', '.join(c for c, _ in ran)}): {ran[0][1].reason}"
    if found:
        return "not-judged", (f"the matrix's {case} only traced it on this release ({', '.join(c for c, _ in found)}), its "
                              f"call path not run: not shown compile-safe")
    return "not-judged", (f"the matrix has no cell of FlashInfer {flashinfer} on {arch} that runs {case}: not shown "
                          f"compile-safe")


def with_matrix_runs(certificates: Sequence[Mapping], report: CompatReport | None) -> tuple[dict, ...]:
    """The certificates with each row the matrix also measures given the matrix's status for that
    release and a `matrix` note saying what it found; without a report, as they are. Pure."""
    from pcgkit.advice.model import FLASHINFER_OP_CASE

    if report is None:
        return tuple(dict(c) for c in certificates)
    measured = {"torch.ops.flashinfer.fp4_quantize": FLASHINFER_OP_CASE}
    out = []
    for cert in certificates:
        ops = []
        for row in cert.get("ops", ()):
            case = measured.get(row.get("target", ""))
            if case is not None and row.get("status") in ("opaque-op", "traces-and-runs"):
                status, note = matrix_run(report, case, cert["flashinfer"], cert["arch"])
                row = {**row, "status": status, "matrix": note}
            ops.append(row)
        out.append({**cert, "ops": ops})
    return tuple(out)


def build_certificate_page(certificates: Sequence[Mapping]) -> str:
    """The page's HTML (autoescaped). Pure."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resources.templates_dir())), autoescape=True)
    return env.get_template(TEMPLATE).render(
        rows=table(certificates), diffs=diffs(certificates), certificates=certificates, statuses=STATUSES,
        any_simulated=any(c["simulated"] for c in certificates),
    )
