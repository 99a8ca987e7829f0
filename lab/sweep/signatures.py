"""Record the installed release's signature of every spec's entry point (data for reviewing the spec
table against each release): `python -m lab.sweep.signatures [--out DIR]` writes
lab/sweep/signatures/flashinfer-<version>.json. Needs torch and flashinfer; imports only."""

from __future__ import annotations

import argparse
from pathlib import Path

from pcgkit.sweep.engine import MissingTarget, installed_versions, resolve, signature_text
from pcgkit.sweep.specs import load_specs
from pcgkit.util import atomic

SCHEMA = "pcgkit.sweep-signatures/1"


def collect() -> dict:
    flashinfer_version, torch_version = installed_versions()
    entries = {}
    for spec in load_specs():
        try:
            entries[spec.id] = {"target": spec.target, "signature": signature_text(resolve(spec.target))}
        except (MissingTarget, ImportError) as exc:
            entries[spec.id] = {"target": spec.target, "signature": None, "missing": str(exc)}
    return {"schema": SCHEMA, "flashinfer": flashinfer_version, "torch": torch_version, "entries": entries}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m lab.sweep.signatures")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "signatures")
    out = parser.parse_args().out
    data = collect()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"flashinfer-{data['flashinfer']}.json"
    atomic.write_json(path, data, indent=1)
    print(path)


if __name__ == "__main__":
    main()
