"""The floor for a matrix cell or `pcgkit run`: import torch + flashinfer, then do the very traces
every case of the cell performs on the simulated target, bare: each case module's own
`reproduce*` function, called once under the same simulation, with no pytest, no plugin, no
verdicts, no evidence files, no reports. So the floor never does less than the cell (issue 16).

    python benchmarks/floor_traces.py [MODE ...]      # default: every case in the catalog but e2e
Prints one JSON line: {"import_s": ..., "traces_s": {mode: seconds}, "total_s": ...}.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import warnings

START = time.perf_counter()
import flashinfer  # noqa: E402,F401 - the imports are part of the floor
import torch  # noqa: E402,F401

IMPORT_S = time.perf_counter() - START

from pcgkit import resources  # noqa: E402
from pcgkit.catalog import BY_ID, CATALOG, Family  # noqa: E402
from pcgkit.harness.casekit import CaseContext, cuda_toolkit_root  # noqa: E402
from pcgkit.harness.hardware import SIMULATED_SM120  # noqa: E402
from pcgkit.harness.simulate import simulated_sm120  # noqa: E402
from pcgkit.values.targets import SIM_SM120  # noqa: E402

# the case modules that hold more than one case name their reproduce functions per case
REPRODUCE = {"sglang-compile-sm120": "reproduce_sm120", "sglang-compile-sm90": "reproduce_other_family"}


def bare(mode: str) -> float:
    """One case's reproduce() under the simulation, as the plugin calls it; seconds (errors ignored)."""
    entry = BY_ID[mode]
    path = resources.cases_dir() / entry.case_module
    spec = importlib.util.spec_from_file_location(f"_floor_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    start = time.perf_counter()
    try:
        spec.loader.exec_module(module)
        reproduce = getattr(module, REPRODUCE.get(mode, "reproduce"))
        ctx = CaseContext(SIM_SM120, SIMULATED_SM120, "cpu")
        with simulated_sm120():
            reproduce(ctx)
    except BaseException:  # noqa: BLE001 - a failing trace is the expected outcome; the cost is what counts
        pass
    return time.perf_counter() - start


def main(modes: list[str]) -> int:
    warnings.simplefilter("ignore")
    if cuda_toolkit_root() and not os.environ.get("CUDA_HOME"):
        os.environ["CUDA_HOME"] = cuda_toolkit_root()  # as the plugin does
    modes = modes or [e.id for e in CATALOG if e.family is not Family.E2E]
    traces = {mode: round(bare(mode), 3) for mode in modes}
    print(json.dumps({"import_s": round(IMPORT_S, 3), "traces_s": traces, "total_s": round(time.perf_counter() - START, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
