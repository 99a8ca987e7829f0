"""The backend seam: a backend is one module and one registry line; the runner's loop does the rest."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import types
from pathlib import Path

from pcgkit.matrix import backends
from pcgkit.matrix.backends.base import BackendConfig, CaseRequest, CasesRan
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import RAN, read_outcome
from pcgkit.matrix.runner import run_matrix
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import CaseResult, write_results


def _echo_backend() -> types.ModuleType:
    """A backend in a few lines: no environment to prepare; its case run writes each expected case's
    row with the verdict its option names, as `pcgkit run` would leave them."""
    module = types.ModuleType("pcgkit_echo_backend")
    module.SUMMARY = "answers every case with --echo-verdict, running nothing"  # type: ignore[attr-defined]

    @dataclasses.dataclass
    class Echo:
        verdict: str
        prepare_stage: str = "install"
        installed: tuple = ()
        lock: dict = dataclasses.field(default_factory=dict)
        provenance: dict = dataclasses.field(default_factory=lambda: {"backend": "echo"})
        result_evidence: dict = dataclasses.field(default_factory=dict)

        def check_machine(self, cells) -> None: ...

        def prepared(self, ctx):
            return contextlib.nullcontext(self)

        def run_cases(self, request: CaseRequest) -> CasesRan:
            rows = [CaseResult(m, "sim-sm120", Verdict(self.verdict), "echo backend", {"label": "no device"}, {}, 0.0)
                    for m in request.expected_modes]
            write_results(request.reports_dir / "results.json", rows, {"versions": {"torch": "echo"}})
            return CasesRan(ok=True)

    module.add_options = lambda parser: parser.add_argument("--echo-verdict", default="fixed")  # type: ignore[attr-defined]
    module.make_backend = lambda args: Echo(args.echo_verdict)  # type: ignore[attr-defined]
    return module


def test_a_registered_backend_brings_its_options_and_runs_cells_through_the_one_loop(monkeypatch, tmp_path: Path):
    """One registry line makes `--backend echo` and its option exist, and run_matrix writes its cells' outcomes."""
    module = _echo_backend()
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(backends.BACKENDS, "echo", module.__name__)
    parser = argparse.ArgumentParser()
    backends.add_options(parser)
    args = parser.parse_args(["--backend", "echo", "--echo-verdict", "reproduced"])
    assert "echo: answers every case" in " ".join(parser.format_help().split())
    config = BackendConfig(cells_root=tmp_path / "cells", backend=args.backend, expected_modes=("mode1",))
    cell = Cell("c", flashinfer="0.6.1", torch="2.9.1")
    outcomes = run_matrix([cell], config, jobs=1, run=backends.runner(args.backend, args), show_progress=False, expected=())
    assert [(o.status, [r.verdict for r in o.results]) for o in outcomes] == [(RAN, [Verdict.REPRODUCED])]
    stored = read_outcome(tmp_path / "cells" / "c" / "cell.json")
    assert stored is not None and stored.results[0].reason == "echo backend"
    assert stored.versions == {"torch": "echo"} and stored.provenance["backend"] == "echo"


def test_every_registered_backend_declares_how_help_describes_it():
    """Each backend module the registry names has a SUMMARY and a make_backend (the registry's whole contract)."""
    import importlib

    for name, module_name in backends.BACKENDS.items():
        module = importlib.import_module(module_name)
        assert module.SUMMARY and callable(module.make_backend), name
