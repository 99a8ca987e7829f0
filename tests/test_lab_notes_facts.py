"""Statements in docs/lab-notes.md that data files also hold say the same thing (issue 44: the notes dated FlashInfer's
cuda-python requirement from 0.6.18 while the 0.6.15-0.6.17 wheels declare it and the install rule starts at 0.6.15)."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_the_cuda_python_requirement_is_dated_as_the_install_rule_dates_it():
    """The first FlashInfer release the notes say declares cuda-python is the install rule's lower bound."""
    rules = tomllib.loads((ROOT / "fixtures" / "install_rules.toml").read_text())["rule"]
    bound = next(r["when"]["flashinfer-python"] for r in rules if any("cuda-python" in c for c in r["constraints"]))
    notes = " ".join((ROOT / "docs" / "lab-notes.md").read_text().split())
    said = re.findall(r"flashinfer >= ([\d.]+\w*) declares `cuda-python", notes)
    assert said and all(f">={v}" == bound for v in said), (said, bound)
