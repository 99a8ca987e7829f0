"""Every FlashInfer release the kit speaks about, read from its own wheel (no install, no import).

What a user pastes names FlashInfer's files as their release has them: `fp4_quantize` is defined in
`flashinfer/fp4_quantization.py` up to 0.6.6 and in `flashinfer/quantization/fp4_quantization.py` from 0.6.7
(the old path stays as a re-export). The README box and triage's error strings therefore say which spelling
belongs to which releases, from this table, never typed by hand.

The table lives in fixtures/flashinfer_releases.json, written by `bin/pcgkit lab read-flashinfer`, which downloads
each wheel with `pip download --no-deps` into a cache folder outside the checkout. `fp4_module_from_texts`,
`spellings` and `parse_table` are pure; `read_wheel` opens one zip file.
"""

from __future__ import annotations

import dataclasses
import re
import zipfile
from pathlib import Path

from pcgkit.util.ranges import version_key

TABLE_FILE = "flashinfer_releases.json"
TABLE_SCHEMA = "pcgkit.flashinfer-releases/1"
_DEFINES_FP4_QUANTIZE = re.compile(r"^def fp4_quantize\(", re.M)  # the public function, at module level
_JIT_FILES = ("flashinfer/jit/cpp_ext.py", "flashinfer/jit/core.py")  # the loader frames the error strings name


@dataclasses.dataclass(frozen=True)
class FlashInferRelease:
    """One FlashInfer release as its wheel states it."""

    flashinfer: str
    fp4_module: str | None  # the file that defines the public fp4_quantize (None: not in this wheel)
    jit_files: tuple[str, ...]  # which of the JIT loader files the error strings name this wheel has
    wheel: str
    read_on: str

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "jit_files": list(self.jit_files)}

    @classmethod
    def from_dict(cls, data: dict) -> FlashInferRelease:
        return cls(str(data["flashinfer"]), data.get("fp4_module"), tuple(data.get("jit_files", ())),
                   str(data["wheel"]), str(data["read_on"]))


def fp4_module_from_texts(texts: dict[str, str]) -> str | None:
    """The wheel file (path inside it) that defines `def fp4_quantize(` at module level. Pure."""
    found = sorted(name for name, text in texts.items() if _DEFINES_FP4_QUANTIZE.search(text))
    return found[0] if found else None


def read_wheel(path: Path, flashinfer: str, read_on: str) -> FlashInferRelease:
    """Open one flashinfer-python wheel and read where fp4_quantize lives (only flashinfer/*.py are read)."""
    with zipfile.ZipFile(path) as wheel:
        names = wheel.namelist()
        texts = {name: wheel.read(name).decode("utf-8", "replace")
                 for name in names if name.startswith("flashinfer/") and name.endswith("fp4_quantization.py")}
    return FlashInferRelease(flashinfer, fp4_module_from_texts(texts), tuple(f for f in _JIT_FILES if f in names),
                             path.name, read_on)


def table_dict(releases: list[FlashInferRelease], generated: str, how: str, not_read: dict[str, str]) -> dict:
    """The JSON the table file holds, oldest release first; `not_read` names releases whose wheel was not had. Pure."""
    ordered = sorted(releases, key=lambda r: version_key(r.flashinfer))
    return {"schema": TABLE_SCHEMA, "generated": generated, "generated_by": how,
            "releases": [r.to_dict() for r in ordered], "not_read": dict(sorted(not_read.items()))}


def parse_table(data: dict, source: str = TABLE_FILE) -> tuple[FlashInferRelease, ...]:
    """The table's releases, oldest first; ValueError names what is wrong. Pure."""
    if data.get("schema") != TABLE_SCHEMA:
        raise ValueError(f"{source}: schema {data.get('schema')!r}, expected {TABLE_SCHEMA!r}")
    try:
        rows = tuple(FlashInferRelease.from_dict(row) for row in data.get("releases", ()))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{source}: a release row is malformed: {exc!r}") from exc
    return tuple(sorted(rows, key=lambda r: version_key(r.flashinfer)))


def spellings(releases: tuple[FlashInferRelease, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(fp4 module path, the releases read that define fp4_quantize there), in release order. Pure."""
    grouped: dict[str, list[str]] = {}
    for release in releases:
        if release.fp4_module:
            grouped.setdefault(release.fp4_module, []).append(release.flashinfer)
    return tuple((path, tuple(found)) for path, found in grouped.items())


def download_argv(pip: list[str], release: str, dest: Path) -> list[str]:
    """The one `pip download` of a release wheel (no dependencies, binary only). Pure."""
    return [*pip, "download", "--no-deps", f"flashinfer-python=={release}", "--only-binary=:all:",
            "--python-version", "3.12", "--dest", str(dest), "--quiet"]
