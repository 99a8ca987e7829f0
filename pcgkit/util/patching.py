"""Patch a function in every loaded module of a package that bound it by name.

FlashInfer does `from .utils import get_compute_capability` (and the like), so one function has
several bindings; patching only the defining module would leave the traced path untouched.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Iterator
from unittest import mock


@contextlib.contextmanager
def patched_everywhere(original: object, replacement: object, package: str) -> Iterator[list[str]]:
    """Replace every binding of `original` in `package` (and its loaded submodules) for the duration of the block;
    yields the 'module.attribute' names replaced."""
    with contextlib.ExitStack() as stack:
        replaced = []
        for name, module in list(sys.modules.items()):
            if module is None or not (name == package or name.startswith(package + ".")):
                continue
            for attr, value in list(vars(module).items()):
                if value is original:
                    stack.enter_context(mock.patch.object(module, attr, replacement))
                    replaced.append(f"{name}.{attr}")
        yield replaced
