"""Read the installed FlashInfer's public callables and registered ops (lab.sweep.discovery's values).

The edge of discovery: imports flashinfer and every one of its submodules (so ops registered at a
submodule's import, e.g. 0.7.4's experimental/b12x, are seen), and asks torch's dispatcher which
operators that added. A submodule that fails to import on this host is recorded, not hidden.
Nothing is called: no kernel is built, loaded or run here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
import warnings

from lab.sweep.certificate_build import scrub
from lab.sweep.discovery import FORWARD_METHODS, TORCH_OP_NAMESPACES, Discovery, PublicCallable, RegisteredOp
from pcgkit.errors import Interrupted

# Dispatch keys whose kernel runs the op for real (a fake/Meta kernel is not one).
REAL_KERNEL_KEYS = ("CUDA", "CPU", "CompositeExplicitAutograd", "CompositeImplicitAutograd")


def _signature(obj: object) -> str | None:
    try:
        return str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _defined_in_flashinfer(obj: object) -> str | None:
    module = getattr(obj, "__module__", None) or ""
    return module if module == "flashinfer" or module.startswith("flashinfer.") else None


def public_callables(package) -> tuple[tuple[PublicCallable, ...], str]:
    names = getattr(package, "__all__", None)
    exported_by = "__all__" if names else "dir()"
    names = sorted(names) if names else sorted(n for n in dir(package) if not n.startswith("_"))
    found: list[PublicCallable] = []
    for name in names:
        obj = getattr(package, name, None)
        if obj is None or inspect.ismodule(obj) or not callable(obj):
            continue
        module = _defined_in_flashinfer(obj)
        if module is None:
            continue  # re-exported torch/typing helpers are not FlashInfer's entry points
        target = f"flashinfer.{name}"
        if inspect.isclass(obj):
            found.append(PublicCallable(target, "class", module, _signature(obj)))
            for method in FORWARD_METHODS:
                if method in vars(obj) and callable(vars(obj)[method]):
                    found.append(PublicCallable(f"{target}.{method}", "method", module, _signature(getattr(obj, method))))
        else:
            found.append(PublicCallable(target, "function", module, _signature(obj)))
    return tuple(found), exported_by


def import_all_submodules(package) -> tuple[tuple[str, str], ...]:
    errors: list[tuple[str, str]] = []

    def record(name: str) -> None:  # walk_packages imports packages itself; it reports through here
        exc = sys.exc_info()[1]
        errors.append((name, _said(exc)))

    for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}.", onerror=record):
        if info.name in sys.modules or any(info.name.startswith(f"{name}.") for name, _ in errors):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(info.name)
        except (KeyboardInterrupt, Interrupted):
            raise  # the user's Ctrl-C or the kit's stop signal is no submodule's import error
        except BaseException as exc:  # noqa: BLE001 - a submodule may raise anything (SystemExit too) on a CPU host
            errors.append((info.name, _said(exc)))
    return tuple(errors)


def _said(exc: BaseException | None) -> str:
    """The error as the certificate keeps it: the install path taken out BEFORE the cut, so the text is the same
    whatever the environment's folder is called (cut first, a longer path left less of the message)."""
    return f"{type(exc).__name__}: {scrub(str(exc))[:160]}"


def registered_op(qualname: str) -> RegisteredOp:
    import torch
    from torch._library import simple_registry

    namespace, _, name = qualname.partition("::")
    packet = getattr(getattr(torch.ops, namespace), name)
    schemas = tuple(str(getattr(packet, overload)._schema) for overload in packet.overloads())
    fake = simple_registry.singleton.find(qualname).fake_impl.kernel is not None
    has_key = torch._C._dispatch_has_kernel_for_dispatch_key
    meta = has_key(qualname, "Meta")
    kernels = tuple(key for key in REAL_KERNEL_KEYS if has_key(qualname, key))
    return RegisteredOp(qualname, schemas, fake or meta, kernels)


def discover() -> Discovery:
    """Import flashinfer (and all its submodules) and read what it offers. Needs torch + flashinfer."""
    import torch

    # Already imported (by the caller): every op outside torch's namespaces counts as the package's.
    before = set() if "flashinfer" in sys.modules else set(torch._C._dispatch_get_all_op_names())
    import flashinfer

    callables, exported_by = public_callables(flashinfer)
    errors = import_all_submodules(flashinfer)
    added = {name.split(".", 1)[0] for name in set(torch._C._dispatch_get_all_op_names()) - before}
    ops, unreadable = [], []
    for qualname in sorted(added):
        if qualname.partition("::")[0] in TORCH_OP_NAMESPACES:
            continue
        try:
            ops.append(registered_op(qualname))
        except (RuntimeError, AttributeError) as exc:  # listed by the dispatcher, not resolvable: say so
            unreadable.append((f"op {qualname}", _said(exc)))
    return Discovery(flashinfer.__version__, torch.__version__, callables, tuple(ops), exported_by, errors + tuple(unreadable))
