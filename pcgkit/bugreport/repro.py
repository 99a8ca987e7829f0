"""`pcgkit repro CASE`: one case as a standalone reproduction a maintainer runs without pcgkit.

The export is a folder: repro_<mode>.py (PEP 723 pins inline; the case's `reproduce`, the
tracing helper, the signature parser, the mode's matcher and -- for `--simulate` -- the
simulated-SM120 shim, all cut verbatim from the kit's sources by pcgkit.util.sourcegraph),
requirements.txt, and a README with the exact commands and the expected output.
plan_export (pure but for reading the kit's sources) -> write_export (the edge).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import os
import re
from pathlib import Path

from pcgkit import __version__, catalog, resources
from pcgkit.errors import UsageError
from pcgkit.matrix import pins as pins_mod
from pcgkit.matrix.outcome import cells_root
from pcgkit.matrix.plan import DEFAULT_MATRIX_FILE, MatrixError, load_matrix, plan
from pcgkit.util import atomic, untrusted
from pcgkit.util.redact import redact_text, secret_values
from pcgkit.util.sanitize import one_line
from pcgkit.util.sourcegraph import Extractor
from pcgkit.util.templating import render
from pcgkit.verdicts.modes import Mode
from pcgkit.verdicts.result import CaseResult, ResultsFileError, read_results

KIT_ROOT = resources.package_dir().parent  # sourcegraph cuts definitions from pcgkit/*.py below here
REFERENCE_DIR = resources.fixture("reference")
# Distributions a trace-level case needs (sglang is not on the traced path, see fixtures/reference).
PINNED_DISTRIBUTIONS = ("torch", "flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache")
# What the script's driver (templates/repro/script.py.j2) imports itself.
DRIVER_IMPORTS = ("import importlib.metadata", "import json", "import os", "import sys", "import types")
# A CUDA devel image whose Python (Ubuntu 24.04: 3.12) matches the reference cell, with nvcc for
# FlashInfer's JIT; CUDA 12.8 is what the torch 2.9.1 wheel from PyPI is built against.
DOCKER_IMAGE_FOR_PYTHON = {"3.12": "nvidia/cuda:12.8.1-devel-ubuntu24.04"}


@dataclasses.dataclass(frozen=True)
class Pins:
    """Requirements as packaging renders them (pcgkit.util.untrusted): never an option, a URL or a quote."""

    requirements: tuple[str, ...]  # "torch==2.9.1", ...
    python: str  # "3.12"
    source: str  # where they came from, said in the script and README
    hashes: tuple[tuple[str, ...], ...] = ()  # per requirement, from a hashed lock: kept in requirements.txt


@dataclasses.dataclass(frozen=True)
class ReproPlan:
    mode: Mode
    case_file: Path
    simulate: bool
    pins: Pins
    measured: CaseResult | None  # the measured result this export's README quotes as expected

    @property
    def script_name(self) -> str:
        return f"repro_{self.mode.id}.py"


_HASH_RE = re.compile(r"--hash[= ](sha256:[0-9a-f]{64})")


def parse_requirements(text: str, origin: str) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """(requirements, their --hash values) of a requirements file or a hashed lock (backslash
    continuations joined); UntrustedValueError for a pip option, a direct URL or a line that is no
    PEP 508 requirement: what lands in a maintainer's script is a parsed requirement, never raw text. Pure."""
    logical = re.sub(r"\\[ \t]*\n", " ", text)
    requirements, hashes = [], []
    for number, raw in enumerate(logical.splitlines(), 1):
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        found = tuple(_HASH_RE.findall(line))
        spec = _HASH_RE.sub("", line).strip()
        requirements.append(untrusted.pinned_requirement(spec, f"{origin} line {number}"))
        hashes.append(found)
    return tuple(requirements), tuple(hashes) if any(hashes) else ()


def reference_pins() -> Pins:
    return pins_from_file(REFERENCE_DIR / "requirements.txt", (REFERENCE_DIR / "python-version").read_text().strip())


def pins_from_file(path: Path, python: str = "3.12") -> Pins:
    try:
        requirements, hashes = parse_requirements(atomic.read_user_text(path, "--pins"), f"--pins {path}")
        minor = untrusted.python_minor(python, "--python")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--pins {path}: cannot read ({exc}); give a requirements file") from exc
    except untrusted.UntrustedValueError as exc:
        raise UsageError(f"{exc}; give plain `name==version` lines") from exc
    return Pins(requirements, minor, f"pins from {re.sub(r'[^A-Za-z0-9._+-]', '_', path.name)}", hashes)


def pins_from_versions(versions: dict, origin: str) -> Pins:
    """Pins that rebuild the cell a result was measured in; every version parsed as PEP 440 first
    (a results.json may come from anywhere: its versions go into a script a maintainer runs)."""
    try:
        requirements = tuple(f"{name}=={untrusted.pep440_version(versions[name], f'{origin}: {name} version')}"
                             for name in PINNED_DISTRIBUTIONS if versions.get(name))
        python = untrusted.python_minor(versions.get("python") or "3.12", f"{origin}: python")
    except untrusted.UntrustedValueError as exc:
        raise UsageError(f"{exc}; the results file is damaged or crafted: pass --pins instead") from exc
    if not any(r.startswith("torch==") for r in requirements):
        raise UsageError(f"{origin}: the recorded versions name no torch: pass --pins")
    return Pins(requirements, python, f"versions measured in {origin}")


def pins_for_cell(cell_id: str, reports: Path) -> tuple[Pins, Path | None]:
    """A matrix cell's exact pins (as planned from fixtures/matrix.toml), and its results file when
    `pcgkit matrix` has run it under `reports` (the README then quotes that cell's measured output)."""
    try:
        cells = plan(load_matrix(), pins_mod.load_pins(pins_mod.DEFAULT_PINS_FILE), DEFAULT_MATRIX_FILE.parent)
    except (MatrixError, ValueError, OSError) as exc:
        raise UsageError(f"--cell {cell_id}: cannot plan the matrix: {exc}") from exc
    cell = next((c for c in cells if c.id == cell_id), None)
    if cell is None:
        raise UsageError(f"--cell {cell_id}: no such cell; `pcgkit matrix --list` shows them")
    if not cell.torch:
        raise UsageError(f"--cell {cell_id}: an existing-interpreter cell has no pins to export")
    results = cells_root(reports) / cell.id / "results.json"
    return Pins(cell.requirements(), cell.python, f"matrix cell {cell.id} ({cell.label()})"), (
        results if results.exists() else None
    )


def mode_symbol(mode: Mode) -> tuple[str, str]:
    """(module, name) that binds this Mode object, found by identity where its judging rule lives
    (a Mode is declared beside its rule: the script then cuts both from that one module)."""
    module_name = mode.matches.__module__
    for name, value in vars(importlib.import_module(module_name)).items():
        if value is mode and name.isupper():
            return module_name, name
    raise UsageError(f"{mode.id}: no module-level name binds its Mode in {module_name}")


def measured_result(results: list[CaseResult], mode: Mode, simulate: bool) -> CaseResult | None:
    """The result of this mode in the export's kind of cell (simulated or real) that has a verdict."""
    return next((r for r in results if r.mode == mode.id and r.simulated == simulate and r.verdict.is_bug_verdict), None)


def plan_export(case: str, simulate: bool, pins: Pins | None, results_path: Path | None) -> ReproPlan:
    entry = catalog.entry(case)
    if entry is None or not entry.exportable:
        raise UsageError(f"unknown or non-exportable case {case!r}: one of {', '.join(catalog.exportable_ids())}")
    mode = entry.mode
    measured = None
    if results_path is not None:
        try:
            _, results = read_results(results_path)
        except ResultsFileError as exc:
            raise UsageError(f"--results {exc}; give a results.json written by `pcgkit run`") from exc
        measured = measured_result(results, mode, simulate)
        if pins is None and measured is not None:
            pins = pins_from_versions(measured.versions, str(results_path))
    return ReproPlan(mode, resources.cases_dir() / entry.case_module, simulate, pins or reference_pins(), measured)


def render_script(plan: ReproPlan) -> str:
    extractor = Extractor(KIT_ROOT)
    case_module = extractor.module(plan.case_file.stem, plan.case_file)
    mode_module, mode_var = mode_symbol(plan.mode)
    roots = [
        (case_module.name, "reproduce"),
        (mode_module, mode_var),
        ("pcgkit.verdicts.modes", "classify"),
        ("pcgkit.harness.casekit", "cuda_toolkit_root"),
        ("pcgkit.harness.casekit", "NotApplicable"),
        ("pcgkit.harness.casekit", "KitError"),
        ("pcgkit.values.verdict", "Verdict"),
    ]
    if plan.simulate:
        roots.append(("pcgkit.harness.simulate", "simulated_sm120"))
    for module_name, name in roots:
        extractor.require(module_name, name)
    case_doc = ast.get_docstring(ast.parse(plan.case_file.read_text())) or ""
    extract = extractor.extract()
    imports = sorted(set(extract.imports) | set(DRIVER_IMPORTS), key=lambda line: (line.startswith("from"), line))
    return render(
        "repro/script.py.j2",
        mode=plan.mode,
        mode_var=mode_var,
        simulate=plan.simulate,
        pins=plan.pins,
        extract=extract,
        imports=imports,
        case_doc=case_doc,
        case_origin=str(plan.case_file.relative_to(KIT_ROOT)),
        kit_version=__version__,
    )


SIZE_MEASUREMENTS = "measurements/repro-size.json"  # under fixtures/: what installing a pin set downloads and takes


def install_size(pins: Pins, measurements: dict | None = None) -> dict | None:
    """The measured download and installed size of exactly these pins (fixtures/measurements/repro-size.json);
    None when that set was not measured (the README then says so). Pure given `measurements`."""
    data = measurements if measurements is not None else json.loads(resources.fixture(SIZE_MEASUREMENTS).read_text())
    wanted = sorted(pins.requirements)
    return next((m for m in data.get("measurements", ())
                 if sorted(m["requirements"]) == wanted and m["python"] == pins.python), None)


def render_readme(plan: ReproPlan, measurements: dict | None = None) -> str:
    return render(
        "repro/README.md.j2",
        plan=plan,
        mode=plan.mode,
        pins=plan.pins,
        measured=plan.measured,
        size=install_size(plan.pins, measurements),
        docker_image=DOCKER_IMAGE_FOR_PYTHON.get(plan.pins.python),
        kit_version=__version__,
    )


def render_requirements(plan: ReproPlan) -> str:
    header = f"# {one_line(plan.pins.source)}; Python {plan.pins.python}\n"
    # a hashed lock stays hashed: pip then installs in --require-hashes mode
    hashes = plan.pins.hashes or ((),) * len(plan.pins.requirements)
    lines = [" \\\n".join([req, *(f"    --hash={h}" for h in found)]) for req, found in zip(plan.pins.requirements, hashes)]
    return header + "\n".join(lines) + "\n"


def write_export(plan: ReproPlan, out_dir: Path, environ: dict | None = None, force: bool = False) -> list[Path]:
    """The script, requirements.txt and README.md into out_dir; files there that the kit did not
    write are never replaced without force (checked for all three before the first is written)."""
    secrets = secret_values(dict(os.environ if environ is None else environ))
    files = {
        plan.script_name: render_script(plan),
        "requirements.txt": render_requirements(plan),
        "README.md": render_readme(plan),
    }
    folder = atomic.OutputFolder(out_dir, force=force).check(files)
    return [folder.write_text(name, redact_text(text, secrets)) for name, text in files.items()]

