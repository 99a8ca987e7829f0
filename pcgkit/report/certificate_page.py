"""The certificate's dashboard page (reports/certificate.html) and its compat.md section, from the
committed certificates (fixtures/certificates/*.json, written by `bin/pcgkit sweep --certificate`).
Pure but for `load_certificates`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import jinja2

from pcgkit import resources
from pcgkit.advice.load import certificate_paths, read_certificate
from pcgkit.sweep.certificate import STATUSES, diffs, table

TEMPLATE = "certificate.html.j2"
PAGE = "certificate.html"


def load_certificates(folder: Path | None = None) -> tuple[dict, ...]:
    """Every certificate JSON in the folder (default fixtures/certificates/); other files ignored
    (pcgkit.advice.load reads them, for the dashboard as for the advice model)."""
    return tuple(read_certificate(path) for path in certificate_paths(folder))


def build_certificate_page(certificates: Sequence[Mapping]) -> str:
    """The page's HTML (autoescaped). Pure."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resources.templates_dir())), autoescape=True)
    return env.get_template(TEMPLATE).render(
        rows=table(certificates), diffs=diffs(certificates), certificates=certificates, statuses=STATUSES,
        any_simulated=any(c["simulated"] for c in certificates),
    )
