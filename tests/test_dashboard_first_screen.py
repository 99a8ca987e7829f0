"""The dashboard's first screen and every generated page, on the committed matrix sample (issue 44): the grid comes
first (the answers table, cannot-run cells and notes follow it), cannot-run cells with one reason are one line, each
question names the architecture its case judges, and no page carries a folder of the machine that made it."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pcgkit.report.certificate_page import load_certificates
from pcgkit.report.model import from_json
from pcgkit.report.writers import publish

SAMPLE = Path(__file__).resolve().parents[1] / "reports" / "samples" / "matrix-2026-12-01"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# A folder of the machine: an absolute POSIX path under a top-level folder a machine has, or a Windows drive.
MACHINE_PATH = re.compile(r"(?<![\w.:/-])/(?:home|root|tmp|work|Users|var|opt|srv|mnt|private|usr/local)/[\w.-]"
                          r"|\b[A-Z]:\\\\[\w.-]")


def _site(tmp_path: Path, report=None) -> Path:
    """Every page `pcgkit report` writes for the committed sample (or `report`), into an absolute folder."""
    out = tmp_path / "site"
    publish(report or from_json(json.loads((SAMPLE / "compat.json").read_text())), out,
            names=("markdown", "dashboard", "step-summary"), certificates=load_certificates())
    return out


def test_the_grid_comes_before_the_answers_and_the_cannot_run_cells(tmp_path):
    """In the page, the grid precedes the answers table, the cannot-run list and the simulation note (the first
    screen shows the grid); above it only the title, the counts, the legend and the filters."""
    page = (_site(tmp_path) / "index.html").read_text()
    grid = page.index('id="grid-wrap"')
    for after in ('id="answers-first"', 'id="cannot-run"', 'id="simulation-note"', 'href="certificate.html"'):
        assert page.index(after) > grid, after
    above = re.sub(r"<style>.*?</style>", "", page[:grid], flags=re.DOTALL)
    assert re.findall(r'<(?:ul|table|p class="note")', above) == []


def test_cannot_run_cells_with_one_reason_are_one_line(tmp_path):
    """The sample's five FlashInfer 0.4.x cells share one measured reason: one line naming the five."""
    page = (_site(tmp_path) / "index.html").read_text()
    items = re.findall(r"<li>(.*?)</li>", page.split('id="cannot-run"', 1)[1].split("</ul>", 1)[0])
    assert len(items) == 1 and "5 cells" in items[0]
    assert all(f"sglang-{v}<" in items[0] for v in ("0.5.3.post2", "0.5.3.post3", "0.5.4", "0.5.4.post1", "0.5.4.post2"))


def test_each_question_names_the_architecture_its_case_judges(tmp_path):
    """sglang-compile-sm90 simulates SM90: its question is not an SM120 one (it read 'Does SGLang crash on SM120
    (sglang-compile-sm90)?')."""
    page = html.unescape((_site(tmp_path) / "index.html").read_text())
    questions = dict((case, q) for q, case in re.findall(r"<b>(Does [^<]*)</b> <span class=\"mono\">([\w-]+)", page))
    assert questions["sglang-compile-sm90"] == "Does SGLang crash on SM90?"
    assert questions["sglang-compile-sm120"] == "Does SGLang crash on SM120?"
    assert questions["mode1"] == "Does FlashInfer crash on SM120?"
    assert questions["mode4"].startswith("Does PyTorch still crash on SM120 with the workaround: wrap")
    row = re.search(r'<tr data-case="sglang-compile-sm120">(.*?)</tr>', page, re.DOTALL)[1]
    assert "SGLang 0.5.4.post3 – 0.5.11 (15 releases measured)" in row and "★ SGLang 0.5.12" in row


def test_no_generated_page_carries_a_machine_folder(tmp_path):
    """Every page and sidecar written from a report whose cells were read from an absolute folder of this machine:
    no absolute machine path, and not the folder it was written to (the drill-down showed the making machine's)."""
    import dataclasses

    report = from_json(json.loads((SAMPLE / "compat.json").read_text()))
    where = str(tmp_path / "home-of-the-maker" / "matrix" / "cells")
    report = dataclasses.replace(report, cells=tuple(
        dataclasses.replace(c, source={"from": where, "member": f"{c.id}/cell.json"}) for c in report.cells))
    site = _site(tmp_path, report)
    pages = [p for p in site.rglob("*") if p.is_file() and p.suffix in (".html", ".md", ".js")]
    assert len(pages) > 40  # the pages and every cell's drill-down sidecar
    for page in pages:
        text = page.read_text()
        assert str(tmp_path) not in text and "home-of-the-maker" not in text, page.name
        assert not MACHINE_PATH.search(text), (page.name, MACHINE_PATH.search(text))
    assert "cells: fi-0.5.0/cell.json" in next(p for p in pages if p.name == "compat-cells.md").read_text()


def test_the_scan_finds_machine_folders():
    """The path pattern the scan uses catches the paths it is meant to (a scan that cannot fail proves nothing)."""
    for path in ("/home/ann/pcgkit/reports", "read from /tmp/x/cells", '"/work/h44c/reports"', "C:\\\\Users\\\\ann"):
        assert MACHINE_PATH.search(path), path
    for fine in ("flashinfer/jit/core.py:169", "https://github.com/a/b", "reports/samples/x", "0.5.3/0.5.4"):
        assert not MACHINE_PATH.search(fine), fine


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"),
                    reason="headless Chromium not installed (apt-get install -y chromium)")
def test_the_first_screen_shows_the_grid(tmp_path):
    """At 1366x768 in Chromium the grid's first rows are on the first screen, and the cannot-run cells take one line."""
    assert CHROMIUM, "CI=true but Chromium is not installed (.ci/run installs it with apt-get)"
    page = _site(tmp_path) / "index.html"
    probe = """<script>window.addEventListener("load", function () {
      const grid = document.getElementById("grid-wrap").getBoundingClientRect();
      const rows = Array.from(document.querySelectorAll("tr.cell-row")).filter(r => r.getBoundingClientRect().top < innerHeight);
      const out = document.createElement("pre"); out.id = "probe";
      out.textContent = JSON.stringify({gridTop: grid.top, rowsOnScreen: rows.length, height: innerHeight,
        cannotRun: document.querySelectorAll("#cannot-run li").length});
      document.body.appendChild(out);});</script></body>"""
    page.write_text(page.read_text().replace("</body>", probe))
    done = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--window-size=1366,768", "--virtual-time-budget=3000", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=False)
    match = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.DOTALL)
    assert match, f"probe did not run; chromium said: {done.stderr[-1500:]}"
    seen = json.loads(html.unescape(match.group(1)))
    assert seen["gridTop"] < seen["height"] / 3 and seen["rowsOnScreen"] >= 10 and seen["cannotRun"] == 1, seen
