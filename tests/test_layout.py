"""The checkout has the design's layout, and tox.ini's pytest config agrees with the plugin."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from pcgkit.harness.plugin import MARKERS

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


STAGE_PACKAGES = ("harness", "util", "verdicts", "fp4", "sglang", "e2e", "matrix", "report", "bugreport", "jobs")


def test_top_level_of_the_package_is_small():
    """pcgkit/ holds the stage packages and a handful of entry modules, not a flat list of peers."""
    modules = sorted(p.name for p in (ROOT / "pcgkit").glob("*.py"))
    assert modules == ["__init__.py", "cli.py", "errors.py", "resources.py"]
    for package in STAGE_PACKAGES:
        assert (ROOT / "pcgkit" / package / "__init__.py").is_file(), package


def _import_graph() -> dict[str, set[str]]:
    import ast

    root = ROOT / "pcgkit"
    modules = {}
    for path in root.rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        modules[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):  # lazy imports inside functions count too
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pcgkit"):
                for alias in node.names:
                    candidate = f"{node.module}.{alias.name}"
                    deps.add(candidate if candidate in modules else node.module)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("pcgkit")}
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    """No two pcgkit modules import each other, directly or around a loop, lazily or not."""
    assert _cycles(_import_graph()) == []


def test_cycle_finder_finds_a_planted_cycle():
    """The cycle check above can fail: a planted a -> b -> a loop is found."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_data_is_found_only_through_resources():
    """No module but pcgkit/resources.py locates files relative to its own __file__."""
    offenders = [
        str(p.relative_to(ROOT)) for p in (ROOT / "pcgkit").rglob("*.py")
        if p.name != "resources.py" and "__file__" in p.read_text()
    ]
    assert offenders == []


def test_catalog_names_every_case_module_and_each_exists():
    """Every module in cases/ that records verdicts is in the catalog, and every catalog module exists."""
    from pcgkit.verdicts.catalog import CATALOG

    named = {e.case_module for e in CATALOG}
    assert all((ROOT / "cases" / name).is_file() for name in named)
    recording = {p.name for p in (ROOT / "cases").glob("test_*.py") if "pcgkit_case" in p.read_text() or "MODE" in p.read_text()}
    assert recording <= named, recording - named
