"""The matrix planner and the SGLang pins cache: pure, offline, no environments."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from lab.matrix.pins_refresh import dump_pins, is_subject_requirement
from pcgkit.matrix.cells import OFF_PIN, ON_PIN, SCOPE_ALL, SCOPE_SGLANG_LEVEL, Cell
from pcgkit.matrix.outcome import classify_install_failure
from pcgkit.matrix.pins import (
    DEFAULT_PINS_FILE,
    PinsIndex,
    SglangRelease,
    load_pins,
    parse_subject_pins,
)
from pcgkit.matrix.plan import DEFAULT_MATRIX_FILE, MatrixError, load_matrix, parse_matrix, plan

INDEX = PinsIndex(
    releases=(
        SglangRelease("0.5.3", ("flashinfer_python==0.4.0", "torch==2.8.0"), piecewise_cuda_graph=False),
        SglangRelease("0.5.4", ("flashinfer_python==0.4.1", "torch==2.8.0"), piecewise_cuda_graph=True),
        SglangRelease(
            "0.5.8", ("flashinfer_python==0.6.1", "flashinfer_cubin==0.6.1", "torch==2.9.1"), piecewise_cuda_graph=True
        ),
        SglangRelease(
            "0.5.8.post1", ("flashinfer_python==0.6.1", "flashinfer_cubin==0.6.1", "torch==2.9.1"), True
        ),
        SglangRelease("0.5.13", ("flashinfer_python[cu13]==0.6.12", "torch==2.11.0"), piecewise_cuda_graph=True),
    ),
    known_versions={"flashinfer-python": ("0.5.3", "0.6.1", "0.6.12")},
)


def matrix(body: str):
    return parse_matrix('schema = "pcgkit.matrix/1"\n' + textwrap.dedent(body))


def test_subject_pins_keep_exact_unconditional_pins_only():
    """'==' pins are kept with extras; ranges and extra-gated lines are not pins."""
    pins = parse_subject_pins([
        "flashinfer_python[cu13]==0.6.12", "torch>=2.8", 'torch==2.8.0; extra == "srt"', "flashinfer_cubin==0.6.1",
    ])
    assert pins["flashinfer-python"].version == "0.6.12"
    assert pins["flashinfer-python"].extras == ("cu13",)
    assert "torch" not in pins
    assert pins["flashinfer-cubin"].requirement() == "flashinfer-cubin==0.6.1"


def test_subject_requirement_filter():
    """torch*/flashinfer*/sgl-kernel lines are cached; others and extra-gated lines are not."""
    assert is_subject_requirement("torch==2.9.1")
    assert is_subject_requirement("flashinfer_python==0.6.1")
    assert not is_subject_requirement("pydantic")
    assert not is_subject_requirement('torch==2.8.0; extra == "srt"')


def test_pins_file_round_trips(tmp_path: Path):
    """dump_pins writes what load_pins reads back."""
    path = tmp_path / "pins.toml"
    path.write_text(dump_pins(INDEX))
    again = load_pins(path)
    assert again.releases == INDEX.releases
    assert again.known_versions == INDEX.known_versions


def test_shipped_pins_cache_names_the_seed_pins():
    """The checked-in cache says sglang 0.5.8 declares flashinfer 0.6.1 and torch 2.9.1 (FACTS.md)."""
    index = load_pins(DEFAULT_PINS_FILE)
    pins = index.release("0.5.8").pins
    assert (pins["flashinfer-python"].version, pins["torch"].version) == ("0.6.1", "2.9.1")
    assert index.first_piecewise() is not None


def test_seed_cell_is_on_pin_and_gets_declared_companions():
    """A cell with exactly the declared pair is on-pin and installs the declared flashinfer-cubin too."""
    cells = plan(matrix('[[cell]]\nid="seed"\nsglang="0.5.8"\nflashinfer-python="0.6.1"\ntorch="2.9.1"\n'), INDEX)
    assert cells[0].pin_status == ON_PIN
    assert "flashinfer-cubin==0.6.1" in cells[0].requirements()


def test_cell_off_its_sglang_pins_says_which_pin_differs():
    """A cell that swaps torch is off-pin, and the note names the declared and the actual version."""
    cells = plan(matrix('[[cell]]\nid="x"\nsglang="0.5.8"\nflashinfer-python="0.6.1"\ntorch="2.10.0"\n'), INDEX)
    assert cells[0].pin_status == OFF_PIN
    assert "torch 2.10.0 (declares 2.9.1)" in cells[0].pin_note


def test_sglang_releases_start_at_first_piecewise_and_share_only_flashinfer_cases():
    """0.5.3 (no piecewise) is left out; 0.5.8.post1 shares the seed's FlashInfer-only cases but gets its
    own sglang-level cell (never folded for what depends on SGLang); extras carry over."""
    spec = matrix("""
        [[cell]]
        id = "seed"
        sglang = "0.5.8"
        flashinfer-python = "0.6.1"
        torch = "2.9.1"
        [sglang_releases]
        from = "first-piecewise"
    """)
    cells = {c.id: c for c in plan(spec, INDEX)}
    assert set(cells) == {"seed", "sglang-0.5.4", "sglang-0.5.8.post1", "sglang-0.5.13"}
    assert cells["seed"].covers_sglang == ("0.5.8", "0.5.8.post1")
    assert cells["sglang-0.5.8.post1"].scope == SCOPE_SGLANG_LEVEL and cells["sglang-0.5.8.post1"].sglang == "0.5.8.post1"
    assert cells["seed"].scope == cells["sglang-0.5.4"].scope == cells["sglang-0.5.13"].scope == SCOPE_ALL
    assert cells["sglang-0.5.13"].flashinfer_extras == ("cu13",)
    assert "flashinfer-python[cu13]==0.6.12" in cells["sglang-0.5.13"].requirements()
    assert all(cells[i].pin_status == ON_PIN for i in ("sglang-0.5.4", "sglang-0.5.13"))


def test_cell_without_sglang_is_on_pin_when_a_release_declares_its_pair():
    """flashinfer 0.4.1 + torch 2.8.0 is what sglang 0.5.4 declares; 0.4.1 + 2.9.1 nobody declares."""
    spec = matrix("""
        [[cell]]
        id = "a"
        flashinfer-python = "0.4.1"
        torch = "2.8.0"
        [[cell]]
        id = "b"
        flashinfer-python = "0.4.1"
        torch = "2.9.1"
    """)
    a, b = plan(spec, INDEX)
    assert (a.pin_status, b.pin_status) == (ON_PIN, OFF_PIN)
    assert "0.5.4" in a.pin_note


def test_only_filters_and_rejects_unknown_ids():
    """--cell keeps the named cells; a typo is an error listing the known ids."""
    spec = matrix('[[cell]]\nid="a"\nflashinfer-python="1"\ntorch="2"\n[[cell]]\nid="b"\nflashinfer-python="1"\ntorch="3"\n')
    assert [c.id for c in plan(spec, INDEX, only=["b"])] == ["b"]
    with pytest.raises(MatrixError, match="unknown cell id.*known: a, b"):
        plan(spec, INDEX, only=["c"])


@pytest.mark.parametrize(
    "body, message",
    [
        ('[[cell]]\nid="a b"\nflashinfer-python="1"\ntorch="2"\n', "cell id"),
        ('[[cell]]\nid="a"\ntorch="2"\n', "needs flashinfer-python and torch"),
        ('[[cell]]\nid="a"\nkind="existing"\n', "needs an interpreter"),
        ('[[cell]]\nid="a"\nflashinfer-python="1"\ntorch="2"\n[[cell]]\nid="a"\nflashinfer-python="1"\ntorch="3"\n',
         "duplicate"),
    ],
)
def test_bad_matrix_definitions_are_rejected(body, message):
    """Malformed cells fail at planning time with a message naming the problem."""
    with pytest.raises(MatrixError, match=message):
        plan(matrix(body), INDEX)


def test_definition_hash_follows_pins_not_labels():
    """Changing a pin changes the hash (rerun); changing only a label or timeout does not."""
    cell = Cell("a", flashinfer="0.6.1", torch="2.9.1")
    assert Cell("a", flashinfer="0.6.1", torch="2.9.1", pin_note="x", timeout_s=5).definition_hash == cell.definition_hash
    assert Cell("a", flashinfer="0.6.1", torch="2.10.0").definition_hash != cell.definition_hash
    assert Cell.from_dict(cell.to_dict()) == cell


def test_every_release_in_range_is_installed_as_itself():
    """The shipped matrix: each SGLang release in range that declares its pins is the sglang of some cell
    that runs its SGLang-level cases; a cell of scope sglang-level shares its stack with one that covers it."""
    from pcgkit.matrix.plan import releases_in_range

    spec, index = load_matrix(DEFAULT_MATRIX_FILE), load_pins(DEFAULT_PINS_FILE)
    cells = plan(spec, index)
    in_range = [r.version for r in releases_in_range(index, spec.sglang_releases or {})
                if {"flashinfer-python", "torch"} <= set(r.pins)]
    assert len(in_range) >= 30
    assert sorted({c.sglang for c in cells if c.sglang}, key=str) == sorted(in_range, key=str)
    for cell in cells:
        if cell.scope == SCOPE_SGLANG_LEVEL:
            sharing = [c for c in cells if c.scope == SCOPE_ALL and cell.sglang in c.covers_sglang]
            assert [(c.flashinfer, c.torch) for c in sharing] == [(cell.flashinfer, cell.torch)]


def test_narrowed_scope_changes_the_definition_and_all_keeps_old_hashes():
    """A sglang-level cell is a different environment and result (new hash); scope 'all' adds nothing
    to the definition, so cells planned before scopes existed keep their cached results."""
    cell = Cell("a", sglang="0.5.9", flashinfer="0.6.3", torch="2.9.1")
    assert "scope" not in cell.definition()
    narrowed = Cell("a", sglang="0.5.9", flashinfer="0.6.3", torch="2.9.1", scope=SCOPE_SGLANG_LEVEL)
    assert narrowed.definition_hash != cell.definition_hash
    assert Cell.from_dict(narrowed.to_dict()) == narrowed


def test_default_matrix_plans_the_documented_span():
    """The shipped matrix has the seed cell, FlashInfer 0.5.x..0.7.x cells and SGLang release cells."""
    cells = plan(load_matrix(DEFAULT_MATRIX_FILE), load_pins(DEFAULT_PINS_FILE))
    ids = [c.id for c in cells]
    assert ids[0] == "seed" and cells[0].pin_status == ON_PIN
    flashinfers = [c.flashinfer for c in cells if c.origin == "explicit"]
    assert any(v.startswith("0.5.") for v in flashinfers) and any(v.startswith("0.7.") for v in flashinfers)
    assert any(c.origin == "sglang-release" for c in cells)


@pytest.mark.parametrize(
    "log, cause",
    [
        ("  × No solution found when resolving dependencies:\n  ╰─▶ Because there is no version of flashinfer-python==0.0.0",
         "unknown version"),
        ("No solution found when resolving dependencies: torch==2.9.1 and torch==2.8.0 are incompatible", "resolver conflict"),
        ("something else entirely", "install failed"),
    ],
)
def test_install_failures_are_named(log, cause):
    """uv's wording maps to a short cause shown in error cells."""
    assert classify_install_failure(log) == cause


def test_tox_ini_envs_match_the_default_matrix():
    """tox.ini's generated [tox]/[testenv] block is exactly what the current plan renders (no drift)."""
    from lab.matrix.tox_export import generated_section, render_tox

    tox_ini = (DEFAULT_MATRIX_FILE.parent.parent / "tox.ini").read_text()
    expected = render_tox(plan(load_matrix(DEFAULT_MATRIX_FILE), load_pins(DEFAULT_PINS_FILE)))
    assert generated_section(tox_ini) == expected, "regenerate with `bin/pcgkit lab tox`"
    assert "seed: flashinfer-python==0.6.1" in expected and "cell-{seed," in expected
