"""`report --from ARCHIVE`: an archive is bounded by total unpacked size and by compression ratio
(a zip bomb is an error row, not a full disk), and nothing unpacked stays behind after the report."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile

from pcgkit.report import sources

from .helpers import ran_cell, run_main, write_cells


def _artifact(tmp_path, name="artifact"):
    folder = tmp_path / name
    write_cells(folder, ran_cell("good"))
    return folder


def _zip(folder, dest, extra: dict[str, bytes] = {}):  # noqa: B006 - read-only default
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in folder.rglob("*"):
            if path.is_file():
                zf.write(path, path.relative_to(folder))
        for member, data in extra.items():
            zf.writestr(member, data)
    return dest


def test_zip_bomb_by_ratio_is_an_error_row(tmp_path, capsys):
    """A small zip that unpacks 1000x (64 MB of zeros in ~64 KB) is refused for its ratio before anything is written."""
    bomb = _zip(_artifact(tmp_path), tmp_path / "bomb.zip", {"filler.bin": b"\0" * (64 * 1024**2)})
    good = _zip(_artifact(tmp_path, "other"), tmp_path / "good.zip")
    reports = tmp_path / "reports"
    status, out, err = run_main(["report", "--reports", str(reports), "--from", str(bomb), "--from", str(good)], capsys)
    assert status == 3, err
    rows = json.loads((reports / "compat.json").read_text())["cells"]
    reasons = " ".join(r.get("reason", "") for r in rows)
    assert "ratio" in reasons and "bomb.zip" in reasons
    assert any(r["id"] == "good" for r in rows)  # the other archive's cells still count
    assert not any(p.name == "filler.bin" for p in reports.rglob("*"))


def test_tar_over_the_total_size_bound_is_refused(tmp_path, monkeypatch, capsys):
    """A tar whose members add up to more than the bound is refused with the bound named."""
    monkeypatch.setattr(sources, "MAX_UNPACKED_BYTES", 1024 * 1024)
    data = bytes(range(256)) * 8192  # 2 MiB, incompressible enough for the ratio check to pass
    archive = tmp_path / "big.tar"
    with tarfile.open(archive, "w") as tf:
        info = tarfile.TarInfo("big.bin")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    reports = tmp_path / "reports"
    status, out, err = run_main(["report", "--reports", str(reports), "--from", str(archive),
                                 "--from", str(_artifact(tmp_path))], capsys)
    assert status == 3
    reasons = " ".join(r.get("reason", "") for r in json.loads((reports / "compat.json").read_text())["cells"])
    assert "unpacks to more than" in reasons


def test_unpacked_archives_do_not_stay_after_the_report(tmp_path, capsys):
    """After `report --from x.zip` only the staged cells remain: the unpacked copy is removed."""
    archive = _zip(_artifact(tmp_path), tmp_path / "a.zip")
    reports = tmp_path / "reports"
    status, out, err = run_main(["report", "--reports", str(reports), "--from", str(archive)], capsys)
    assert status == 0, err
    assert not (reports / "matrix" / "merged" / "unpacked").exists()
    assert (reports / "matrix" / "merged" / "cells" / "good" / "cell.json").is_file()
