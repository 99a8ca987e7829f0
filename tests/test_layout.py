"""The checkout has the design's layout, and tox.ini's pytest config agrees with the plugin."""

from __future__ import annotations

import configparser
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
