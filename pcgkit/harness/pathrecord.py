"""Record the path a dynamo trace took: every function it inlined, and what each one returned.

Dynamo never runs the code it traces (it interprets the bytecode symbolically: a stand-in appending to a list would
append inside dynamo's model only). What dynamo knows is exact, though: each function it inlines goes through
`InliningInstructionTranslator.inline_call_`, whose result is the value the caller got (`(12, 0)` for a capability
query). `record_inlined_calls` observes that one method inside the block (the original called, its result returned
unchanged, so the trace is the same) and keeps (function, file, line, answer), for simulated and real runs alike.
A torch without the method: the recorder says so (`available=False`) and the caller falls back to the failure's
frame chain; it never guesses.
"""

from __future__ import annotations

import contextlib
import dataclasses
from typing import Iterator
from unittest import mock

# The hardware queries a traced path can make, by function name: FlashInfer's, torch's, SGLang's.
# Matched on the inlined function's name so the same list serves the stand-ins and the real ones.
HARDWARE_QUERY_NAMES: frozenset[str] = frozenset({
    "get_compute_capability", "device_support_pdl", "check_cuda_arch",  # flashinfer.utils / jit.core
    "get_device_capability", "get_device_properties",  # torch.cuda
    "is_sm120_supported", "is_sm100_supported", "is_sm90_supported", "is_blackwell", "is_blackwell_supported",
    "is_hopper_with_cuda_12_3", "is_sm12x_supported",  # sglang.srt.utils (names vary per release)
})
_NO_ANSWER = "(no constant answer)"


@dataclasses.dataclass(frozen=True)
class InlinedCall:
    function: str
    file: str  # as the code object names it; `short_file` trims it to the package-relative part
    line: int
    completed: bool  # dynamo finished inlining it (False: the trace failed inside it)
    answer: object = None  # the Python constant it returned to its caller, when it returned one
    # (parameter, value) as dynamo bound them on entry; a value dynamo holds symbolically (a tensor,
    # an object) is "(no constant answer)". The unroller calls a site again with these, for real.
    arguments: tuple[tuple[str, object], ...] = ()

    @property
    def short_file(self) -> str:
        for marker in ("site-packages/", "dist-packages/", "/pcgkit/"):
            if marker in self.file:
                tail = self.file.rsplit(marker, 1)[1]
                return f"pcgkit/{tail}" if marker == "/pcgkit/" else tail
        return self.file

    @property
    def where(self) -> str:
        return f"{self.short_file}:{self.function}"


@dataclasses.dataclass
class TraceRecording:
    """Filled while the block runs; read after it."""

    available: bool = False
    how: str = ""
    calls: list[InlinedCall] = dataclasses.field(default_factory=list)

    def queries(self) -> list[tuple[str, object]]:
        """(query, answer) for each hardware query the trace inlined, in order."""
        queries = [c for c in self.calls if c.function in HARDWARE_QUERY_NAMES]
        return [(c.where, c.answer if c.completed else _NO_ANSWER) for c in queries]


def _constant(variable: object) -> object:
    try:
        if variable.is_python_constant():  # type: ignore[attr-defined]
            return variable.as_python_constant()  # type: ignore[attr-defined]
    except Exception:  # a VariableTracker that cannot say: record no answer rather than guess
        pass
    return _NO_ANSWER


def _arguments(translator: object, code) -> tuple[tuple[str, object], ...]:
    """The inlined function's parameters as dynamo bound them (constants where dynamo knows them)."""
    count = code.co_argcount + code.co_kwonlyargcount
    local_values = getattr(translator, "symbolic_locals", None) or {}
    return tuple((name, _constant(local_values[name])) for name in code.co_varnames[:count] if name in local_values)


@contextlib.contextmanager
def record_inlined_calls() -> Iterator[TraceRecording]:
    """Inside the block, every function dynamo inlines is appended to the recording."""
    recording = TraceRecording()
    try:
        from torch._dynamo.symbolic_convert import InliningInstructionTranslator
    except Exception as exc:  # torch missing or reorganised: say so, record nothing
        recording.how = f"unavailable: {type(exc).__name__}: {exc}"
        yield recording
        return
    original = getattr(InliningInstructionTranslator, "inline_call_", None)
    if original is None:
        recording.how = "unavailable: this torch has no InliningInstructionTranslator.inline_call_"
        yield recording
        return

    def observed_inline_call_(self):
        code = self.f_code
        arguments = _arguments(self, code)
        try:
            result = original(self)
        except BaseException:
            recording.calls.append(InlinedCall(code.co_name, code.co_filename, code.co_firstlineno, False,
                                               arguments=arguments))
            raise
        recording.calls.append(
            InlinedCall(code.co_name, code.co_filename, code.co_firstlineno, True, _constant(result), arguments)
        )
        return result

    recording.available = True
    recording.how = "dynamo InliningInstructionTranslator.inline_call_ observed (original called, result unchanged)"
    with mock.patch.object(InliningInstructionTranslator, "inline_call_", observed_inline_call_):
        yield recording
