"""Eager set-up before a trace (a constructor, `plan()`, a layer's weights): the one guard that turns a failing step
into SetupFailed, split into "needs a GPU" (what failed exists only on CUDA: a refused kernel load, a stubbed CUDA
value, a driver call the simulation cannot answer) and "failed on this host" (the spec's own error). The sweep's
engine, the SGLang method sweep and preflight's probe each pass what counts as a GPU need for them. Pure but for
running the step it is given.
"""

from __future__ import annotations

from typing import Any, Callable


class SetupFailed(Exception):
    """A set-up step failed; `needs_gpu` when it needs what only a GPU has (a `needs-gpu` result, not an error)."""

    def __init__(self, message: str, needs_gpu: bool):
        super().__init__(message)
        self.needs_gpu = needs_gpu


def setup_step(name: str, step: Callable[[], Any], gpu_errors: tuple[type[BaseException], ...] = (),
               gpu_markers: tuple[str, ...] = ()) -> Any:
    """step(), or SetupFailed naming the step: needs_gpu for a `gpu_errors` exception or a message holding one of
    `gpu_markers`; any other exception is the step's own failure on this host."""
    try:
        return step()
    except gpu_errors as exc:
        raise SetupFailed(f"{name} needs a GPU: {exc}", needs_gpu=True) from exc
    except Exception as exc:  # noqa: BLE001 - a set-up failure is reported as data, never raised past the caller
        text = f"{type(exc).__name__}: {str(exc)[:200]}"
        needs_gpu = any(marker in str(exc) for marker in gpu_markers)
        raise SetupFailed(f"{name} failed {'eagerly (a GPU need)' if needs_gpu else 'on this host'}: {text}",
                          needs_gpu) from exc
