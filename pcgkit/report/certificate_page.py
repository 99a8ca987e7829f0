"""The certificate's dashboard page (reports/certificate.html) and its compat.md section, from the
committed certificates (fixtures/certificates/*.json, written by `bin/pcgkit sweep --certificate`).
Pure but for `load_certificates`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import jinja2

from pcgkit import resources
from pcgkit.sweep.certificate import SCHEMA, STATUSES, diffs, table, with_op_rule

TEMPLATE = "certificate.html.j2"
PAGE = "certificate.html"


def load_certificates(folder: Path | None = None) -> tuple[dict, ...]:
    """Every certificate JSON in the folder (default fixtures/certificates/); other files ignored."""
    folder = folder or resources.fixture("certificates")
    found = []
    for path in sorted(folder.glob("certificate-*.json")) if folder.is_dir() else ():
        data = json.loads(path.read_text())
        if data.get("schema") != SCHEMA:
            raise ValueError(f"{path}: schema {data.get('schema')!r}, expected {SCHEMA!r}")
        found.append(with_op_rule(data))  # opaque-op only where the op's fake executed (older rows too)
    return tuple(found)


def build_certificate_page(certificates: Sequence[Mapping]) -> str:
    """The page's HTML (autoescaped). Pure."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resources.templates_dir())), autoescape=True)
    return env.get_template(TEMPLATE).render(
        rows=table(certificates), diffs=diffs(certificates), certificates=certificates, statuses=STATUSES,
        any_simulated=any(c["simulated"] for c in certificates),
    )
