"""Report scale on synthetic data: 500 cells x 15 cases x 100 runs of history (defaults).

Measures the build (typed report with attribution, compat.md, compat.json, the dashboard and its
sidecars), the page weight, and, with Chromium on PATH, how long the page takes to become
interactive from file:// and to open one cell's evidence. Targets: build < 5 s, interactive < 2 s.

    python benchmarks/bench_report_scale.py [--cells 500 --cases 15 --runs 100] [--json out.json]
        [--previous reports/samples/bench-report-scale-2026-12-01/bench-report-scale.json]

With --previous (an earlier run's --json file), each figure is printed beside the earlier one with the
ratio now/before, so a change to the report layer states what it bought.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from pcgkit.report.dashboard import build_page, write_page
from pcgkit.report.history import RunSummary, with_current
from pcgkit.report.markdown import split_markdown
from pcgkit.report.model import CaseColumn, CellReport, Entry, assemble, to_json
from pcgkit.report.upstream import load_upstream

VERDICTS = ("reproduced", "fixed", "drifted", "not-applicable", "skipped")
FRAMES = [f"flashinfer/jit/core.py:{169 + i}:register" for i in range(5)]


def synthetic(cells: int, cases: int, runs: int, seed: int = 0):
    rng = random.Random(seed)
    columns = tuple(CaseColumn(f"case{i:02d}", "failure" if i < 5 else "fix", f"synthetic case {i}") for i in range(cases))
    reports = []
    for c in range(cells):
        axes = {"sglang": rng.choice([None, "0.5.8", "0.5.12", "0.5.23"]), "flashinfer-python": f"0.6.{c % 20}",
                "torch": rng.choice(["2.8.0", "2.9.1", "2.11.0", "2.14.1"]), "python": "3.12"}
        entries = {}
        for k, col in enumerate(columns):
            verdict = "fixed" if k >= 5 and axes["flashinfer-python"] >= "0.6.12" else rng.choice(VERDICTS[:2])
            entries[col.id] = Entry(verdict, "gb0007 core.py:169:register", "a reason " * 8, "gb0007", rng.choice(FRAMES),
                                    "Attempted to call function marked as skipped", tuple(FRAMES * 2), "sim-sm120", True,
                                    "simulated SM120", 0.5)
        reports.append(CellReport(f"cell-{c:03d}", f"synthetic {c}", "ran", axes, dict(axes), entries,
                                  log_tail="log line\n" * 40, simulated=True, device="simulated SM120"))
    history = []
    for r in range(runs - 1):
        verdicts = {cell.id: {case: (e.verdict if rng.random() > 0.02 else "drifted") for case, e in cell.entries.items()}
                    for cell in reports}
        history.append(RunSummary(f"2026-01-{1 + r // 24:02d}T{r % 24:02d}:00:00+00:00", "0", verdicts, {}))
    return columns, reports, history


PROBE = """<script>
window.addEventListener("load", function () {
  const t0 = performance.now();
  document.querySelector('button.cell-link[data-i="250"]').click();
  (function wait() {
    if (document.querySelector('#drill tr[data-case]')) {
      const out = document.createElement("pre"); out.id = "probe";
      out.textContent = JSON.stringify({interactive_ms: t0, drill_ms: performance.now() - t0});
      document.body.appendChild(out);
    } else { setTimeout(wait, 5); }
  })();
});
</script></body>"""


def browser_timing(page: Path) -> dict | None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return None
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>", PROBE))
    done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1366,900",
                           "--virtual-time-budget=20000", "--dump-dom", probe.as_uri()],
                          capture_output=True, text=True, timeout=180, check=False)
    match = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout)
    return json.loads(match.group(1).replace("&quot;", '"')) if match else {"error": done.stderr[-300:]}


def flat(result: dict) -> dict[str, float]:
    """The comparable figures of one result: timings, page weight, browser times."""
    out = {}
    for group in ("timings", "weight", "browser"):
        for key, value in (result.get(group) or {}).items():
            if isinstance(value, (int, float)):
                out[f"{group}.{key}"] = float(value)
    return out


def side_by_side(previous: dict, now: dict) -> str:
    """A table: figure, before, now, now/before (lower is better for every figure here)."""
    before, after = flat(previous), flat(now)
    lines = [f"{'figure':<36} {'before':>14} {'now':>14} {'now/before':>10}"]
    for key in [k for k in before if k in after]:
        ratio = after[key] / before[key] if before[key] else float("nan")
        lines.append(f"{key:<36} {before[key]:>14.3f} {after[key]:>14.3f} {ratio:>10.3f}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=500)
    parser.add_argument("--cases", type=int, default=15)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--json", help="write the measurements here")
    parser.add_argument("--previous", help="an earlier --json file: print each figure beside it, with the ratio")
    args = parser.parse_args()
    columns, cells, history = synthetic(args.cells, args.cases, args.runs)
    upstream = load_upstream()
    timings = {}
    t = time.perf_counter()
    report = assemble("2026-12-01T00:00:00+00:00", "0", {}, columns, {}, cells)
    timings["model_and_attribution_s"] = time.perf_counter() - t
    t = time.perf_counter()
    markdown, _ = split_markdown(report, upstream)  # compat.md as written: within its budget
    timings["markdown_s"] = time.perf_counter() - t
    t = time.perf_counter()
    document = json.dumps(to_json(report))
    timings["json_s"] = time.perf_counter() - t
    t = time.perf_counter()
    page = build_page(report, with_current(history, report), upstream)
    timings["dashboard_s"] = time.perf_counter() - t
    timings["build_total_s"] = sum(timings.values())
    with tempfile.TemporaryDirectory() as tmp:
        path = write_page(page, Path(tmp))
        sizes = [len(s.encode()) for s in page.sidecars.values()]
        weight = {"index_html_bytes": path.stat().st_size, "sidecar_max_bytes": max(sizes),
                  "sidecars_total_bytes": sum(sizes), "compat_md_bytes": len(markdown.encode()),
                  "compat_json_bytes": len(document.encode())}
        browser = browser_timing(path)
    result = {"shape": vars(args) | {"json": None, "previous": None}, "timings": timings, "weight": weight, "browser": browser,
              "targets": {"build_s": 5.0, "interactive_s": 2.0}}
    print(json.dumps(result, indent=2))
    if args.previous:
        print(side_by_side(json.loads(Path(args.previous).read_text()), result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
