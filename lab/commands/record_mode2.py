"""`bin/pcgkit lab record-mode2 RESULTS`: keep the mode-2 case's two measured process states (JIT spec registered or
not) from a results file in fixtures/measurements/mode2-condition.json."""

from __future__ import annotations

import argparse
from pathlib import Path

from lab.commands import write_fixture
from pcgkit import resources
from pcgkit.advice.load import MODE2_FILE, MODE2_SCHEMA
from pcgkit.errors import UsageError
from pcgkit.util import atomic


def mode2_record(results: dict, source: str) -> dict:
    """The mode-2 condition file's content from a pcgkit results file (`bin/pcgkit lab record-mode2`). Pure.

    Keeps, per mode2 result that measured both process states (evidence `jit_spec_condition`), its
    versions, device and the two stop locations; ValueError when the results hold none.
    """
    kept = [{"versions": {k: v for k, v in r.get("versions", {}).items() if v}, "device": r["device"].get("label", ""),
             "simulated": bool(r.get("simulated")), "verdict": r.get("verdict"),
             "jit_spec_condition": r["evidence"]["jit_spec_condition"]}
            for r in results.get("results", ())
            if r.get("mode") == "mode2" and "registered" in (r.get("evidence") or {}).get("jit_spec_condition", {})]
    if not kept:
        raise ValueError(f"{source}: no mode2 result measured both ways (evidence jit_spec_condition); run the mode2 case")
    return {"schema": MODE2_SCHEMA, "date": str(results.get("created", ""))[:10], "source": source, "results": kept}



def _record_mode2(args: argparse.Namespace) -> int:

    results = atomic.read_json_object(Path(args.results), "results file")
    try:
        record = mode2_record(results, args.how or f"results file {Path(args.results).name}")
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    write_fixture("bin/pcgkit lab record-mode2", args.out, resources.fixtures_dir().parent / MODE2_FILE, record,
                  "mode 2 condition recorded in")
    return 0


def register(subparsers) -> None:
    mode2 = subparsers.add_parser("record-mode2", help="record the mode-2 case's two process states from a results file",
                           description="Record the mode-2 case's two measured process states (JIT spec registered or not) from a results file.",
                           epilog="example:\n  %(prog)s reports/results.json")
    mode2.add_argument("results", help="a results.json holding the mode2 case's result")
    mode2.add_argument("--how", help="the command that produced the results (recorded beside them)")
    mode2.add_argument("--out", help="write here instead of fixtures/measurements/mode2-condition.json")
    mode2.set_defaults(func=_record_mode2)
