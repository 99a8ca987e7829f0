"""Derive fixtures/matrix_snapshot.json (package data) from a matrix run's compat.json.

`pcgkit triage` answers offline, so it reads this snapshot of the kit's newest matrix, never a
report folder. Regenerate after a new matrix run:

    python -m lab.triage.snapshot reports/samples/matrix-2026-12-01/compat.json fixtures/matrix_snapshot.json

`snapshot()` is pure (compat dict in, snapshot dict out); only main() reads and writes files.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pcgkit.values.runcheck import says_call_path_ran

SCHEMA = "pcgkit.matrix-snapshot/1"


def snapshot(compat: dict, source: str) -> dict:
    """The per-cell versions and verdicts triage needs, with the run's date and whether it was simulated. Pure."""
    cells = []
    for cell in compat["cells"]:
        modes = cell.get("modes") or {}
        ran = [m for m in modes.values() if m.get("verdict") not in ("skipped", "error", None)]
        cells.append({
            "id": cell["id"],
            "sglang": cell["axes"].get("sglang"),
            "flashinfer-python": cell["axes"].get("flashinfer-python"),
            "torch": cell["axes"].get("torch"),
            "device": cell.get("device", ""),
            "simulated": any(m.get("simulated") for m in ran),
            "verdicts": {mode: result["verdict"] for mode, result in sorted(modes.items())},
            # the `fixed` verdicts whose call path ran (their reason says so); any other `fixed` only traced
            "ran": sorted(mode for mode, result in modes.items()
                          if result.get("verdict") == "fixed" and says_call_path_ran(result.get("reason"))),
            # the cell's recorded wall time and whether it ran: the nightly's cost is derived from these (pcgkit.ci.costs)
            "duration_s": cell.get("duration_s"),
            "status": cell.get("status"),
            # the date this cell was measured (a cell re-run later than the matrix carries its own); None: unrecorded
            "measured": str(cell.get("finished") or "")[:10] or None,
        })
    simulated = sorted({c["device"] for c in cells if c["simulated"]})
    return {
        "schema": SCHEMA,
        "matrix_created": compat.get("created"),
        "source": source,
        "simulated": bool(simulated),
        "simulated_devices": simulated,
        "note": "verdicts of the kit's matrix; simulated cells answered SM120 hardware queries without an SM120 GPU",
        "cells": cells,
    }


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m lab.triage.snapshot COMPAT_JSON OUT_JSON", file=sys.stderr)
        return 2
    compat_path, out = Path(args[0]), Path(args[1])
    data = snapshot(json.loads(compat_path.read_text()), source=str(compat_path))
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}: {len(data['cells'])} cells from {compat_path} (matrix of {data['matrix_created']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
