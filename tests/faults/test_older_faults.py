"""The four faults of earlier passes that still failed: each now has its own answer."""

from __future__ import annotations

import json
import re

import pytest

from .helpers import REPO_ROOT, assert_one_line_error, pcgkit, ran_cell, run_main, write_cells

SAMPLE_COMPAT = REPO_ROOT / "reports" / "samples" / "matrix-2026-12-01" / "compat.json"


def test_report_from_inside_the_merged_folder_keeps_the_input(tmp_path, capsys):
    """report --from REPORTS/matrix/merged/cells: refused before the staging folder is emptied; the input is kept."""
    reports = tmp_path / "reports"
    write_cells(reports, ran_cell("seed"))
    assert run_main(["report", "--reports", str(reports), "--from", str(reports / "matrix" / "cells")], capsys)[0] == 0
    merged = reports / "matrix" / "merged" / "cells"
    assert (merged / "seed" / "cell.json").is_file()
    status, _, err = run_main(["report", "--reports", str(reports), "--from", str(merged)], capsys)
    assert status == 2 and "copy it elsewhere" in assert_one_line_error(err)
    assert (merged / "seed" / "cell.json").is_file()


@pytest.mark.parametrize("field, value", [("duration_s", "x"), ("from_cache", "yes"), ("axes", ["torch"]),
                                          ("label", 7)])
def test_a_compat_file_with_a_wrong_typed_field_is_one_line(tmp_path, capsys, field, value):
    """report --compat with a cell's duration_s "x" (or another mistyped field): one line naming it, exit 2."""
    data = json.loads(SAMPLE_COMPAT.read_text())
    data["cells"][0][field] = value
    bad = tmp_path / "compat.json"
    bad.write_text(json.dumps(data))
    status, _, err = run_main(["report", "--compat", str(bad), "--reports", str(tmp_path / "r")], capsys)
    assert status == 2 and field in assert_one_line_error(err) and "internal error" not in err


def test_a_missing_interpreter_is_exit_4_not_3(tmp_path):
    """A matrix cell whose interpreter is missing: the machine's fault, exit 4 (environment), as the docs promise."""
    matrix = tmp_path / "m.toml"
    matrix.write_text('schema = "pcgkit.matrix/1"\n[[cell]]\nid = "gone"\nkind = "existing"\n'
                      'interpreter = "/nonexistent/bin/python"\n')
    done = pcgkit(["matrix", "--matrix", str(matrix), "--reports", str(tmp_path / "r")], cwd=tmp_path)
    assert done.returncode == 4, done.stdout[-1500:] + done.stderr[-1500:]
    assert "interpreter missing" in done.stdout + done.stderr


def test_a_bad_saved_index_response_never_says_pass_index_json(tmp_path, capsys):
    """`bin/pcgkit lab discover --index-json DIR` with a broken saved response: a usage line about that file, not
    "check that PyPI is reachable (or pass --index-json DIR ...)", the very option the user passed (was exit 4)."""
    from lab.cli import main as lab_main

    saved = tmp_path / "index"
    saved.mkdir()
    for name in ("flashinfer-python", "torch", "sglang"):
        (saved / f"{name}.json").write_text('{"info": {}}')
    status = lab_main(["discover", "--index-json", str(saved)])
    err = capsys.readouterr().err
    line = assert_one_line_error(err)
    assert status == 2 and "--index-json" in line and "PyPI is reachable" not in line
    assert not re.search(r"pass --index-json", line)


@pytest.mark.parametrize("reason, status", [
    ("interpreter missing: no Python 3.13 on this machine", 4),
    ("network: failed to fetch https://pypi.org/simple/torch/; pins torch==2.9.1 (uv exit 2)", 4),
    ("unknown version: there is no version of torch==9.9; pins torch==9.9 (uv exit 1)", 3),
])
def test_whose_fault_an_install_error_is_decides_the_status(reason, status):
    """An install error the machine caused (no interpreter, no index) is exit 4; one the pins caused is 3."""
    import sys

    from pcgkit.commands.report import matrix_status
    from pcgkit.matrix.cells import EXISTING, Cell
    from pcgkit.matrix.outcome import ERROR, STAGE_INSTALL, CellOutcome

    outcome = CellOutcome(Cell("c1", kind=EXISTING, interpreter=sys.executable), ERROR, 0.0, STAGE_INSTALL, reason)
    assert int(matrix_status([outcome])) == status
