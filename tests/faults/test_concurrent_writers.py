"""Concurrent writers: processes writing one cell.json at once never race on a temp file, a reader
never sees half a file, and nothing is left behind."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from .helpers import REPO_ROOT, kit_env

WRITER = textwrap.dedent("""\
    import sys
    from pathlib import Path
    from tests.faults.helpers import ran_cell
    from pcgkit.matrix.outcome import write_outcome
    path, tag = Path(sys.argv[1]), sys.argv[2]
    for i in range(40):
        write_outcome(path, ran_cell("same", reason=f"{tag}-{i}-" + "x" * 4000))
    """)


def test_parallel_writers_of_one_cell_json(tmp_path):
    """Three processes x 40 writes of a 4 kB cell.json while this test reads: every read is whole JSON."""
    path = tmp_path / "cells" / "same" / "cell.json"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{n}"], cwd=REPO_ROOT, env=kit_env(),
                                stderr=subprocess.PIPE, text=True) for n in range(3)]
    reads = 0
    while any(w.poll() is None for w in writers):
        if path.exists():
            data = json.loads(path.read_text())  # raises on a torn file
            assert data["results"][0]["reason"].endswith("x" * 100)
            reads += 1
    for writer in writers:
        assert writer.wait() == 0, writer.stderr.read()
    assert reads > 0
    assert [p.name for p in path.parent.iterdir()] == ["cell.json"]  # no temp file left behind
