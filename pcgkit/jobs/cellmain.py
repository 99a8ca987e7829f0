"""What runs inside the environment under test (`python -m pcgkit.jobs.cellmain COSTS -- PYTEST-ARGS`).

It imports the subject stack (torch, flashinfer) first, timed, then runs pytest in the same interpreter
(nothing else is imported before pytest starts). An import that fails stops here with one marker line the
parent turns into the cell's `import` error (the exception's last line is the reason); otherwise a marker
line carries the installed versions, and COSTS (a JSON file) records the import and pytest seconds for the
cell's cost breakdown. It ends with quick_exit: the atexit handlers run (child pools stopped, logs flushed)
and the module teardown of a process holding torch and FlashInfer (~1 CPU s here) is skipped.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import sys
import threading
import time
import traceback
from pathlib import Path

IMPORTED = "PCGKIT-IMPORTED "
IMPORT_FAILED = "PCGKIT-IMPORT-FAILED "
IMPORT_FAILED_EXIT = 3
SUBJECT_MODULES = ("torch", "flashinfer")


def main(argv: list[str]) -> int:
    costs_path, pytest_args = Path(argv[0]), argv[argv.index("--") + 1:]
    start = time.perf_counter()
    costs: dict = {}
    try:
        for name in SUBJECT_MODULES:
            __import__(name)
        import pytest
    except BaseException as exc:  # noqa: BLE001 - any import failure is the cell's reason
        traceback.print_exc()
        line = traceback.format_exception_only(type(exc), exc)[-1].strip()
        costs = {"import_s": round(time.perf_counter() - start, 3), "import_error": line}
        costs_path.write_text(json.dumps(costs) + "\n")
        print(IMPORT_FAILED + json.dumps({"error": line}), flush=True)
        return IMPORT_FAILED_EXIT
    costs["import_s"] = round(time.perf_counter() - start, 3)
    from pcgkit.harness.versions import collect_versions

    print(IMPORTED + json.dumps(collect_versions()), flush=True)
    costs_path.write_text(json.dumps(costs) + "\n")  # written now too: a hung pytest still leaves the import cost
    started = time.perf_counter()
    status = int(pytest.main(pytest_args))
    costs["pytest_s"] = round(time.perf_counter() - started, 3)
    costs_path.write_text(json.dumps(costs) + "\n")
    return status


def quick_exit(status: int) -> None:
    """Leave now with `status`, as a normal exit would but without tearing every module down: stdio and
    logging flushed, the atexit handlers run; a normal exit when a non-daemon thread is still running
    (the interpreter would wait for it)."""
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(status)
    logging.shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken pipe: nothing left to say on it
            pass
    os._exit(status)


if __name__ == "__main__":
    quick_exit(main(sys.argv[1:]))
