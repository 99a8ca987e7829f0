"""Unrolling a failure stack, the pure half: which site to patch next, and how. No torch import.

A callable that breaks under fullgraph=True usually breaks at the *first* untraceable site of a
stack of them: a DGX Spark user needed four patch rounds before fp4_quantize got past FlashInfer's
JIT loader (github.com/vroomfondel/dgxarley FLASHINFER_CUDA_VERSION_SUBPROCESS_UPSTREAM_BUG.md:
nvcc subprocess, then posix.stat in is_aot, then Function.__call__). The unroller
(lab.sweep.unroll) patches each site the way the kit's dead-end and fix cases do and traces
again, until it traces or nothing more can be patched. The patches, smallest first:

  answer-query  the innermost FlashInfer function on the failing stack that, called for real with
                the arguments dynamo bound (outside the trace), returns a plain value: the trace
                gets that value instead (mode 2's get_cuda_version answer, generalised);
  pre-build     otherwise the outermost JIT loader on the stack (get_*_module, gen_*_module,
                build_and_load, the CuTe-DSL compile) called for real with its constant arguments,
                its result handed to the trace (the DGX user's "pre-resolve the backend into a
                constant": the loader made opaque). On a CPU host the JIT build inside it is
                simulated (an unbuilt module whose functions refuse to run), and labelled so;
  stop          anything else (a kernel call into a C extension, a site seen before): the site is
                recorded and the stack ends there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pcgkit.sweep.setupsim import LOADER_NAME_RE  # noqa: F401  (the loader names, declared once)

SCHEMA = "pcgkit.unroll/1"
ANSWER_QUERY = "answer-query"
PRE_BUILD = "pre-build"
STOP = "stop"
NOT_CONSTANT = "(no constant answer)"  # pcgkit.harness.pathrecord's marker for a symbolic value
MAX_ROUNDS = 8


@dataclasses.dataclass(frozen=True)
class StackCall:
    """One FlashInfer function on the failing stack (from the recording of what dynamo inlined)."""

    function: str
    file: str  # package-relative: "flashinfer/jit/cpp_ext.py"
    line: int  # the function's first line
    arguments: tuple[tuple[str, object], ...]

    @property
    def constant_arguments(self) -> bool:
        return all(value != NOT_CONSTANT for _, value in self.arguments)

    @property
    def is_loader(self) -> bool:
        return bool(LOADER_NAME_RE.match(self.function))

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}:{self.function}"


@dataclasses.dataclass(frozen=True)
class Candidate:
    kind: str  # ANSWER_QUERY | PRE_BUILD
    call: StackCall


def candidates(stack: Sequence[StackCall], patched: frozenset[str]) -> tuple[Candidate, ...]:
    """What to try at this site, in order: queries innermost first, then loaders outermost first.
    `stack` is innermost first; functions already patched are never tried again. Pure."""
    fresh = [c for c in stack if c.where not in patched and c.constant_arguments]
    queries = [Candidate(ANSWER_QUERY, c) for c in fresh if not c.is_loader]
    loaders = [Candidate(PRE_BUILD, c) for c in reversed(fresh) if c.is_loader]
    return tuple(queries + loaders)


@dataclasses.dataclass(frozen=True)
class Site:
    """One untraceable site, in the order the unroller met it, and what was done about it."""

    index: int
    frame: str  # innermost library frame of the failure ("flashinfer/jit/cpp_ext.py:69:get_cuda_version")
    graph_break_id: str | None
    what: str  # the skipped callable, or the message head
    action: str  # ANSWER_QUERY | PRE_BUILD | STOP
    patched: str = ""  # the function patched (file:line:function)
    answer: str = ""  # repr of what the trace was handed
    simulated: bool = False  # the patch stood in for hardware (a JIT build on a CPU host)
    note: str = ""  # why it stopped, or what the patch could not do


@dataclasses.dataclass(frozen=True)
class Unrolled:
    target: str
    arch: str
    flashinfer: str
    torch: str
    device: str
    sites: tuple[Site, ...]
    traces_after: bool  # traced once every site was patched
    final_class: str  # the sweep class of the last trace (pcgkit.sweep.classify)
    final_where: str
    first_class: str = ""  # the sweep class of the first (unpatched) trace
    first_loader: str = ""  # breaks-in-jit-loader: which loader (pcgkit.sweep.classify.LOADER_*)
    rounds_capped: bool = False  # the unroll stopped at the caller's round limit, not at the stack's end
    setup_simulated: tuple[str, ...] = ()  # a wrapper's set-up: what the simulation stood in for (pcgkit.sweep.setupsim)

    @property
    def breaking_sites(self) -> int:
        return len(self.sites)

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, **dataclasses.asdict(self)}

    @classmethod
    def from_dict(cls, data: dict) -> Unrolled:
        fields = {k: v for k, v in data.items() if k != "schema"}
        return cls(**{**fields, "sites": tuple(Site(**s) for s in data["sites"]),
                      "setup_simulated": tuple(fields.get("setup_simulated", ()))})


def render_sites(unrolled: Unrolled) -> list[str]:
    """One line per site, in order: what broke where, and what the unroller did. Pure."""
    lines = []
    for site in unrolled.sites:
        head = f"{site.index}. {site.frame} [{site.graph_break_id or '-'}] {site.what[:90]}"
        if site.action == STOP:
            lines.append(f"{head} -> stop: {site.note}")
        else:
            label = " (simulated)" if site.simulated else ""
            lines.append(f"{head} -> {site.action}{label} {site.patched} = {site.answer[:80]}")
    tail = "traces" if unrolled.traces_after else f"{unrolled.final_class}: {unrolled.final_where}"
    lines.append(f"after {len(unrolled.sites)} site(s): {tail}")
    return lines
