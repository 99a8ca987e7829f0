"""Run the sweep, the edge (imports torch and flashinfer): for each spec and simulated arch, import the entry point,
build its inputs on CPU, trace it (pcgkit.harness.tracing, fullgraph=True, the graph never run) under the simulation
and the no-kernel guard (pcgkit.sweep.guard says how "no real kernel" is guaranteed), and classify. A wrapper's
constructor and plan() run first, eagerly, in the simulated set-up (pcgkit.sweep.setupsim).

`real=True` (`pcgkit sweep --real`, a GPU host): inputs on cuda:0, no simulation, no guard, so a wrapper's
constructor and plan() run for real (JIT builds included); the graph is still never run. The arch is the device's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import time
from typing import Any, Callable, Iterable, Sequence

from pcgkit.harness.casekit import CaseTimeout, deadline
from pcgkit.harness.hardware import SIMULATED_ARCHES, Device
from pcgkit.sweep.classify import SIMULATION_GAP_MARKERS, Classification, Observation, classify, verdict_for
from pcgkit.sweep.guard import KernelLoadRefused, no_kernels
from pcgkit.sweep.inputs import InputBuildError, build_call
from pcgkit.sweep.specs import EntrySpec

ENTRY_DEADLINE_S = 120.0
REAL_ENTRY_DEADLINE_S = 300.0  # plan() may JIT-build its module with nvcc (~15-60 s each)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClassifiedRow:
    """What every swept row carries (an entry point here, an SGLang method in lab.sweep.sglang_methods)."""

    arch: str
    torch: str
    classification: Classification
    verdict: str
    simulation_replaced: tuple[str, ...]
    refused: tuple[tuple[str, str, bool], ...]
    signature: dict | None
    duration_s: float

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["classification"] = self.classification.to_dict()
        return data


@dataclasses.dataclass(frozen=True, kw_only=True)
class SweepResult(ClassifiedRow):
    entry_id: str
    family: str
    target: str
    device: dict
    flashinfer: str
    expected: str | None  # the public expectation's behaviour for this release, if any
    expectation_link: str | None
    installed_signature: str | None


class MissingTarget(Exception):
    """The installed release has no such entry point."""


def resolve(target: str) -> Any:
    """'flashinfer.rmsnorm' / 'flashinfer.Class.method' / 'torch.ops.flashinfer.op' -> the object."""
    if target.startswith("torch.ops."):
        import torch

        namespace, _, op = target.removeprefix("torch.ops.").partition(".")
        if not hasattr(getattr(torch.ops, namespace), op):
            raise MissingTarget(f"torch.ops.{namespace} has no {op!r} in this release")
        return getattr(getattr(torch.ops, namespace), op)
    parts = target.split(".")
    obj: Any = importlib.import_module(parts[0])
    for depth, name in enumerate(parts[1:], start=1):
        if not hasattr(obj, name):
            raise MissingTarget(f"{'.'.join(parts[:depth])} has no attribute {name!r}")
        obj = getattr(obj, name)
    return obj


def signature_text(obj: Any) -> str | None:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        schema = getattr(getattr(obj, "default", None), "_schema", None)
        return str(schema) if schema is not None else None


def graph_op_names(graphs: Iterable[Any]) -> tuple[str, ...]:
    import torch

    names = []
    for graph_module in graphs:
        for node in graph_module.graph.nodes:
            if node.op != "call_function":
                continue
            target = node.target
            if isinstance(target, torch._ops.OpOverload):
                names.append(target.name())  # "flashinfer::fp4_quantize"
            elif isinstance(target, torch._ops.OpOverloadPacket):
                names.append(target._qualified_op_name)
            else:
                names.append(f"{getattr(target, '__module__', '?')}.{getattr(target, '__name__', str(target))}")
    return tuple(names)


class SetupFailed(Exception):
    """An eager set-up step failed; `needs_gpu` when it needs what only a GPU has (a `needs-gpu` result, not an error)."""

    def __init__(self, message: str, needs_gpu: bool):
        super().__init__(message)
        self.needs_gpu = needs_gpu


def eager_setup(name: str, step: Callable, markers: tuple[str, ...] = (),
                gpu_errors: tuple[type[BaseException], ...] = ()) -> Any:
    """step(), the one guard of an eager set-up step before a trace (a constructor, plan(), a layer's weights; the
    sweep, SGLang's method sweep and preflight's probe): a refused kernel load, a simulation gap
    (SIMULATION_GAP_MARKERS) or the caller's own `markers` / `gpu_errors` are a GPU need; anything else is the
    step's own failure on this host. Either way SetupFailed, naming the step."""
    needs: tuple[type[BaseException], ...] = (KernelLoadRefused, *gpu_errors)
    try:
        return step()
    except needs as exc:
        raise SetupFailed(f"{name} needs a GPU: {exc}", needs_gpu=True) from exc
    except Exception as exc:  # noqa: BLE001 - a set-up failure is reported as data, never raised past the caller
        text = f"{type(exc).__name__}: {str(exc)[:200]}"
        needs_gpu = any(marker in str(exc) for marker in SIMULATION_GAP_MARKERS + markers)
        raise SetupFailed(f"{name} failed {'eagerly (a GPU need)' if needs_gpu else 'on this host'}: {text}",
                          needs_gpu) from exc


def build_callable(spec: EntrySpec, obj: Any, device: str, simulate_setup: bool = False) -> tuple[Callable, tuple[str, ...]]:
    """(the function to trace: the entry point itself, or a bound method of an eagerly built instance; what the
    simulation stood in for while building it). `simulate_setup` (a CPU host): the constructor and plan() run
    inside pcgkit.sweep.setupsim's simulated set-up (page-locked buffers, the JIT build, the host planner)."""
    if spec.construct is None:
        return obj, ()
    from pcgkit.sweep.setupsim import SETUP_GAP_MARKERS, simulated_setup

    cls = resolve(spec.target.rsplit(".", 1)[0])
    args, kwargs = build_call(spec.construct, device)
    record: list[str] = []
    markers = SETUP_GAP_MARKERS if simulate_setup else ()
    try:
        with simulated_setup() if simulate_setup else contextlib.nullcontext(record) as record:
            instance = eager_setup("construct", lambda: cls(*args, **kwargs), markers)
            if spec.plan is not None:
                plan_args, plan_kwargs = build_call(spec.plan, device)
                planner = getattr(instance, spec.plan_method)
                eager_setup(f"{spec.plan_method}()", lambda: planner(*plan_args, **plan_kwargs), markers)
    except SetupFailed as exc:
        if simulate_setup and exc.needs_gpu:  # the simulated set-up met what it cannot answer: say so
            stood_in = "; ".join(dict.fromkeys(record)) or "nothing stood in"
            raise SetupFailed(f"simulation gap in the simulated set-up ({stood_in}): {exc}", needs_gpu=True) from exc
        raise
    return getattr(instance, spec.target.rsplit(".", 1)[1]), tuple(dict.fromkeys(record))


def observe_entry(spec: EntrySpec, obj: Any, real: bool = False, setup_record: list[str] | None = None) -> Observation:
    """Build inputs and trace one entry point (inside the caller's simulation, or on the real GPU). `setup_record`:
    filled with what the simulated set-up stood in for (a wrapper's constructor and plan(), pcgkit.sweep.setupsim)."""
    from pcgkit.harness.tracing import trace

    device = "cuda:0" if real else "cpu"
    guard: contextlib.AbstractContextManager[list] = contextlib.nullcontext([]) if real else no_kernels()
    with guard as refusals:
        try:
            fn, stood_in = build_callable(spec, obj, device, simulate_setup=not real)
            if setup_record is not None:
                setup_record.extend(stood_in)
            args, kwargs = build_call(spec.call, device)
            inspect.signature(fn).bind(*args, **kwargs)
        except SetupFailed as exc:
            return Observation("needs-gpu" if exc.needs_gpu and not real else "build-error", str(exc))
        except (InputBuildError, TypeError, ValueError, RuntimeError, AttributeError) as exc:
            return Observation("build-error", f"spec cannot build inputs: {type(exc).__name__}: {str(exc)[:200]}")
        graphs: list = []
        # Keyword tensors become graph inputs too (not closure constants): pass them positionally.
        names, count = tuple(kwargs), len(args)
        traced_fn = lambda *a: fn(*a[:count], **dict(zip(names, a[count:])))  # noqa: E731
        outcome = trace(traced_fn, args + tuple(kwargs.values()), fullgraph=True, execute=False, graphs=graphs)
    refused = tuple((r.event, r.detail, r.in_fake_dispatch) for r in refusals)
    if outcome.traced:
        return Observation("traced", graph_ops=graph_op_names(graphs), refused=refused)
    return Observation("raised", signature=outcome.signature, refused=refused)


def sweep_entry(spec: EntrySpec, arch: str, device: Device, versions: tuple[str, str], real: bool = False) -> SweepResult:
    from pcgkit.harness.simulate import simulated_sm120  # parameterized by capability: SM120, SM100, SM90

    flashinfer_version, torch_version = versions
    start = time.perf_counter()
    installed = None
    replaced: tuple[str, ...] = ()
    if not spec.applies_to(flashinfer_version):
        obs = Observation("missing", f"spec applies to flashinfer {spec.releases}; installed {flashinfer_version}")
    else:
        try:
            obj = resolve(spec.target)
            installed = signature_text(obj)
        except (MissingTarget, ImportError) as exc:
            obj = None
            obs = Observation("missing", str(exc))
        else:
            # some releases bind an optional op's name to None (a kernel not built for this install)
            obs = Observation("missing", f"{spec.target} is None in this install")
        if obj is not None:
            try:
                if real:
                    with deadline(REAL_ENTRY_DEADLINE_S):
                        obs = observe_entry(spec, obj, real=True)
                else:
                    with deadline(ENTRY_DEADLINE_S), simulated_sm120(capability=device.capability) as simulation:
                        setup: list[str] = []
                        replaced = simulation.replaced
                        obs = observe_entry(spec, obj, setup_record=setup)
                        replaced += tuple(f"set-up: {item}" for item in setup)
            except CaseTimeout as exc:
                obs = Observation("build-error", f"kit: {exc}")
            except Exception as exc:  # noqa: BLE001 - on a real GPU the eager plan()/constructor may raise anything
                if not real:
                    raise
                obs = Observation("build-error", f"eager setup on the GPU raised {type(exc).__name__}: {str(exc)[:200]}")
    classification = classify(obs)
    expectation = spec.expectation_for(flashinfer_version)
    return SweepResult(
        entry_id=spec.id, family=spec.family, target=spec.target, arch=arch, device=device.to_dict(),
        flashinfer=flashinfer_version, torch=torch_version, classification=classification,
        verdict=verdict_for(classification, expectation.behaviour if expectation else None).value,
        expected=expectation.behaviour if expectation else None,
        expectation_link=expectation.link if expectation else None,
        installed_signature=installed, simulation_replaced=replaced, refused=obs.refused,
        signature=obs.signature.to_dict() if obs.signature else None,
        duration_s=round(time.perf_counter() - start, 3),
    )


def installed_versions() -> tuple[str, str]:
    import flashinfer
    import torch

    return flashinfer.__version__, torch.__version__


def run_sweep(specs: Sequence[EntrySpec], arches: Sequence[str] = tuple(SIMULATED_ARCHES)) -> list[SweepResult]:
    versions = installed_versions()
    return [sweep_entry(spec, arch, SIMULATED_ARCHES[arch], versions) for arch in arches for spec in specs]


def arch_of(device: Device) -> str:
    """'sm90' for a 9.0 device: the arch id a real device's results are filed under."""
    return f"sm{device.capability[0]}{device.capability[1] if device.capability[0] < 10 else 0}"


def run_sweep_real(specs: Sequence[EntrySpec], device: Device) -> list[SweepResult]:
    """On the real GPU: no simulation, no guard (see the module docstring)."""
    versions = installed_versions()
    return [sweep_entry(spec, arch_of(device), device, versions, real=True) for spec in specs]

