"""`bin/pcgkit lab refresh`: the four generators a new SGLang release needs, planned purely and in order."""

from __future__ import annotations

from pathlib import Path

from lab.cli import main
from lab.commands.refresh import plan_refresh


def test_refresh_plans_pins_then_locks_then_validation_then_docs():
    """The pins come first (they make the new cell), the docs last (they render the others' data)."""
    steps = plan_refresh("py", Path("/kit"))
    assert [what for what, _ in steps] == ["pins", "locks", "launch validation", "docs"]
    assert steps[0][1] == ["py", "-m", "lab", "pins"]
    assert steps[3][1] == ["py", "/kit/docs/gen_facts.py"]


def test_refresh_narrowed_to_a_release_locks_and_validates_only_its_cell():
    """--sglang X locks the cell sglang-X and validates the launch of release X, nothing else."""
    steps = dict(plan_refresh("py", Path("/kit"), ("0.5.24",)))
    assert steps["locks"][-2:] == ["--cell", "sglang-0.5.24"]
    assert steps["launch validation"][-2:] == ["--sglang", "0.5.24"]


def test_refresh_dry_run_prints_the_commands_and_runs_none(capsys, monkeypatch):
    """--dry-run prints one line per step and starts no process."""
    from pcgkit.util import proc

    monkeypatch.setattr(proc, "run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran a process")))
    assert main(["refresh", "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == ["pins", "locks", "launch validation", "docs"]
