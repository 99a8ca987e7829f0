"""The checkout has the design's layout, and tox.ini's pytest config agrees with the plugin."""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pcgkit.plugin import MARKERS

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "entry", ["conftest.py", "cases/", "docker/", "fixtures/", "reports/", "tox.ini", "pcgkit/", "tests/"]
)
def test_top_level_layout(entry):
    """Each top-level entry of the design exists, as a directory when it ends in '/'."""
    path = ROOT / entry.rstrip("/")
    assert path.is_dir() if entry.endswith("/") else path.is_file()


def _pytest_section() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "tox.ini")
    return parser["pytest"]


def test_tox_ini_markers_are_the_plugins():
    """tox.ini declares exactly plugin.MARKERS, with the same descriptions (one source of truth)."""
    declared = {}
    for line in _pytest_section()["markers"].strip().splitlines():
        name, _, description = line.strip().partition(":")
        declared[name.strip()] = description.strip()
    assert declared == MARKERS


def test_strict_pytest_config():
    """Unknown markers and unknown config keys are errors; unexpected xfail passes fail."""
    section = _pytest_section()
    addopts = section["addopts"].split()
    assert "--strict-markers" in addopts
    assert "--strict-config" in addopts
    assert section["xfail_strict"].strip() == "true"
    assert section["junit_family"].strip() == "xunit1"  # per-testcase <properties> need xunit1


def _cases_ini() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "cases" / "pytest.ini")
    return parser["pytest"]


def test_cases_ini_matches_tox_ini():
    """cases/pytest.ini (pcgkit run, matrix cells, the wheel) holds the same strictness as tox.ini."""
    cases, tox = _cases_ini(), _pytest_section()
    for key in ("addopts", "xfail_strict", "junit_family", "minversion", "filterwarnings"):
        assert cases[key].split() == tox[key].split(), key


STAGE_PACKAGES = ("values", "harness", "util", "verdicts", "fp4", "sglang", "e2e", "matrix", "report", "bugreport", "jobs",
                  "commands")


def test_top_level_of_the_package_is_small():
    """pcgkit/ holds the stage packages and a handful of entry modules, not a flat list of peers."""
    modules = sorted(p.name for p in (ROOT / "pcgkit").glob("*.py"))
    assert modules == ["__init__.py", "catalog.py", "cli.py", "errors.py", "plugin.py", "resources.py"]
    for package in STAGE_PACKAGES:
        assert (ROOT / "pcgkit" / package / "__init__.py").is_file(), package


def _floors() -> list[str]:
    """The layers of pyproject.toml's import-linter contract, top floor first."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["id"] == "floors"]
    return contract["layers"]


def test_floors_hold():
    """No pcgkit module imports a module on a higher floor, lazily or not (import-linter's layers contract)."""
    from importlinter.cli import lint_imports

    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def test_every_package_stands_on_a_floor():
    """Each package and top-level module of pcgkit is named in the layers contract, so none escapes it."""
    on_a_floor = {name.strip() for layer in _floors() for name in layer.replace(":", "|").split("|")}
    present = {f"pcgkit.{p.stem}" for p in (ROOT / "pcgkit").glob("*.py") if p.name != "__init__.py"}
    present |= {f"pcgkit.{p.parent.name}" for p in (ROOT / "pcgkit").glob("*/__init__.py") if p.parent.name != "_bundle"}
    assert present == on_a_floor


def test_floors_contract_fails_on_an_import_that_runs_back_up(tmp_path, monkeypatch):
    """The guard can fail: in a planted two-floor package, the lower floor importing the upper breaks it."""
    from importlinter.cli import lint_imports

    package = tmp_path / "planted"
    (package / "upper").mkdir(parents=True)
    (package / "lower").mkdir()
    for init in ("__init__.py", "upper/__init__.py", "lower/__init__.py"):
        (package / init).write_text("")
    (package / "lower" / "values.py").write_text("def lazy():\n    from planted.upper import app  # noqa\n")
    (package / "upper" / "app.py").write_text("from planted.lower import values  # noqa\n")
    config = tmp_path / "contract.toml"
    config.write_text('[tool.importlinter]\nroot_package = "planted"\n[[tool.importlinter.contracts]]\n'
                      'name = "floors"\ntype = "layers"\nlayers = ["planted.upper", "planted.lower"]\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert lint_imports(config_filename=str(config), no_cache=True, no_logo=True) == 1


def test_data_is_found_only_through_resources():
    """No module but pcgkit/resources.py locates files relative to its own __file__."""
    offenders = [
        str(p.relative_to(ROOT)) for p in (ROOT / "pcgkit").rglob("*.py")
        if p.name != "resources.py" and "__file__" in p.read_text()
    ]
    assert offenders == []


def test_catalog_names_every_case_module_and_each_exists():
    """Every module in cases/ that records verdicts is in the catalog, and every catalog module exists."""
    from pcgkit.catalog import CATALOG

    named = {e.case_module for e in CATALOG}
    assert all((ROOT / "cases" / name).is_file() for name in named)
    recording = {p.name for p in (ROOT / "cases").glob("test_*.py") if "pcgkit_case" in p.read_text() or "MODE" in p.read_text()}
    assert recording <= named, recording - named


def test_every_package_ships_in_the_wheel():
    """Each folder of pcgkit/ with an __init__.py is listed in pyproject.toml's setuptools packages (a moved
    or new package that is not would be missing from an installed kit)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    present = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "pcgkit").rglob("__init__.py")}
    assert present - listed == set()


def test_the_default_run_leaves_the_slow_set_to_ci_and_a_named_path_runs_it(pytester):
    """Root conftest: no path and no -m deselects `slow`/`act`/`docker` (the header says how); a path or -m runs them."""
    pytester.makeconftest((ROOT / "conftest.py").read_text().replace('pytest_plugins = ["pcgkit.plugin"]', ""))
    pytester.makeini("[pytest]\ntestpaths = t\nmarkers =\n    slow: s\n    act: a\n    docker: d\n")
    folder = pytester.mkpydir("t")
    (folder / "test_x.py").write_text("import pytest\n\ndef test_fast():\n    pass\n\n"
                                      "@pytest.mark.slow\ndef test_slow():\n    pass\n\n@pytest.mark.act\ndef test_act():\n    pass\n")
    default = pytester.runpytest()
    default.assert_outcomes(passed=1, deselected=2)
    assert "bin/pcgkit test -m 'slow or act or docker'" in default.stdout.str()
    pytester.runpytest("t/test_x.py").assert_outcomes(passed=3)
    pytester.runpytest("-m", "slow or act").assert_outcomes(passed=2, deselected=1)


def _contract(config_id: str) -> str:
    """pyproject.toml's import-linter contract `config_id`, as TOML for a planted package's config."""
    import tomllib

    (contract,) = [c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
                   if c["id"] == config_id]
    return "\n".join(f"{k} = {json.dumps(v)}" for k, v in contract.items())


@pytest.mark.parametrize(("contract", "planted"), [
    ("workshop", {"pcgkit/__init__.py": "", "pcgkit/tool.py": "def f():\n    import lab.refresh  # noqa\n",
                  "lab/__init__.py": "", "lab/refresh.py": "import pcgkit.tool  # noqa\n"}),
    ("siblings", {"pcgkit/__init__.py": "", "pcgkit/a.py": "import pcgkit.b  # noqa\n",
                  "pcgkit/b.py": "def f():\n    import pcgkit.a  # noqa\n", "lab/__init__.py": ""}),
], ids=["pcgkit-imports-lab", "a-cycle-of-siblings"])
def test_workshop_and_sibling_contracts_fail_on_a_planted_import(tmp_path, contract, planted):
    """The guards can fail: pyproject's own `workshop` and `siblings` contracts break on a planted package that
    imports the workshop from pcgkit, or whose two sibling modules import each other (a separate process, so
    the planted `pcgkit` is the one found)."""
    for rel, text in planted.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "contract.toml").write_text('[tool.importlinter]\nroot_packages = ["pcgkit", "lab"]\n'
                                            f"[[tool.importlinter.contracts]]\n{_contract(contract)}\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([str(Path(sys.executable).parent / "lint-imports"), "--config", "contract.toml", "--no-cache"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "BROKEN" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]


# Growth is a choice (issue 45): the package's line budget and the longest function it may hold. Raising either is
# an edit here, in review, with the reason in the commit; the counts are the issue's own.
# Issue 45's target was 27,000: 30,333 at its start; the workshop, the certificate builder and the wheel readers left,
# then dead code, test- and workshop-only code and near-copies went (26,736 on 2026-12-07; 26,641 after a second
# pass the same day). The budget is what is here, so any growth fails this test; lower it as code leaves.
PACKAGE_LINE_BUDGET = 26_641  # `git ls-files pcgkit | grep .py$ | xargs cat | wc -l`
FUNCTION_LINE_LIMIT = 80  # a def's lines, decorators aside, docstring and body included
# Functions over the limit allowed for now (each may only shrink; an entry that no longer exceeds must go): none.
KNOWN_OVER_LIMIT: dict[str, int] = {}


def _package_sources() -> list[Path]:
    """The package's tracked .py files, as the budget counts them (git ls-files pcgkit)."""
    done = subprocess.run(["git", "ls-files", "pcgkit"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / name for name in done.stdout.split() if name.endswith(".py")]


def package_lines(files: list[Path]) -> int:
    """What `xargs cat | wc -l` prints for `files`: their newline count."""
    return sum(path.read_bytes().count(b"\n") for path in files)


def long_functions(source: str, limit: int = FUNCTION_LINE_LIMIT) -> dict[str, int]:
    """{name: lines} of every function or method in `source` longer than `limit` lines (def line to last line)."""
    import ast

    return {node.name: node.end_lineno - node.lineno + 1 for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > limit}


def test_the_package_stays_within_its_line_budget():
    """pcgkit/ is at most PACKAGE_LINE_BUDGET lines, counted as the issue counts them (git ls-files, wc -l)."""
    files = _package_sources()
    assert files and all(path.is_relative_to(ROOT / "pcgkit") for path in files)
    lines = package_lines(files)
    assert lines <= PACKAGE_LINE_BUDGET, (
        f"pcgkit/ is {lines} lines, over its budget of {PACKAGE_LINE_BUDGET}: move what only the workshop, tests or "
        f"benchmarks read to lab/ (docs/reference/layout.md), or raise the budget here with the reason")


def test_the_line_count_is_wc_l():
    """The counter agrees with `wc -l`: a file without a final newline adds none (a plausible off-by-one)."""
    assert package_lines([ROOT / "pcgkit" / "__init__.py"]) == len((ROOT / "pcgkit" / "__init__.py").read_text().splitlines())


def test_no_function_over_the_line_limit():
    """No function in the package is over FUNCTION_LINE_LIMIT lines, but the listed ones (which may only shrink)."""
    over = {f"{path.relative_to(ROOT).as_posix()}:{name}": lines for path in _package_sources()
            for name, lines in long_functions(path.read_text()).items()}
    new = {name: lines for name, lines in over.items() if lines > KNOWN_OVER_LIMIT.get(name, FUNCTION_LINE_LIMIT)}
    assert new == {}, f"functions over {FUNCTION_LINE_LIMIT} lines (split where a function has more than one job): {new}"
    fixed = sorted(set(KNOWN_OVER_LIMIT) - set(over))
    assert fixed == [], f"no longer over the limit: remove from KNOWN_OVER_LIMIT: {fixed}"


def test_the_function_counter_sees_methods_and_nested_functions():
    """long_functions counts methods and nested functions, and not a function at the limit exactly."""
    body = "".join(f"    x{i} = {i}\n" for i in range(FUNCTION_LINE_LIMIT - 1))
    source = f"class A:\n  def method(self):\n{body}    return 1\n\ndef outer():\n  def inner():\n{body}    pass\n"
    assert long_functions(source) == {"method": FUNCTION_LINE_LIMIT + 1, "inner": FUNCTION_LINE_LIMIT + 1,
                                      "outer": FUNCTION_LINE_LIMIT + 2}
    assert long_functions(f"def at_limit():\n{body}") == {}
