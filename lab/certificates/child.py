"""`python -m lab.certificates.child RUSAGE_JSON (pcgkit|lab) ARGS...`: one kit command in this interpreter (a
release's environment), then its CPU time written to RUSAGE_JSON.

`bin/pcgkit lab certificates` starts each release's commands through pcgkit.util.proc, several at once with
--jobs, so the parent's RUSAGE_CHILDREN would mix them: each command measures itself instead (this process,
every thread of torch's included, plus the children it waited for), with no process in between, so a stop
signal reaches the command itself. The command runs through its own CLI's `main` (the one error path)."""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path


def cpu_seconds() -> dict[str, float]:
    """User and system seconds of this process and of the children it waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"user_s": round(own.ru_utime + children.ru_utime, 2), "system_s": round(own.ru_stime + children.ru_stime, 2)}


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] not in ("pcgkit", "lab"):
        print("usage: python -m lab.certificates.child RUSAGE_JSON (pcgkit|lab) ARGS...", file=sys.stderr)
        return 2
    record, which, args = Path(argv[0]), argv[1], argv[2:]
    if which == "lab":
        from lab.cli import main as command
    else:
        from pcgkit.cli import main as command
    start = time.perf_counter()
    code = 1
    try:
        code = command(args)
    except SystemExit as exc:  # argparse's usage error
        code = exc.code if isinstance(exc.code, int) else 1
        raise
    finally:
        record.write_text(json.dumps({"argv": [which, *args], "exit": code,
                                      "wall_s": round(time.perf_counter() - start, 2), **cpu_seconds()}))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
