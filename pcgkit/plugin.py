"""The pytest plugin: markers, hardware gating, the case runner, and result recording.

It assembles (top floor): a case's verdict against its baseline becomes the pytest outcome by the
one policy in pcgkit.harness.judging; the run's summary comes from pcgkit.report.summary.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import traceback
from pathlib import Path
from typing import Callable

import pytest

from pcgkit.errors import UsageError as PcgkitUsageError
from pcgkit.harness import archpaths, hardware, pathevidence
from pcgkit.harness.casekit import (
    TARGETS,
    CaseContext,
    CaseTimeout,
    KitError,
    MissingDependency,
    NotApplicable,
    Target,
    cuda_toolkit_root,
    deadline,
)
from pcgkit.harness.judging import record
from pcgkit.harness.pathevidence import PathEvidence
from pcgkit.harness.pathrecord import TraceRecording, record_inlined_calls
from pcgkit.harness.versions import collect_versions
from pcgkit.values import targets
from pcgkit.values.trace import TraceOutcome
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.expectations import expected_for, load_expectations
from pcgkit.verdicts.modes import Mode, classify
from pcgkit.verdicts.result import JUNIT_RESULT_PROPERTY, CaseResult, result_dict, write_result_dicts

MARKERS: dict[str, str] = targets.PYTEST_MARKERS  # declared with the targets (`run -m` checks against it)

_collector_key = pytest.StashKey["ResultCollector"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pcgkit")
    group.addoption(
        "--pcgkit-require-hardware",
        action="append",
        default=[],
        choices=targets.HARDWARE_MARKERS,
        help="this runner HAS this hardware: a missing-hardware skip for it becomes a failure (GPU runners)",
    )
    group.addoption("--pcgkit-json", default=None, help="write the case results (pcgkit.results/1 JSON) here")
    group.addoption(
        "--pcgkit-simulate-arch",
        choices=sorted(targets.SIMULATED_BY_ARCH),
        default=os.environ.get("PCGKIT_SIMULATE_ARCH") or None,
        help="simulate this arch instead of SM120 on the cpu_sim target (e.g. sm90, to compare with a real "
             "H200 in `pcgkit parity`); env PCGKIT_SIMULATE_ARCH",
    )
    group.addoption(
        "--pcgkit-scope",
        default="all",
        help="run only the cases of this matrix-cell scope (pcgkit.matrix.cells.SCOPES), e.g. "
             "'sglang-level' in a cell that exists for one SGLang release's own cases",
    )
    group.addoption(
        "--pcgkit-case-timeout",
        type=float,
        default=float(os.environ.get("PCGKIT_CASE_TIMEOUT", "600")),
        help="seconds before a hung case is stopped and reported as an error (default 600)",
    )


def pytest_configure(config: pytest.Config) -> None:
    try:  # the user edits the baseline: a broken one is one usage line before any case runs, not a case error each
        load_expectations()
    except PcgkitUsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    for name, description in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {description}")
    collector = ResultCollector(config)
    config.stash[_collector_key] = collector
    config.pluginmanager.register(collector, "pcgkit-results")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every case that asks for `target` runs once per target: simulated, any GPU, SM120."""
    if "target" in metafunc.fixturenames:
        arch = metafunc.config.getoption("--pcgkit-simulate-arch")
        simulated = targets.SIMULATED_BY_ARCH[arch] if arch else targets.SIM_SM120
        # A case that runs on its own set of targets (the end-to-end launch: SM120 and the hybrid) names them.
        own = getattr(metafunc.module, "TARGETS", None)
        chosen = list(own) if own else [simulated if t is targets.SIM_SM120 else t for t in TARGETS]
        metafunc.parametrize(
            "target",
            [pytest.param(t, id=t.id, marks=getattr(pytest.mark, t.marker)) for t in chosen],
        )


def item_mode(item: pytest.Item) -> Mode | None:
    """The Mode a collected case reports: the test function's own (a module with two modes), else the module's MODE."""
    mode = getattr(getattr(item, "function", None), "pcgkit_mode", None) or (
        getattr(item.module, "MODE", None) if hasattr(item, "module") else None)
    return mode if isinstance(mode, Mode) else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--pcgkit-scope: deselect the cases outside the scope's families (the catalog says which)."""
    scope = config.getoption("--pcgkit-scope")
    if scope == "all":
        return
    from pcgkit.catalog import SCOPE_FAMILIES, modes_in_scope

    if scope not in SCOPE_FAMILIES:
        raise pytest.UsageError(f"--pcgkit-scope {scope!r}: expected one of {', '.join(SCOPE_FAMILIES)}")
    wanted = modes_in_scope(scope)
    kept = [i for i in items if (m := item_mode(i)) is not None and m.id in wanted]
    dropped = [i for i in items if i not in kept]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker in targets.HARDWARE_MARKERS:
        if item.get_closest_marker(marker) is None:
            continue
        # Detected only for hardware-marked items: detection imports torch (seconds), which
        # tests without a hardware marker must not pay for.
        reason = hardware.missing_hardware_reason(marker, hardware.detect_cuda_devices())
        if reason is None:
            continue
        required = item.config.getoption("--pcgkit-require-hardware")
        if marker in required or marker in os.environ.get("PCGKIT_REQUIRE_HARDWARE", "").split(","):
            pytest.fail(f"{reason} (this runner was told it has {marker}: --pcgkit-require-hardware)", pytrace=False)
        pytest.skip(reason)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    # A case stopped in setup still produces a result row: "skipped" for missing hardware, "error"
    # when this runner was told it has that hardware (--pcgkit-require-hardware). It did not run.
    mode = item_mode(item)
    callspec = getattr(item, "callspec", None)
    target = callspec.params.get("target") if callspec is not None else None
    # A case that runs on one target only (the end-to-end launch) names it as module-level TARGET.
    target = target or (getattr(item.module, "TARGET", None) if hasattr(item, "module") else None)
    stopped = report.skipped or report.failed
    if call.when == "setup" and stopped and mode is not None and isinstance(target, Target):
        if report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
            reason = reason.removeprefix("Skipped: ")
        else:
            reason = f"did not run: {report.longreprtext.strip()[-500:]}"
        result = CaseResult(
            mode=mode.id,
            variant=target.id,
            verdict=Verdict.SKIPPED if report.skipped else Verdict.ERROR,
            reason=reason,
            device={"name": "not run here", "compute_capability": None, "simulated": False, "label": "not run here"},
            versions=collect_versions(),
            duration_s=0.0,
            nodeid=item.nodeid,
        )
        report.user_properties.extend(result.junit_properties())
        # JUnit XML takes a testcase's properties from its *teardown* report, which copies
        # item.user_properties: without this the skipped rows would have none.
        item.user_properties.extend(result.junit_properties())
    return report


@dataclasses.dataclass(frozen=True)
class CaseRunner:
    """Runs one case's reproduce() under its target and turns the outcome into a verdict."""

    request: pytest.FixtureRequest
    target: Target

    def run(self, mode: Mode, reproduce: Callable[[CaseContext], TraceOutcome]) -> CaseResult:
        start = time.perf_counter()
        versions = collect_versions()
        device = initial_device = hardware.SIMULATED_ARCHES[self.target.arch or "sm120"]
        signature = None
        evidence: dict = {}
        try:
            with deadline(self.request.config.getoption("--pcgkit-case-timeout")):
                if not self.target.simulated:
                    device = hardware.first_device(self.target.marker, hardware.detect_cuda_devices())
                ctx = CaseContext(self.target, device, "cpu" if self.target.simulated else "cuda:0", evidence)
                mp = pytest.MonkeyPatch()
                try:
                    toolkit = cuda_toolkit_root()
                    if toolkit and not os.environ.get("CUDA_HOME"):
                        # FlashInfer finds nvcc through CUDA_HOME; without it the trace dies one frame
                        # earlier, in get_cuda_path's `which nvcc`. Set it like a CUDA machine would.
                        mp.setenv("CUDA_HOME", toolkit)
                    evidence["CUDA_HOME"] = toolkit
                    outcome, path = _run_reproduce(ctx, reproduce)
                finally:
                    device = ctx.device  # a case may re-target (the SGLang case's simulated SM90 run)
                    mp.undo()
            versions = collect_versions()  # torch is imported now: adds torch.version.cuda
            signature = outcome.signature
            verdict, reason = classify(mode, outcome)
            claimed = device
            if self.target.simulated and self.target.arch and device is initial_device:
                # The target's arch id says what it claims to be, not the simulated-device table
                # the simulation itself answers from: a wrong entry there must not agree with itself.
                claimed = dataclasses.replace(device, capability=archpaths.capability_of(self.target.arch))
            checked = _path_evidence(claimed, path, signature, versions)
            evidence.update(checked.evidence)
            device = checked.device or device
            if checked.problem:  # a verdict of the wrong arch's path is no verdict about this one
                verdict, reason = Verdict.ERROR, f"{checked.problem} (the trace said: {verdict.value}: {reason})"
            evidence.update(
                trace_s=round(outcome.duration_s, 3),
                lru_cache_warnings=len(outcome.lru_cache_warnings),
                graph_breaks=outcome.graph_breaks,
            )
        except NotApplicable as exc:
            verdict, reason = Verdict.NOT_APPLICABLE, str(exc)
        except MissingDependency as exc:
            verdict, reason = Verdict.SKIPPED, str(exc)
        except CaseTimeout as exc:
            verdict, reason = Verdict.ERROR, f"hung: {exc}"
        except ImportError as exc:
            verdict, reason = Verdict.ERROR, f"broken install: import failed: {type(exc).__name__}: {exc}"
        except KitError as exc:
            verdict, reason = Verdict.ERROR, str(exc)
        except Exception as exc:  # anything else is the kit's or the install's fault, never the bug's
            verdict, reason = Verdict.ERROR, f"unexpected {type(exc).__name__} in case: {exc}"
            evidence["traceback_tail"] = traceback.format_exc()[-2000:]
        expectation = expected_for(mode.id, versions, load_expectations(), self.target.id)
        result = CaseResult(
            mode=mode.id,
            variant=self.target.id,
            verdict=verdict,
            reason=reason,
            device=device.to_dict(),
            versions=versions,
            duration_s=round(time.perf_counter() - start, 3),
            signature=signature,
            expected=expectation.expect.value if expectation else None,
            evidence=evidence,
            nodeid=self.request.node.nodeid,
        )
        record(self.request.node, result, expectation)
        return result


@dataclasses.dataclass(frozen=True)
class _RecordedPath:
    recording: TraceRecording
    told: tuple[tuple[str, object], ...]  # the simulation's stand-in calls that really ran


def _run_reproduce(
    ctx: CaseContext, reproduce: Callable[[CaseContext], TraceOutcome]
) -> tuple[TraceOutcome, _RecordedPath]:
    """Run the case with the trace's path recorded; simulated targets answer as ctx.device's arch."""
    with record_inlined_calls() as recording:
        if not ctx.simulated:
            return reproduce(ctx), _RecordedPath(recording, ())
        from pcgkit.harness.simulate import simulated_sm120

        with simulated_sm120(capability=ctx.device.capability) as simulation:
            ctx.evidence["simulated_queries"] = list(simulation.replaced)
            outcome = reproduce(ctx)
        return outcome, _RecordedPath(recording, tuple(simulation.told))


def _path_evidence(device: hardware.Device, path: _RecordedPath, signature, versions: dict) -> PathEvidence:
    """What the trace was told and chose, judged against the arch `device` claims (simulated only)."""
    row, note = archpaths.row_for(versions.get("flashinfer-python"), archpaths.load_rows(), versions.get("torch_cuda"))
    return pathevidence.build(
        claimed=device, calls=path.recording.calls, recorder=path.recording.how, told=path.told,
        frames=signature.frame_chain if signature is not None else (), row=row, row_note=note,
    )


@pytest.fixture
def pcgkit_case(request: pytest.FixtureRequest, target: Target) -> CaseRunner:
    """Runs a case's reproduce() on the parametrized target and records its verdict."""
    return CaseRunner(request, target)


def _environment() -> dict:
    return {
        "versions": collect_versions(),
        "devices": [d.to_dict() for d in hardware.detect_cuda_devices()],
        "cuda_home": cuda_toolkit_root(),
        "pcgkit": __import__("pcgkit").__version__,
    }


class ResultCollector:
    """Per-run state (in config.stash): gathers CaseResults from report.user_properties (xdist ships them to the
    controller, so -n or not is the same). The controller rewrites the results file as each case finishes, so a
    hang no timeout interrupts (native code holding SIGALRM) loses only that case; the modes collected are recorded
    first (`environment.selected_modes`), so the caller can name the cases that never reported."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.results: dict[str, CaseResult] = {}
        self._dicts: dict[str, dict] = {}  # each result as the file holds it, made once (result_dict)
        self.selected_modes: list[str] | None = None
        self._environment: dict | None = None

    def _path(self) -> Path | None:
        if hasattr(self.config, "workerinput"):  # xdist worker: only the controller writes files
            return None
        path = self.config.getoption("--pcgkit-json")
        return Path(path) if path else None

    def _write(self, complete: bool) -> None:
        path = self._path()
        if path is None:
            return
        if self._environment is None:
            self._environment = _environment()
        environment = {**self._environment, "complete": complete}
        if self.selected_modes is not None:
            environment["selected_modes"] = self.selected_modes
        ordered = sorted(self.results, key=lambda nodeid: (self.results[nodeid].mode, self.results[nodeid].variant))
        write_result_dicts(path, [self._dicts[nodeid] for nodeid in ordered], environment)  # write_results' order

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        modes = {getattr(getattr(getattr(item, "module", None), "MODE", None), "id", None) for item in session.items}
        self.selected_modes = sorted(m for m in modes if isinstance(m, str))
        self._write(complete=False)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == JUNIT_RESULT_PROPERTY and report.nodeid not in self.results:
                result = self.results[report.nodeid] = CaseResult.from_dict(json.loads(str(value)))
                self._dicts[report.nodeid] = result_dict(result)
                self._write(complete=False)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self._write(complete=True)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.results:
            return
        from pcgkit.report.summary import console_lines

        terminalreporter.section("pcgkit verdicts")
        for line in console_lines(list(self.results.values())):
            terminalreporter.write_line(line)
