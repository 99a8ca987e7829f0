"""The argument audit: does a fix's public entry hand each of the caller's arguments to the parameter of the same
name, at every Python call boundary on the way and at the kernel boundary? Runs on any machine.

Tracing a custom op never runs its body, and an inert kernel ignores what it is given, so neither sees a body that
forwards its arguments into the wrong slots. FlashInfer 0.6.12-0.7.0.post1 do exactly that:
`torch.ops.flashinfer.fp4_quantize`'s body calls the Python `fp4_quantize` positionally, whose 7th parameter is
`is_global_scale_inversed`, so `enable_pdl` lands there (a TypeError at the kernel with the default None, a silently
inverted global scale with a bool; 0.7.1 forwards by keyword).

How: the entry is called for real on small CPU tensors, FlashInfer's own Python with the hardware queries answered
as SM120 (pcgkit.harness.simulate) and every JIT-built module a recording one (pcgkit.fp4.fake_shapes). A profile
hook records what each parameter was bound to at each Python frame receiving the caller's input tensor; the
recording kernel records its positional slots, named by the call site's expressions (read with ast). Then one call
per parameter changes only that parameter (variants): at each boundary exactly the parameter of the same name must
change, and one the boundary has must not stay unchanged. A call with only the leading arguments (as SGLang's apply
calls it) checks each bound value against its annotation (None reaching a `bool` is the real kernel's TypeError).
Values are never computed: numbers are a GPU check.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import inspect
import os
import sys
import textwrap
from collections.abc import Callable, Mapping
from types import CodeType, FrameType
from typing import Any

from pcgkit.fp4.fake_shapes import KernelCall, recording_jit_modules
from pcgkit.harness.simulate import simulated_sm120

LABEL = ("argument audit (simulated SM120: FlashInfer's own Python over a recording kernel; "
         "each parameter changed alone, checked at every Python call boundary and the kernel boundary)")
SHORT = "argument audit over FlashInfer's own Python and a recording kernel, simulated SM120"  # for a verdict's reason

ROWS, COLS = 8, 64  # K a multiple of 32, so sf_vec_size 16 and 32 are both valid


def _tensor(seed: int, device: str = "cpu"):
    import torch

    generator = torch.Generator().manual_seed(seed)
    return torch.randn(ROWS, COLS, generator=generator).to(torch.bfloat16).to(device)


def variants(device: str = "cpu") -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """(baseline, changed) value makers per parameter name of FlashInfer's fp4_quantize family. Neither
    side is a default that the wrapper resolves (enable_pdl=None), so a change cannot vanish on the way.
    Tensors on `device` ("cuda" for the audit over real kernels)."""
    import torch

    return {
        "input": (lambda: _tensor(0, device), lambda: _tensor(1, device)),
        "global_scale": (lambda: torch.tensor([1.0], device=device), lambda: torch.tensor([0.5], device=device)),
        "sf_vec_size": (lambda: 16, lambda: 32),
        "sf_use_ue8m0": (lambda: False, lambda: True),
        "is_sf_swizzled_layout": (lambda: True, lambda: False),
        "is_sf_8x4_layout": (lambda: False, lambda: True),
        "is_global_scale_inversed": (lambda: False, lambda: True),
        "enable_pdl": (lambda: True, lambda: False),
    }


@dataclasses.dataclass(frozen=True)
class Boundary:
    """What one call boundary received on one call: a Python frame's named parameters, or a kernel's slots."""

    where: str  # "module.qualname" or "kernel <spec>.<function>"
    names: tuple[str, ...]
    values: tuple[Any, ...]  # comparable summaries (see _summary), parallel to names
    annotations: tuple[str | None, ...] = ()  # Python frames: each parameter's annotation text
    bound: tuple[Any, ...] = ()  # Python frames: the values themselves, for the annotation check


@dataclasses.dataclass(frozen=True)
class ArgumentAudit:
    entry: str
    audited: tuple[str, ...]  # parameters changed one at a time
    not_audited: tuple[str, ...]  # parameters of the entry with no variant (named, not hidden)
    boundaries: tuple[str, ...]  # the boundaries the baseline call crossed, outermost first
    findings: tuple[str, ...]  # empty: every argument reaches its own parameter everywhere
    how_called: str = ""  # "" = called as a caller calls it; else how (a CUDA-only op called through its kernel)
    label: str = LABEL
    # A real kernel (on a GPU, lab argaudit-gpu) refusing a changed value: its own check of values (sf_vec_size 32
    # needs ue8m0), not a forwarding finding; the boundaries are compared anyway.
    kernel_refusals: tuple[str, ...] = ()
    # (call, {slot name: plain value}) at the kernel boundary: every argument, the leading ones, enable_pdl changed.
    kernel_args: tuple[tuple[str, dict[str, Any]], ...] = ()

    @property
    def passed(self) -> bool:
        return not self.findings and bool(self.audited) and any(b.startswith("kernel ") for b in self.boundaries)

    def summary(self) -> str:
        """One sentence for a verdict's reason."""
        if self.passed:
            return (f"argument audit passed: {len(self.audited)} parameters each changed alone reach the parameter "
                    f"of the same name at {len(self.boundaries)} boundaries down to the kernel")
        if not self.findings:
            return "argument audit inconclusive: the call never reached a kernel boundary"
        more = f" (+{len(self.findings) - 1} more)" if len(self.findings) > 1 else ""
        return f"argument audit: {self.findings[0]}{more}"

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        data["passed"] = self.passed
        return data


def _digest(tensor) -> str:
    import torch

    data = tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes()
    return hashlib.sha1(data).hexdigest()[:12]


def _storage(value) -> int | None:
    import torch

    if not isinstance(value, torch.Tensor):
        return None
    try:
        return value.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # fake / meta tensors have no storage to point at
        return None


def _summary(value, caller_storages: set[int]) -> Any:
    """A comparable stand-in: a caller's tensor (or a view of it) by content; a tensor allocated on the way
    by nothing (its shape follows other parameters and its memory is uninitialized); plain values as they are."""
    import torch

    if isinstance(value, torch.Tensor):
        if _storage(value) in caller_storages:
            return ("caller's tensor", tuple(value.shape), str(value.dtype), _digest(value))
        return ("tensor allocated on the way",)
    if value is None or isinstance(value, (bool, int, float, str)):
        return (type(value).__name__, value)
    if isinstance(value, torch.device):
        return ("device", str(value))
    return ("object", type(value).__name__)


@functools.cache
def _skip_dirs() -> tuple[str, ...]:
    """torch's dispatch, the standard library and this module's own frames: never a boundary of the entry."""
    import torch

    own = _summary.__code__.co_filename
    return (os.path.dirname(inspect.getfile(torch)) + os.sep, os.path.dirname(inspect.getfile(os)) + os.sep, own)


@functools.cache
def _annotations_of(code: CodeType) -> dict[str, str]:
    """Parameter annotations as written in the function's source (closures included). Empty if unreadable."""
    found: dict[str, str] = {}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(code)))
        fn = next(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        for arg in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs):
            if arg.annotation is not None:
                found[arg.arg] = ast.unparse(arg.annotation)
    except (OSError, TypeError, SyntaxError, StopIteration):
        pass
    return found


_SIMPLE_TYPES = {"bool": (bool,), "int": (int,), "float": (int, float)}


def _fits(annotation: str | None, value: Any) -> bool:
    """Whether `value` fits a simple annotation (bool, int, float, Optional[...]); unknown ones fit. Pure."""
    text = (annotation or "").replace(" ", "")
    optional = text.startswith("Optional[") or text.endswith("|None") or text.startswith("None|")
    core = text.removeprefix("Optional[").removesuffix("]") if text.startswith("Optional[") else (
        text.replace("|None", "").replace("None|", ""))
    if core not in _SIMPLE_TYPES:
        return True
    if value is None:
        return optional
    return isinstance(value, _SIMPLE_TYPES[core]) and (core == "bool" or not isinstance(value, bool))


def _raised(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:160]}"


def record_call(run: Callable[..., Any], kwargs: Mapping[str, Any], kernel_log: list[KernelCall]
                ) -> tuple[list[Boundary], BaseException | None, list[KernelCall]]:
    """Run `run(**kwargs)` once; return the boundaries it crossed (Python frames that received one of the caller's
    tensors by a named parameter, then each kernel call), what it raised (None if nothing) and its kernel calls."""
    storages = {s for s in (_storage(v) for v in kwargs.values()) if s is not None}
    frames: list[tuple[str, CodeType, dict[str, Any]]] = []
    skip = _skip_dirs()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code.co_filename.startswith(skip):
            return
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        local = frame.f_locals
        if any(_storage(local.get(n)) in storages for n in names if n in local):
            module = frame.f_globals.get("__name__", "?")
            frames.append((f"{module}.{getattr(code, 'co_qualname', code.co_name)}", code,
                           {n: local[n] for n in names if n in local}))

    start = len(kernel_log)
    raised: BaseException | None = None
    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        run(**kwargs)
    except Exception as exc:  # what the call path raises is a finding, never the audit's crash
        raised = exc
    finally:
        sys.setprofile(previous)
    boundaries = []
    for where, code, bound in frames:
        notes = _annotations_of(code)
        names = tuple(bound)
        boundaries.append(Boundary(where, names, tuple(_summary(bound[n], storages) for n in names),
                                   tuple(notes.get(n) for n in names), tuple(bound.values())))
    for k in kernel_log[start:]:
        names = k.arg_names + tuple(k.kwargs)
        values = (*k.args, *k.kwargs.values())
        boundaries.append(Boundary(f"kernel {k.kernel}", names, tuple(_summary(v, storages) for v in values)))
    return boundaries, raised, kernel_log[start:]


def compare(parameter: str, baseline: list[Boundary], changed: list[Boundary]) -> list[str]:
    """Findings for one parameter changed alone: at each boundary (matched by place and order) exactly the
    parameter of the same name must change, and one the boundary has must change. Pure."""
    findings = []
    if [b.where for b in baseline] != [b.where for b in changed]:
        only = sorted({b.where for b in baseline} ^ {b.where for b in changed})
        findings.append(f"changing {parameter} alone changed the call path ({', '.join(only) or 'order'})")
    for before, after in zip(baseline, changed):
        if before.where != after.where or before.names != after.names:
            continue
        moved = tuple(n for n, x, y in zip(before.names, before.values, after.values) if x != y)
        if moved and moved != (parameter,):
            wrong = ", ".join(n for n in moved if n != parameter)
            findings.append(f"changing {parameter} alone changed {wrong} at {before.where}")
        elif parameter in before.names and not moved:
            findings.append(f"changing {parameter} alone changed nothing at {before.where}: it does not arrive there")
    return findings


def annotation_findings(boundaries: list[Boundary]) -> list[str]:
    """Bound values that do not fit their parameter's annotation (None reaching a `bool`). Pure."""
    return [f"{name}={value!r} reaches {b.where}, annotated {note}" for b in boundaries
            for name, note, value in zip(b.names, b.annotations, b.bound) if not _fits(note, value)]


def _overload_of(entry: Any) -> Any:
    """The torch OpOverload behind `entry` (a packet's default, a custom op's), or None for a plain function."""
    import torch

    if isinstance(entry, torch._ops.OpOverload):
        return entry
    if isinstance(entry, torch._ops.OpOverloadPacket):
        return entry.default
    return getattr(entry, "_opoverload", None)


def runnable_here(entry: Any) -> tuple[Callable[..., Any], str]:
    """(a callable taking the entry's keyword arguments, how it is called). A torch op with a kernel for CUDA only
    (SGLang registers its ops so) is called through that kernel with CPU tensors: its body is Python either way,
    and the audit is about that body, not about the device."""
    import torch

    overload = _overload_of(entry)
    if overload is None:
        return entry, ""
    name = overload.name()

    def has(key: str) -> bool:
        return torch._C._dispatch_has_kernel_for_dispatch_key(name, key)

    if any(has(key) for key in ("CPU", "CompositeExplicitAutograd", "CompositeImplicitAutograd")) or not has("CUDA"):
        return entry, ""
    keys = torch._C.DispatchKeySet(torch._C.DispatchKey.CUDA)
    return (lambda **kwargs: overload.redispatch(keys, **kwargs)), (
        f"{name} registers a CUDA kernel only: called through that kernel with CPU tensors")


def parameters_of(entry: Any) -> tuple[str, ...]:
    """The entry's parameter names: a torch op's schema, a torch.library custom op's, or the signature."""
    overload = _overload_of(entry)
    if overload is not None:
        return tuple(a.name for a in overload._schema.arguments)
    return tuple(inspect.signature(entry).parameters)


def _kernel_args(label: str, calls: list[KernelCall]) -> list[tuple[str, dict[str, Any]]]:
    """The plain values each kernel call received, by slot name (tensors left out). Pure."""
    plain = (bool, int, float, str, type(None))
    return [(label, {n: v for n, v in zip(k.arg_names + tuple(k.kwargs), (*k.args, *k.kwargs.values()))
                     if isinstance(v, plain)}) for k in calls]


def audit(entry: Any, name: str, kernel_log: list[KernelCall], device: str = "cpu", label: str = LABEL) -> ArgumentAudit:
    """The audit of `entry` (see the module docstring); the caller arranges that kernel calls land in
    `kernel_log` (pcgkit.fp4.fake_shapes.recording_jit_modules for FlashInfer, recording_real_modules on a GPU)."""
    table = variants(device)
    params = parameters_of(entry)
    audited = tuple(p for p in params if p in table)
    runnable, how_called = runnable_here(entry) if device == "cpu" else (entry, "")
    base_kwargs = {p: table[p][0]() for p in audited}
    leading = {p: base_kwargs[p] for p in params[:2] if p in base_kwargs}  # apply()'s call: (x, input_scale_inv)
    only = f"only {', '.join(leading)}"
    baseline, raised, calls = record_call(runnable, base_kwargs, kernel_log)
    short, short_raised, short_calls = record_call(runnable, leading, kernel_log)
    seen = _kernel_args("every argument given", calls) + _kernel_args(f"{only} given", short_calls)
    refusals: list[str] = []
    # misbindings first (the verdict's reason leads with the first), then the annotation findings
    findings = [] if raised is None else [f"the call with every argument given raised {_raised(raised)}"]
    typed = annotation_findings(baseline)
    if short_raised is not None:
        typed.append(f"the call with {only} raised {_raised(short_raised)}")
    typed += [f"with {only} given: {f}" for f in annotation_findings(short)]
    if raised is None:
        for parameter in audited:
            changed_kwargs = {**base_kwargs, parameter: table[parameter][1]()}
            changed, changed_raised, calls = record_call(runnable, changed_kwargs, kernel_log)
            if parameter == "enable_pdl":
                seen += _kernel_args("enable_pdl changed alone", calls)
            refused = [k.raised for k in calls if k.raised]
            if changed_raised is not None and not refused:  # raised before any kernel: the Python path failed
                findings.append(f"changing {parameter} alone raised {_raised(changed_raised)}")
                continue
            refusals += [f"changing {parameter} alone: the kernel refused ({r})" for r in refused]
            findings += compare(parameter, baseline, changed)
    return ArgumentAudit(name, audited, tuple(p for p in params if p not in table), tuple(b.where for b in baseline),
                         tuple(dict.fromkeys(findings + typed)), how_called=how_called, label=label,
                         kernel_refusals=tuple(refusals), kernel_args=tuple(seen))


def audit_flashinfer_entry(entry: Any, name: str) -> ArgumentAudit:
    """`audit` with FlashInfer's JIT modules recording and the hardware answered as SM120 (any machine)."""
    log: list[KernelCall] = []
    with simulated_sm120(), recording_jit_modules(log):
        return audit(entry, name, log)


def fake_execution(entry: Any, name: str) -> tuple[str, ...]:
    """Findings from running `entry` under FakeTensorMode (its fake, or its Python over fake tensors) with
    the leading arguments alone and with every argument given: a TypeError or a schema mismatch is one."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    table = variants()
    params = parameters_of(entry)
    full = {p: table[p][0]() for p in params if p in table}
    leading = {p: full[p] for p in params[:2] if p in full}
    findings = []
    with simulated_sm120(), recording_jit_modules():
        for label, kwargs in (("leading arguments", leading), ("every argument", full)):
            with FakeTensorMode(allow_non_fake_inputs=True) as mode:
                fake_kwargs = {k: mode.from_tensor(v) if hasattr(v, "untyped_storage") else v for k, v in kwargs.items()}
                try:
                    entry(**fake_kwargs)
                except Exception as exc:  # a finding about the entry, recorded as such
                    findings.append(f"{name} under fake tensors ({label}) raised {_raised(exc)}")
    return tuple(findings)
