"""`pcgkit repro`: the exported script is standalone, pinned, faithful to the kit's sources, and reproduces.

How "no pcgkit needed" is proven (test_exported_mode1_reproduces_without_pcgkit): the script runs
in a *fresh* venv made from the reference venv's base interpreter (`python -m venv --without-pip`,
~1 s). Its site-packages gets one .pth line pointing at the reference venv's site-packages, so
torch 2.9.1 and flashinfer-python 0.6.1 are the reference cell's without a 7 GB reinstall; a path
listed in a .pth is not itself scanned for .pth files, so the editable-install hook that makes
pcgkit importable in the reference venv never runs. The script runs with -I (no PYTHONPATH, no
user site, no cwd on sys.path) from a folder outside the repository, and the test first asserts
that `import pcgkit` fails in exactly that interpreter.
"""

from __future__ import annotations

import ast
import concurrent.futures
import inspect
import json
import os
import re
import shutil
import sys
import sysconfig
from pathlib import Path

import pytest

from pcgkit.bugreport.repro import plan_export, reference_pins, render_script, write_export
from pcgkit.cli import main
from pcgkit.harness import simulate
from pcgkit.util import proc
from pcgkit.verdicts.modes import MODES

# What an exported script prints last: "SIGNATURE: {json}" (repro/script.py.j2).
SIGNATURE_LINE = re.compile(r"^SIGNATURE: (?P<json>\{.*\})$", re.MULTILINE)


def parse_signature_line(output: str) -> dict | None:
    """The JSON of an exported script's last SIGNATURE line; None when it printed none."""
    matches = SIGNATURE_LINE.findall(output)
    return json.loads(matches[-1]) if matches else None


REPO_ROOT = Path(__file__).resolve().parent.parent
SAMPLE_RESULTS = REPO_ROOT / "reports" / "samples" / "results.json"
# An exported script must fit in a GitHub issue body (65,536 characters) with room to spare.
PASTEABLE_CHARS = 40_000


def _imported_modules(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("simulate_hw", [True, False], ids=["simulate", "real"])
@pytest.mark.parametrize("case", sorted(MODES))
def test_exported_script_is_standalone_and_pasteable(case, simulate_hw, tmp_path):
    """Every case exports to a script that imports no pcgkit, declares its pins and fits in an issue."""
    plan = plan_export(case, simulate_hw, None, None)
    script = render_script(plan)
    assert "pcgkit" not in _imported_modules(script)
    assert len(script) < PASTEABLE_CHARS
    header = script.split("# ///")[1]
    assert "torch==2.9.1" in header and "flashinfer-python==0.6.1" in header
    assert 'requires-python = "==3.12.*"' in header
    assert ("def simulated_sm120(" in script) is simulate_hw
    assert f"SIMULATE = {simulate_hw}" in script


@pytest.mark.parametrize("case", sorted(MODES))
def test_exported_script_defines_everything_at_import(case, tmp_path):
    """Loading each script's module level (no main) in a bare interpreter raises no NameError."""
    paths = write_export(plan_export(case, True, None, None), tmp_path)
    probe = (
        "import runpy, sys; ns = runpy.run_path(sys.argv[1], run_name='not_main'); "
        "missing = [n for n in ('main', 'reproduce', 'classify', 'simulated_sm120', 'trace') if n not in ns]; "
        "sys.exit(f'missing {missing}' if missing else 0)"
    )
    completed = proc.run([sys.executable, "-I", "-c", probe, paths[0]], cwd=tmp_path, timeout=60, echo=False)
    assert completed.ok, completed.output_tail


def test_shim_is_the_kits_own_code_verbatim():
    """The simulated-hardware shim in the script is pcgkit/harness/simulate.py's source, not a rewrite."""
    script = render_script(plan_export("mode1", True, None, None))
    for function in (simulate._answers, simulate.simulated_sm120):
        assert inspect.getsource(function) in script
    for module_name, attr in simulate.FLASHINFER_QUERIES:
        assert f'("{module_name}", "{attr}")' in script


def test_case_body_is_the_cases_own_reproduce_verbatim():
    """The script's reproduce() is cases/test_mode2_*.py's reproduce, byte for byte."""
    case_file = next((REPO_ROOT / "cases").glob("test_mode2_*.py"))
    tree = ast.parse(case_file.read_text())
    reproduce = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "reproduce")
    script = render_script(plan_export("mode2", True, None, None))
    assert ast.get_source_segment(case_file.read_text(), reproduce) in script


def test_pins_default_to_the_reference_cell_and_follow_results(tmp_path):
    """No --pins: fixtures/reference; with --results: the measured cell's versions."""
    assert reference_pins().requirements == ("torch==2.9.1", "flashinfer-python==0.6.1")
    results = json.loads(SAMPLE_RESULTS.read_text())
    for result in results["results"]:
        result["versions"] = {**result["versions"], "torch": "2.10.0", "python": "3.11.9"}
    (tmp_path / "results.json").write_text(json.dumps(results))
    plan = plan_export("mode1", True, None, tmp_path / "results.json")
    assert "torch==2.10.0" in plan.pins.requirements and plan.pins.python == "3.11"
    assert plan.measured is not None and plan.measured.mode == "mode1" and plan.measured.simulated


def test_readme_has_exact_commands_and_the_measured_expected_output(tmp_path):
    """The README carries venv, uv and docker commands and quotes the measured signature."""
    assert main(["repro", "mode1", "--results", str(SAMPLE_RESULTS), "--out", str(tmp_path)]) == 0
    readme = (tmp_path / "README.md").read_text()
    for command in ("python3.12 -m venv .venv", "pip install -r requirements.txt", "uv run", "docker run"):
        assert command in readme
    measured = next(
        r for r in json.loads(SAMPLE_RESULTS.read_text())["results"] if r["mode"] == "mode1" and r["simulated"]
    )
    assert measured["signature"]["innermost_library_frame"] in readme
    assert "Simulated SM120" in readme
    assert (tmp_path / "requirements.txt").read_text().splitlines()[1:] == ["torch==2.9.1", "flashinfer-python==0.6.1"]


def _fresh_venv_without_pcgkit(root: Path) -> Path:
    """A new venv from the reference venv's base interpreter that sees its packages but not pcgkit."""
    base = Path(sys._base_executable)
    proc.run([str(base), "-m", "venv", "--without-pip", str(root)], timeout=120, echo=False)
    python = root / "bin" / "python"
    site = root / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    assert site.is_dir(), f"venv layout changed: no {site}"
    reference_site = Path(sysconfig.get_paths()["purelib"])
    (site / "_reference_site_packages.pth").write_text(f"{reference_site}\n")
    for pth in reference_site.glob("*.pth"):  # keep the reference venv's other hooks, drop pcgkit's
        if "pcgkit" not in pth.name:
            shutil.copy(pth, site / pth.name)
    return python


@pytest.mark.slow  # a fresh venv with the exported pins, then the script: minutes
def test_exported_mode1_reproduces_without_pcgkit(tmp_path):
    """mode1 exported and run in a fresh venv without pcgkit gives the same signature as the kit's case."""
    export = tmp_path / "export"
    write_export(plan_export("mode1", True, None, None), export)
    python = _fresh_venv_without_pcgkit(tmp_path / "fresh")
    no_pcgkit = proc.run([python, "-I", "-c", "import pcgkit"], cwd=export, timeout=60, echo=False)
    assert not no_pcgkit.ok and "No module named 'pcgkit'" in no_pcgkit.output_tail
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}

    def run_export():
        return proc.run([python, "-I", "repro_mode1.py"], cwd=export, env=env, timeout=300,
                        log_path=tmp_path / "export.log", echo=False)

    def run_kit_case():
        argv = [sys.executable, "-m", "pytest", str(REPO_ROOT / "cases" / "test_mode1_nvcc_subprocess.py"),
                "-m", "cpu_sim", "-c", str(REPO_ROOT / "tox.ini"), "--rootdir", str(REPO_ROOT),
                "-p", "no:cacheprovider", "-q", f"--pcgkit-json={tmp_path / 'kit.json'}"]
        return proc.run(argv, cwd=REPO_ROOT, env=env, timeout=300, log_path=tmp_path / "kit.log", echo=False)

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        exported, _kit = pool.submit(run_export).result(), pool.submit(run_kit_case).result()
    output = (tmp_path / "export.log").read_text()
    assert exported.returncode == 1, output  # 1 = the bug reproduced
    line = parse_signature_line(output)
    assert line is not None and line["verdict"] == "reproduced" and line["simulated"] is True, output
    assert line["versions"]["torch"] == "2.9.1" and line["versions"]["flashinfer-python"] == "0.6.1"
    kit_result = json.loads((tmp_path / "kit.json").read_text())["results"][0]
    assert kit_result["verdict"] == "reproduced", (tmp_path / "kit.log").read_text()[-3000:]
    ours, theirs = line["signature"], kit_result["signature"]
    for key in ("exception_type", "graph_break_id", "innermost_library_frame", "skipped_callable", "message_head"):
        assert ours[key] == theirs[key], key

    def library_frames(sig):
        return [f for f in sig["frame_chain"] if f.startswith("flashinfer/")]

    assert library_frames(ours) == library_frames(theirs) and library_frames(ours)


def test_cell_option_exports_that_cells_pins(tmp_path):
    """--cell fi-0.7.4 pins exactly that cell's torch and flashinfer; an unknown cell is a clear error."""
    from pcgkit.cli import main

    assert main(["repro", "mode1", "--cell", "fi-0.7.4", "--reports", str(tmp_path), "--out", str(tmp_path / "x")]) == 0
    requirements = (tmp_path / "x" / "requirements.txt").read_text()
    assert "torch==2.14.1" in requirements and "flashinfer-python==0.7.4" in requirements
    assert "matrix cell fi-0.7.4" in requirements
    assert main(["repro", "mode1", "--cell", "no-such-cell", "--out", str(tmp_path / "y")]) == 2
