"""reports/index.html: a static dashboard rendered from compat.json (jinja2, autoescaped, no server)."""

from __future__ import annotations

from pathlib import Path

import jinja2

from pcgkit import resources
from pcgkit.report.summary import SIMULATION_NOTE
from pcgkit.util import atomic

TEMPLATES_DIR = resources.templates_dir()
TEMPLATE = "dashboard.html.j2"


def render_dashboard(compat: dict) -> str:
    """The page's HTML. Pure. Every string from a run (exception messages, logs) is escaped."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=True,  # exception messages are untrusted: '<script>' must render as text
        undefined=jinja2.ChainableUndefined,  # a cell that never ran has no installed versions
    )
    changed = {(cell_id, c["mode"]): c["previous"] for cell_id, items in compat.get("changes", {}).items() for c in items}
    return env.get_template(TEMPLATE).render(
        compat=compat,
        changed=changed,
        simulated=any(c.get("simulated") for c in compat["cells"]),
        simulation_note=SIMULATION_NOTE,
    )


def write_dashboard(compat: dict, reports_dir: Path) -> Path:
    # the compat dict is redacted already (CellOutcome); the writer's pass is defence in depth
    return atomic.write_text(reports_dir / "index.html", render_dashboard(compat))
