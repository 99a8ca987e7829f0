"""Frames from a hand-written call path (pcgkit.values.paste.Step), placed with FlashInfer's own source. Pure but
`load_source`, which reads fixtures/flashinfer_source.json (benchmarks/flashinfer_source_table.py, from wheels).

A paste that cites the path instead of printing a traceback writes steps with no file
(`is_cuda_version_at_least("12.8")`), with a source line instead of a function
(`flashinfer/jit/core.py:261  return self.aot_path.exists()`), or skips a step (`is_cuda_version_at_least ->
subprocess.check_output`, though it is `get_cuda_version` that spawns nvcc). Each becomes a Frame the catalog's
mode rules can judge: the file from where FlashInfer defines the function, the function from which FlashInfer
function makes the call the step shows, and a skipped step from the one FlashInfer function in that file that
makes the next step's call. Every such inference is reported (`Placed.inferred`), never silent.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Iterable

from pcgkit import resources
from pcgkit.values.paste import Step
from pcgkit.values.signature import Frame

# Standard-library classes a step names without their module ("Popen.__init__"): module, for the frame's file.
_STDLIB_CLASSES = {"Popen": "subprocess", "Path": "pathlib", "PosixPath": "pathlib", "Lock": "threading"}
_STDLIB_MODULES = ("subprocess", "threading", "pathlib", "os", "posix", "_thread", "shutil", "datetime", "functools")


@dataclasses.dataclass(frozen=True)
class FlashInferSource:
    """Where FlashInfer defines each function of the path, and which of its functions makes each call."""

    defined_in: dict[str, tuple[str, ...]]
    callers: dict[str, dict[str, tuple[str, ...]]]
    read_from: tuple[str, ...] = ()

    def file_of(self, name: str) -> str | None:
        name = name.rsplit(".", 1)[-1]
        if name.startswith("__"):
            return None  # a dunder (`Popen.__init__`) names no FlashInfer function
        files = self.defined_in.get(name, ())
        return files[-1] if files else None  # the newest layout read (quantization/ from 0.6.7)

    def caller(self, file: str, call: str) -> str | None:
        """The one function of `file` that makes `call` (or None when none or several do)."""
        found = self.callers.get(file, {}).get(call, ())
        return found[0] if len(found) == 1 else None

    def full_path(self, file: str) -> str:
        """'cpp_ext.py' -> 'flashinfer/jit/cpp_ext.py' when one file of the path has that name."""
        if "/" in file:
            return file
        matches = [f for f in self.callers if f.rsplit("/", 1)[-1] == file]
        return matches[0] if len(matches) == 1 else file


def load_source() -> FlashInferSource:
    data = json.loads(resources.fixture("flashinfer_source.json").read_text())
    return FlashInferSource({k: tuple(v) for k, v in data["defined_in"].items()},
                            {f: {k: tuple(v) for k, v in by.items()} for f, by in data["callers"].items()},
                            tuple(data.get("read_from", ())))


@dataclasses.dataclass(frozen=True)
class Placed:
    frames: tuple[tuple[int, Frame], ...]  # (the line the step was on, the frame), outermost first
    inferred: tuple[str, ...]  # what the source table supplied that the paste did not write


def _stdlib(call: str) -> Frame | None:
    head, _, rest = call.partition(".")
    if head in _STDLIB_CLASSES:
        return Frame(f"{_STDLIB_CLASSES[head]}.py", 0, rest or head)
    if head in _STDLIB_MODULES and rest:
        return Frame(f"{head}.py", 0, rest.rsplit(".", 1)[-1])
    return None


def place(steps: Iterable[tuple[int, Step]], source: FlashInferSource) -> Placed:
    """Frames, outermost first, for the steps of one path ((line number, step) pairs). Pure."""
    frames: list[Frame] = []
    numbers: list[int] = []
    inferred: list[str] = []
    previous = 0
    for number, step in steps:
        numbers.extend([previous] * (len(frames) - len(numbers)))  # the frames of the step before
        previous = number
        file = source.full_path(step.file) if step.file else ""
        stdlib = _stdlib(step.call) if not file else None
        if not file and stdlib is None and (found := source.file_of(step.call)):
            file = found
            inferred.append(f"{step.call} is defined in {file}")
        if file.startswith("flashinfer/"):
            frames.extend(_flashinfer_frames(step, file, source, inferred))
            continue
        called = _stdlib(step.call) or (Frame(file, step.line, step.call.rsplit(".", 1)[-1]) if file else None)
        if called is None:
            continue
        last = frames[-1] if frames else None
        if called.file.removesuffix(".py") in _STDLIB_MODULES and last is not None and last.file.startswith("flashinfer/"):
            # a skipped step: the FlashInfer function of that file that makes this call
            gap = source.caller(last.file, step.call) or source.caller(last.file, _dotted(called))
            if gap and gap != last.function:
                inferred.append(f"{gap} (the one function in {last.file} that calls {step.call}) between "
                                f"{last.function} and {step.call}")
                frames.append(Frame(last.file, 0, gap))
        frames.append(called)
    numbers.extend([previous] * (len(frames) - len(numbers)))
    return Placed(tuple(dict.fromkeys(zip(numbers, frames))), tuple(dict.fromkeys(inferred)))


def _flashinfer_frames(step: Step, file: str, source: FlashInferSource, inferred: list[str]) -> list[Frame]:
    """A step inside FlashInfer: the function it names, or, for a source line ("return self.aot_path.exists()"),
    the one function of that file that makes the call, then the standard-library call itself."""
    name = step.call.rsplit(".", 1)[-1]
    defined = file in source.defined_in.get(name, ())
    if step.line and step.code:
        enclosing = source.caller(file, step.call)
        if enclosing:
            inferred.append(f"{file}:{step.line} is in {enclosing} (the one function there that calls {step.call})")
        function = enclosing or (name if defined and "." not in step.call else "?")
    else:
        function = name if defined else (source.caller(file, step.call) or "?")
    frames = [Frame(file, step.line, function)]
    if (called := _stdlib(step.call)) is not None:
        frames.append(called)
    return frames


def _dotted(frame: Frame) -> str:
    return f"{frame.file.removesuffix('.py')}.{frame.function}"
