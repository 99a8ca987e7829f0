"""pcgkit.jobs.cellmain.quick_exit: the status kept, atexit handlers run, buffered output flushed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CODE = """
import atexit, sys
from pathlib import Path
from pcgkit.jobs.cellmain import quick_exit
atexit.register(lambda: Path(sys.argv[1]).write_text("ran"))
sys.stdout.write("buffered, no newline")
quick_exit(5)
print("never")
"""


def test_quick_exit_keeps_the_status_runs_atexit_and_flushes(tmp_path: Path):
    """Exit status 5, the atexit handler's file written, the unterminated stdout line delivered."""
    marker = tmp_path / "atexit"
    done = subprocess.run([sys.executable, "-c", CODE, str(marker)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, marker.read_text()) == (5, "buffered, no newline", "ran")
