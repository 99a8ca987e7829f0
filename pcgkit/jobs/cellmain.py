"""What runs inside the environment under test (`python -m pcgkit.jobs.cellmain COSTS -- PYTEST-ARGS`).

One interpreter does both jobs the kit used to start two for: it imports the subject stack
(torch, flashinfer) first, timed, and only then runs pytest in-process. An import that fails
stops here with one marker line the parent turns into the cell's `import` error (the exception's
last line is the reason); otherwise a marker line carries the installed versions, and COSTS (a
JSON file) records the import and pytest seconds for the cell's cost breakdown.
Only the standard library, the subject stack and pytest are imported before pytest starts.
"""

from __future__ import annotations

import json
import sys
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
