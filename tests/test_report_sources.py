"""`pcgkit report --from`: folders and archives from many hosts merged into rows; bad inputs become
error rows; a real-hardware result beside the simulated one, their disagreement flagged as data.

Results are real (tests/data/fanout/: `pcgkit parity` on an H200, flashinfer 0.7.0)."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import RAN, CellOutcome, write_outcome
from pcgkit.matrix.where import Where
from pcgkit.report.sources import (
    SIMULATED_VS_REAL,
    STAGE_SOURCE,
    find_disagreements,
    load_sources,
    merge_rows,
    unpack,
)
from pcgkit.verdicts.result import read_results

DATA = Path(__file__).parent / "data" / "fanout"
CELL = Cell(id="fi-0.7.0", flashinfer="0.7.0", torch="2.11.0")
HOSTED = Where(host="fv-az1", runner_labels=("ubuntu-latest",), runner_environment="github-hosted", backend="venv")
GPU_BOX = Where(host="gpu-box-1", runner_labels=("self-hosted", "gpu"), backend="docker",
                device="NVIDIA H200 (compute capability 9.0)", driver="580.159.04")


def outcome(kind: str, where: Where, finished: str = "2026-12-01T08:00:00+00:00") -> CellOutcome:
    environment, results = read_results(DATA / f"h200-fi0.7.0-{kind}-results.json")
    return CellOutcome(CELL, RAN, 60.0, versions=environment["versions"], results=tuple(results), finished=finished,
                       where=where)


def cell_folder(root: Path, out: CellOutcome) -> Path:
    folder = root / out.cell.id
    write_outcome(folder / "cell.json", out)
    return folder


def tar_of(folder: Path, path: Path) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for p in folder.rglob("*"):
            tf.add(p, arcname=str(p.relative_to(folder)))
    return path


@pytest.fixture
def two_hosts(tmp_path):
    """The same cell from a hosted runner (simulated; a folder) and a GPU box (real; a .tar.gz)."""
    sim = cell_folder(tmp_path / "a", outcome("simulated", HOSTED))
    real = tar_of(cell_folder(tmp_path / "b", outcome("real", GPU_BOX)), tmp_path / "b.tar.gz")
    return load_sources([str(sim), str(real)], tmp_path / "staging")


def test_same_cell_from_two_hosts_is_kept_twice_with_distinct_ids(two_hosts):
    """Both rows stay, each id says its machine, and both keep the planned cell id."""
    ids = sorted(r.outcome.cell.id for r in two_hosts.rows)
    assert ids == ["fi-0.7.0@gpu-box-1_self-hosted_gpu_-docker", "fi-0.7.0@ubuntu-latest-venv"]
    assert {r.cell_id for r in two_hosts.rows} == {"fi-0.7.0"}
    assert [s.kind for s in two_hosts.sources] == ["folder", "archive"] and all(s.cells == 1 for s in two_hosts.sources)


def test_simulated_vs_real_disagreement_is_exactly_the_upstream_op(two_hosts):
    """Only fix-upstream-op differs (simulated fixed, H200 drifted at fp4_quantize_sm100): flagged with fields."""
    found = find_disagreements(two_hosts.rows)
    assert [(d.case, d.kind) for d in found] == [("fix-upstream-op", SIMULATED_VS_REAL)]
    d = found[0]
    assert d.fields == ("verdict", "innermost_frame")
    assert (d.first.observation.verdict, d.second.observation.verdict) == ("fixed", "drifted")
    assert d.first.simulated and not d.second.simulated and d.second.target == "gpu"
    assert d.second.observation.innermost_frame.endswith("fp4_quantization.py:314:fp4_quantize_sm100")
    assert d.to_dict()["second"]["where"] == GPU_BOX.key


def test_same_key_twice_keeps_the_newest_and_says_so(tmp_path):
    """A cell rerun on the same machine and targets: one row (the newer), and a note naming the older."""
    old = cell_folder(tmp_path / "old", outcome("simulated", HOSTED, "2026-12-01T08:00:00+00:00"))
    new = cell_folder(tmp_path / "new", outcome("simulated", HOSTED, "2026-12-02T08:00:00+00:00"))
    loaded = load_sources([str(old), str(new)], tmp_path / "staging")
    assert [r.outcome.finished for r in loaded.rows] == ["2026-12-02T08:00:00+00:00"]
    assert loaded.rows[0].outcome.cell.id == "fi-0.7.0"
    assert len(loaded.notes) == 1 and "superseded" in loaded.notes[0]


def _zip_with(path: Path, name: str, data: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(name, data)
    return path


def _tar_with_escape(path: Path) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        info = tarfile.TarInfo("../../escaped.json")
        payload = b"{}"
        info.size = len(payload)
        tf.addfile(info, io.BytesIO(payload))
    return path


BAD_INPUTS = {
    "missing": (lambda tmp: tmp / "nope", "no such file or folder"),
    "not-an-archive": (lambda tmp: (tmp / "x.bin").write_bytes(b"hello") and tmp / "x.bin", "nor a tar or zip"),
    "truncated-tar": (lambda tmp: (tmp / "t.tar.gz").write_bytes(b"\x1f\x8b\x08\x00broken") and tmp / "t.tar.gz",
                      "broken archive"),
    "foreign-zip": (lambda tmp: _zip_with(tmp / "f.zip", "report.txt", b"hi"), "no cell.json inside"),
    "foreign-schema": (lambda tmp: _zip_with(tmp / "s.zip", "c/cell.json", json.dumps({"schema": "other/1"}).encode()),
                       "foreign file: schema 'other/1'"),
    "bad-json": (lambda tmp: _zip_with(tmp / "j.zip", "c/cell.json", b"{not json"), "not JSON"),
    "incomplete": (lambda tmp: _zip_with(tmp / "i.zip", "c/cell.json", json.dumps({"schema": "pcgkit.cell/1"}).encode()),
                   "incomplete or malformed"),
    "path-escape": (lambda tmp: _tar_with_escape(tmp / "e.tar.gz"), "would land outside"),
    "run-folder": (lambda tmp: (tmp / "run").mkdir() or (tmp / "run" / "results.json").write_text("{}") and tmp / "run",
                   "a `pcgkit run` reports folder?"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_or_foreign_input_is_an_error_row_with_the_reason(tmp_path, name):
    """Each bad input gives one error row (stage 'source') whose reason says what is wrong; nothing raises."""
    make, expected = BAD_INPUTS[name]
    path = make(tmp_path)
    good = cell_folder(tmp_path / "good", outcome("simulated", HOSTED))
    loaded = load_sources([str(path), str(good)], tmp_path / "staging")
    errors = [r for r in loaded.rows if r.outcome.is_error]
    assert len(errors) == 1, [r.outcome.reason for r in loaded.rows]
    assert errors[0].outcome.stage == STAGE_SOURCE and expected in errors[0].outcome.reason
    assert str(path) in errors[0].outcome.reason
    assert any(r.outcome.cell.id == "fi-0.7.0" for r in loaded.rows)  # the good source still merged
    assert loaded.sources[0].problems and not (tmp_path / "escaped.json").exists()


def test_unpack_refuses_links(tmp_path):
    """A tar with a symlink member is refused (it could point anywhere on the host)."""
    path = tmp_path / "l.tar"
    with tarfile.open(path, "w") as tf:
        info = tarfile.TarInfo("cell.json")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(info)
    with pytest.raises(ValueError, match="not a plain file"):
        unpack(path, tmp_path / "out")


def test_merge_rows_suffixes_only_repeated_ids():
    """A cell seen once keeps its plain id (so a one-host merge equals a local report)."""
    rows, _ = merge_rows(load_rows_fake())
    assert sorted(r.outcome.cell.id for r in rows) == ["other", "seed@a-venv", "seed@b-venv"]


def load_rows_fake():
    from pcgkit.report.sources import Row

    def row(cell_id: str, host: str) -> Row:
        out = CellOutcome(Cell(id=cell_id), RAN, 1.0, where=Where(host=host))
        return Row(out, "src", f"{cell_id}/cell.json", Path("/nonexistent"))

    return [row("seed", "a"), row("seed", "b"), row("other", "a")]
