"""The one place that runs torch.compile over a case's function and records what dynamo did: dynamo reset before
and after each trace (no cache leaks between cases), warnings captured the same way, and a clean trace on a machine
without a GPU told apart from a failure at execution time."""

from __future__ import annotations

import functools
import time
import warnings
from typing import Any, Callable, Sequence

from pcgkit.values.signature import parse_exception
from pcgkit.values.trace import TraceOutcome

LRU_CACHE_WARNING_MARKER = "lru_cache"


class _TracedWithoutExecuting(Exception):
    """Raised by the trace-only backend instead of running the graph (no kernels on a CPU)."""


def _trace_only_backend(graph_module, example_inputs, graphs: list | None = None):
    if graphs is not None:  # the sweep reads which ops the graph holds (opaque op vs traced through)
        graphs.append(graph_module)

    def refuse_to_execute(*args, **kwargs):
        raise _TracedWithoutExecuting()

    return refuse_to_execute


def trace(
    fn: Callable,
    args: Sequence[Any],
    *,
    fullgraph: bool = True,
    execute: bool,
    graphs: list | None = None,
) -> TraceOutcome:
    """torch.compile(fn, fullgraph=..., backend="eager") and call it once. With execute=False the graph is built but
    never run (no GPU to run it on): the backend raises a private sentinel, which counts as a clean trace."""
    import torch

    return observe(
        lambda backend: torch.compile(fn, fullgraph=fullgraph, backend=backend)(*args), execute=execute, graphs=graphs
    )


def observe(invoke: Callable[[Callable], Any], *, execute: bool, graphs: list | None = None) -> TraceOutcome:
    """`trace`'s engine, also for code that calls torch.compile itself (SGLang's install_torch_compiled):
    `invoke(backend)` compiles with the backend it is given and calls the result once. With execute=False and a
    `graphs` list, every FX graph dynamo hands the backend is appended to it."""
    import torch
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    backend: Any = "eager" if execute else functools.partial(_trace_only_backend, graphs=graphs)
    if execute:
        from torch._dynamo.backends.registry import lookup_backend

        backend = lookup_backend("eager")
    signature = None
    traced = executed = False
    output = None
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            output = invoke(backend)
            traced = executed = True
        except _TracedWithoutExecuting:
            traced = True
        except Exception as exc:  # the failure under study: keep it as evidence
            lru = tuple(str(w.message) for w in caught if LRU_CACHE_WARNING_MARKER in str(w.message))
            signature = parse_exception(exc, lru)
    duration = time.perf_counter() - start
    lru_warnings = tuple(str(w.message) for w in caught if LRU_CACHE_WARNING_MARKER in str(w.message))
    breaks: dict = counters.get("graph_break", {})
    count = sum(breaks.values())
    reasons = tuple(str(reason)[:200] for reason in breaks)
    torch._dynamo.reset()
    return TraceOutcome(traced, executed, signature, lru_warnings, count, reasons, duration, output)
