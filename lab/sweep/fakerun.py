"""Run a judged callable for real, on fake tensors (the edge): "tracing clean is not working".

A trace under fullgraph=True says dynamo could build a graph; it does not say the call runs. Here
the same callable, with the same inputs, is called eagerly with every tensor argument turned into
a FakeTensor (torch's FakeTensorMode): the library's Python runs for real, its registered ops run
their fakes, shapes and dtypes flow to the outputs; no kernel runs (no storage), and on a CPU host
it runs inside the sweep's simulation and no-kernel guard (pcgkit.sweep.guard), so a path that
needs a JIT module is refused and says so. `RunOutcome.runs` is what the certificate's
traces-and-runs / traces-but-fails split rests on.
"""

from __future__ import annotations

import contextlib
import dataclasses

from pcgkit.harness.casekit import CaseTimeout, deadline

RUN_DEADLINE_S = 60.0
# A FlashInfer argument check rejecting the inputs (not a statement about compile safety).
INPUT_REJECTIONS = ("ValueError", "AssertionError", "IndexError", "KeyError", "NotImplementedError")


@dataclasses.dataclass(frozen=True)
class RunOutcome:
    runs: bool
    outputs: str = ""  # shapes/dtypes of what it returned
    error: str = ""  # "Type: message" when it did not run
    error_type: str = ""
    refused_kernel: bool = False  # the guard refused a build/load on the way

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def _metadata(value) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}"
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(_metadata(v) for v in value) + ")"
    return type(value).__name__


def run_fake(spec, device, real: bool = False, fake_cuda: bool = False) -> RunOutcome:
    """Call the spec's callable eagerly on FakeTensors (inside the simulation and guard on CPU; `fake_cuda`: on
    the simulated cuda:0, lab.sweep.fakecuda)."""
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from pcgkit.harness.simulate import simulated_sm120
    from pcgkit.sweep.engine import build_callable, resolve
    from pcgkit.sweep.guard import KernelLoadRefused, no_kernels
    from pcgkit.sweep.inputs import build_call

    torch_device = "cuda:0" if real else "cpu"
    simulation = contextlib.nullcontext() if real else simulated_sm120(capability=device.capability)
    guard: contextlib.AbstractContextManager = contextlib.nullcontext([]) if real else no_kernels()
    try:
        with deadline(RUN_DEADLINE_S), simulation, guard as refusals:
            fn = build_callable(spec, resolve(spec.target), torch_device, simulate_setup=not real)[0]
            args, kwargs = build_call(spec.call, torch_device)
            with FakeTensorMode(allow_non_fake_inputs=True) as mode:
                if fake_cuda and not real:
                    from lab.sweep.fakecuda import on_fake_cuda

                    args, kwargs = on_fake_cuda(args, mode), on_fake_cuda(kwargs, mode)
                fake = lambda v: mode.from_tensor(v) if isinstance(v, torch.Tensor) and not fake_cuda else v  # noqa: E731
                out = fn(*(fake(a) for a in args), **{k: fake(v) for k, v in kwargs.items()})
            return RunOutcome(True, _metadata(out), refused_kernel=bool(refusals))
    except KernelLoadRefused as exc:
        return RunOutcome(False, error=f"needs a kernel: {str(exc)[:200]}", error_type="KernelLoadRefused",
                          refused_kernel=True)
    except CaseTimeout as exc:
        return RunOutcome(False, error=f"kit: {exc}", error_type="CaseTimeout")
    except Exception as exc:  # noqa: BLE001 - the library may raise anything; that is the finding
        return RunOutcome(False, error=f"{type(exc).__name__}: {str(exc)[:200]}", error_type=type(exc).__name__,
                          refused_kernel="refused" in str(exc) and "pcgkit" in str(exc))
