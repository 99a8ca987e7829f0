"""Why a FlashInfer submodule did not import on the certificate's host. Pure.

`import_reasons(errors, requires)` gives each (submodule, error) that discovery recorded one of
IMPORT_REASONS, with the evidence: the error, and for a missing module whether the release
declares it (its Requires-Dist, `requires` as importlib.metadata gives them) and under which extra.

  optional dependency, declared   the module comes from a package an extra of the release declares
  optional dependency, undeclared the release imports a package it does not declare (or only names in its message)
  GPU-only import                 the import itself needs a CUDA driver/device
  upstream defect                 the module raises on import on any host (NameError, SyntaxError, ...)
  kit: import-all                 two sibling kernel trees cannot both be imported into one process:
                                  the kit's walk imports every submodule, a user imports one
  dependency drift                a dependency the release declares (without an upper bound) is installed
                                  in a release that lacks a name the module uses ("module 'cutlass.cute.core'
                                  has no attribute 'ThrMma'")
  other                           none of the above (the error says what)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

IMPORT_REASONS = ("optional dependency, declared", "optional dependency, undeclared", "GPU-only import",
                  "upstream defect", "kit: import-all", "dependency drift", "other")
# import name -> distribution names that provide it (where they differ)
PROVIDERS = {"nvshmem": ("nvshmem4py-cu12", "nvshmem4py-cu13"), "tvm": ("apache-tvm",), "quack": ("quack-kernels",),
             "cutlass": ("nvidia-cutlass-dsl",), "cuda": ("cuda-python",)}
_MISSING_RE = re.compile(r"No module named '([\w.]+)'")
_REQUIRES_PACKAGE_RE = re.compile(r"requires the `([\w.-]+)` package")
_GPU_MARKERS = ("CUDA driver", "no NVIDIA driver", "cudaError", "libcuda.so", "No CUDA GPUs", "CUDA_ERROR")
_DEFECTS = ("NameError", "SyntaxError", "IndentationError")
_DRIFT_RE = re.compile(r"^AttributeError: module '([\w.]+)' has no attribute '(\w+)'")


def _distribution(requirement: str) -> tuple[str, str]:
    """"nvshmem4py-cu13>=0.3.1; extra == \"sm107\"" -> ("nvshmem4py-cu13", "sm107")."""
    name = re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0].lower()
    extra = re.search(r"extra\s*==\s*['\"]([\w.-]+)['\"]", requirement)
    return name, extra.group(1) if extra else ""


def import_reason(submodule: str, error: str, requires: Sequence[str]) -> dict:
    """One submodule's reason. Pure."""
    declared: dict[str, str] = {}
    for requirement in requires:
        name, extra = _distribution(requirement)
        declared.setdefault(name, extra)
    package = ""
    if match := _MISSING_RE.search(error):
        package = match.group(1).split(".")[0]
    elif match := _REQUIRES_PACKAGE_RE.search(error):
        package = match.group(1)
    if package:
        candidates = PROVIDERS.get(package, ()) + (package.lower(), package.lower().replace("_", "-"))
        found = next((c for c in candidates if c in declared), None)
        if found is not None:
            extra = declared[found]
            where = f"the release declares {found}" + (f" under its extra [{extra}]" if extra else " (always)")
            return {"submodule": submodule, "reason": IMPORT_REASONS[0], "package": package, "detail": where, "error": error}
        return {"submodule": submodule, "reason": IMPORT_REASONS[1], "package": package,
                "detail": f"no Requires-Dist of the release provides {package!r}", "error": error}
    if any(marker in error for marker in _GPU_MARKERS):
        return {"submodule": submodule, "reason": IMPORT_REASONS[2], "package": "", "detail": "", "error": error}
    if error.split(":", 1)[0] in _DEFECTS:
        return {"submodule": submodule, "reason": IMPORT_REASONS[3], "package": "",
                "detail": "raises on import on any host", "error": error}
    if drift := _DRIFT_RE.search(error):
        return {"submodule": submodule, "reason": "dependency drift", "package": drift.group(1).split(".")[0],
                "detail": f"the installed {drift.group(1).split('.')[0]} lacks {drift.group(2)!r}", "error": error}
    if "is already imported from" in error:
        return {"submodule": submodule, "reason": IMPORT_REASONS[4], "package": "",
                "detail": "a sibling tree's module of the same name was imported first by the kit's walk", "error": error}
    return {"submodule": submodule, "reason": IMPORT_REASONS[5], "package": "", "detail": "", "error": error}


def import_reasons(errors: Iterable[Sequence[str]], requires: Sequence[str]) -> list[dict]:
    """Every submodule that did not import, once each (discovery may record one twice), with its reason. Pure."""
    seen: dict[str, dict] = {}
    for submodule, error in errors:
        if submodule.startswith("op "):  # a dispatcher entry discovery could not read: not an import
            continue
        seen.setdefault(submodule, import_reason(submodule, error, requires))
    return list(seen.values())
