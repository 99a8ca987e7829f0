"""The docs: generated blocks follow the data, the site builds with no broken link, the README stays short and true."""

from __future__ import annotations

import functools
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pcgkit.cli import build_parser
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import RAN, CellOutcome
from pcgkit.report.compat import mode_entry
from pcgkit.values import targets
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import CaseResult

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
# Subcommands the docs name that land with another branch (issue 17: ci github); drop once merged.
PENDING_COMMANDS: set[str] = set()  # subcommands the docs may name before they land


@functools.cache
def _gen_facts():
    """docs/gen_facts.py, imported from its path (docs/ is not a package)."""
    spec = importlib.util.spec_from_file_location("pcgkit_docs_gen_facts", DOCS / "gen_facts.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses resolve their module through sys.modules
    spec.loader.exec_module(module)
    return module


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def _code_lines(text: str) -> list[str]:
    """Lines inside fenced code blocks, plus inline code spans: where commands are written."""
    fenced = [line for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S) for line in block.splitlines()]
    inline = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    return fenced + inline


def test_generated_blocks_match_the_data():
    """Every generated block (README box, switch table, exit codes, catalog, packages, samples) equals a fresh
    render, and every committed sample follows reports/samples/INDEX.toml (tests/test_samples.py: the rules)."""
    assert _gen_facts().stale() == []


def test_readme_box_gives_each_releases_switch_from_its_wheel():
    """For every affected SGLang release in range, the README box names what its own wheel's parser has: the off
    switch where piecewise is on by default, the enable switch (not to pass) where it is opt-in."""
    from pcgkit.advice import every_release, load_evidence

    box = README.read_text().split("<!-- generated:have-this-bug -->")[1].split("<!-- /generated:have-this-bug -->")[0]
    for answer in every_release(load_evidence()):
        if answer.state == "not affected":
            continue
        expected = answer.turn_off or answer.turn_on
        if expected:
            assert f"`{expected}`" in box, (answer.versions.sglang, expected)
    assert "bin/pcgkit triage" in box and "docs/answers.md" in box


def test_answers_page_states_where_it_is_fixed_from_the_advice_model():
    """docs/answers.md carries the advice model's where-fixed statements, each with its dated sources; the box says
    where it is fixed in one line, cited."""
    from pcgkit.advice import load_evidence
    from pcgkit.advice.summary import where_fixed

    page = (ROOT / "docs" / "answers.md").read_text()
    statements = where_fixed(load_evidence())
    assert statements
    for statement in statements:
        assert statement.text in page
    assert "[measured 2026-12-05]" in README.read_text()  # the cost line, cited with its measurement's date
    assert "2-3x" not in page.split("Upstream says, not measured by the kit:")[0]  # upstream's figure only as its claim


def test_upstream_renderers_follow_the_evidence():
    """fixed-in lines, the cost line and the threads are the advice model's statements over the evidence given."""
    from pcgkit.advice.values import Evidence, Measurement, UpstreamRead, Versions

    gen = _gen_facts()
    read = UpstreamRead("flashinfer-3081", "flashinfer", "pr", 3081, "https://github.com/flashinfer-ai/flashinfer/pull/3081",
                        "custom op", "merged", "2026-12-01", "api", closed_at="2026-05-22", first_release="0.6.12")
    cells = tuple(Measurement(f"fi-{v}", case, verdict, "sm120", True, Versions(None, v, "2.11.0"), "2026-11-29", "snap")
                  for v, case, verdict in (("0.6.3", "mode1", "reproduced"), ("0.6.12", "mode1", "reproduced"),
                                           ("0.6.12", "fix-upstream-op", "fixed")))
    evidence = Evidence(cells, (read,))
    [line] = gen.fixed_in_lines(evidence)
    assert "untraceable on every measured release (0.6.3 through 0.6.12)" in line
    assert "on 0.6.12 it traced, its call path not yet run by the kit" in line  # a `fixed` from before the run rule
    assert "flashinfer#3081 as of 2026-12-01" in line and line.endswith("simulated]")
    assert gen.cost_line(evidence) == "not measured"
    assert gen.known_threads(evidence) == [
        "[flashinfer#3081](https://github.com/flashinfer-ai/flashinfer/pull/3081) custom op: merged 2026-05-22, "
        "first released in 0.6.12 (as of 2026-12-01)"]
    assert gen.fixed_in_lines(Evidence()) == ["No measured cell in the kit's matrix snapshot yet."]


def test_stale_block_is_reported(tmp_path, monkeypatch):
    """--check's engine notices a hand edit inside a generated block (so the test above can fail)."""
    gen = _gen_facts()
    text = README.read_text().replace("| yes |", "| no |", 1)
    new, missing = gen.fill(text, gen.blocks()["README.md"])
    assert missing == [] and new != text and new == README.read_text()


def test_readme_is_short_with_exactly_the_two_quick_start_commands():
    """README under 100 lines; its quick start is `bin/pcgkit run` and `bin/pcgkit test`, nothing else."""
    text = README.read_text()
    assert len(text.splitlines()) < 100
    block = text.split("## Quick start", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["bin/pcgkit run", "bin/pcgkit test"]


def test_readme_relative_links_resolve():
    """Every relative link in README.md points at a file or folder of the checkout."""
    links = re.findall(r"\]\(([^)\s]+)\)", README.read_text())
    local = [link.split("#", 1)[0] for link in links if not re.match(r"[a-z]+:", link) and not link.startswith("#")]
    assert local, "README links to no docs page"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert missing == []


def test_one_spelling_of_the_command():
    """Commands are written `bin/pcgkit ...`; no `.venv/bin/pcgkit`, bare `pcgkit CMD`, or PyPI install of the kit."""
    subcommands = set(build_parser()._subparsers._group_actions[0].choices) | {"test"}
    for page in _pages():
        text = page.read_text()
        assert not re.search(r"pip install ['\"]?pcgkit", text), page
        for line in _code_lines(text):
            assert ".venv/bin/pcgkit" not in line, (page, line)
            for match in re.finditer(r"(?<![\w/.-])pcgkit (\w[\w-]*)", line):
                assert match.group(1) not in subcommands, f"{page.name}: bare `pcgkit {match.group(1)}` in {line!r}"


def test_every_command_the_docs_name_exists():
    """Each `bin/pcgkit CMD` in README and docs is a registered subcommand (or `test`, or one landing elsewhere), and
    each `bin/pcgkit lab CMD` one of the workshop's (lab.cli)."""
    from lab.cli import build_parser as lab_parser

    known = set(build_parser()._subparsers._group_actions[0].choices) | {"test", "lab"} | PENDING_COMMANDS
    named = {m for page in _pages() for m in re.findall(r"bin/pcgkit ([a-z][a-z0-9-]*)", page.read_text())}
    assert named and named <= known, sorted(named - known)
    lab_known = set(lab_parser()._subparsers._group_actions[0].choices)
    lab_named = {m for page in _pages() for m in re.findall(r"bin/pcgkit lab ([a-z][a-z0-9-]*)", page.read_text())}
    assert lab_named <= lab_known, sorted(lab_named - lab_known)


def _mkdocs(config_dir: Path, site: Path) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.fail("mkdocs is not installed: it is in the test extra (uv pip install -e '.[test]')")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=config_dir, capture_output=True, text=True, timeout=120)


def test_mkdocs_builds_strict(tmp_path):
    """`mkdocs build --strict` succeeds: every internal link and anchor resolves, every page is in the nav."""
    done = _mkdocs(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "exit-codes.html").is_file()


def test_mkdocs_strict_fails_on_a_broken_link(tmp_path):
    """The build really checks links: a page pointing at a missing page or anchor aborts it."""
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(DOCS, tmp_path / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    index = tmp_path / "docs" / "index.md"
    index.write_text(index.read_text() + "\n[gone](no-such-page.md) [moved](lab-notes.md#no-such-anchor)\n")
    done = _mkdocs(tmp_path, tmp_path / "site")
    assert done.returncode != 0 and "no-such-page.md" in done.stderr


def _result(variant: str, verdict: Verdict) -> CaseResult:
    simulated = targets.is_simulated(variant)
    return CaseResult("mode1", variant, verdict, f"{variant} said {verdict.value}",
                      {"label": variant, "simulated": simulated}, {}, 0.1)


def test_real_results_outrank_simulated_ones_in_the_report():
    """As exit-codes.md states: sm120, then gpu, then the hybrid, then simulated; the first that ran is the cell's entry."""
    sim, gpu, sm120 = (_result(t.id, v) for t, v in ((targets.SIM_SM120, Verdict.REPRODUCED),
                                                     (targets.GPU, Verdict.FIXED), (targets.SM120, Verdict.DRIFTED)))
    skipped_sm120 = _result(targets.SM120.id, Verdict.SKIPPED)

    def entry(*results):
        return mode_entry(CellOutcome(Cell(id="c"), RAN, 1.0, results=results), "mode1")

    assert entry(sim, gpu, sm120)["variant"] == "sm120"
    assert entry(sim, gpu)["verdict"] == "fixed" and entry(sim, gpu)["simulated"] is False
    assert entry(skipped_sm120, sim)["variant"] == "sim-sm120"  # a skip never hides a result that ran
    assert entry(skipped_sm120)["verdict"] == "skipped"
    page = (DOCS / "reference" / "exit-codes.md").read_text()
    assert ("`sm120` (real hardware), then `gpu` (real hardware), then `gpu-as-sm120` (real GPU, SGLang/FlashInfer/dynamo "
            "architecture queries answered as sm120), then `sim-sm120` (simulated)") in page
    hybrid = _result(targets.GPU_AS_SM120.id, Verdict.REPRODUCED)
    assert entry(sim, hybrid)["variant"] == "gpu-as-sm120" and entry(hybrid, gpu)["variant"] == "gpu"


def test_layout_page_lists_every_package_and_each_has_a_docstring():
    """Each package under pcgkit/ says what it is in __init__ and appears in the layout tree."""
    tree = (DOCS / "reference" / "layout.md").read_text().split("```", 2)[1]
    for package, doc in _gen_facts().package_rows():
        assert doc, f"{package}/__init__.py has no docstring"
        assert f"{package.rsplit('.', 1)[-1]}/" in tree or package == "pcgkit", package
