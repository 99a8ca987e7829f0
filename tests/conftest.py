"""Shared helpers for the kit's own tests: pytester, and the captured dynamo messages as data."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

REPO_ROOT = Path(__file__).resolve().parent.parent
SIGNATURE_FIXTURES = REPO_ROOT / "tests" / "data" / "signatures"
_NAME_RE = re.compile(r"torch-(?P<torch>[\d.]+)_(?P<mode>mode\d)\.txt")


@dataclasses.dataclass(frozen=True)
class CapturedMessage:
    """One file of tests/data/signatures/: '# key: value' header, a blank line, then str(exc)."""

    path: Path
    torch: str  # "2.9.1", from the file name
    mode: str  # "mode1".."mode4", from the file name
    header: dict[str, str]
    message: str

    @property
    def exception_type(self) -> str:
        return self.header["exception"]

    @property
    def lru_cache_warnings(self) -> tuple[str, ...]:
        """The header's warnings ('none' -> empty; several are joined with ' | ')."""
        raw = self.header.get("lru_cache-warning", "none")
        return () if raw == "none" else tuple(w.strip() for w in raw.split(" | "))


def read_captured_message(path: Path) -> CapturedMessage:
    header_text, _, message = path.read_text().partition("\n\n")
    header = {}
    for line in header_text.splitlines():
        key, _, value = line.removeprefix("# ").partition(": ")
        header[key] = value
    name = _NAME_RE.fullmatch(path.name)
    assert name, f"unexpected fixture name {path.name}"
    return CapturedMessage(path, name["torch"], name["mode"], header, message)


CAPTURED_MESSAGES: tuple[CapturedMessage, ...] = tuple(
    read_captured_message(p) for p in sorted(SIGNATURE_FIXTURES.glob("torch-*_mode*.txt"))
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Any test that asks for `captured` runs once per fixture file, with the file name as id."""
    if "captured" in metafunc.fixturenames:
        metafunc.parametrize("captured", CAPTURED_MESSAGES, ids=[c.path.stem for c in CAPTURED_MESSAGES])


@pytest.fixture
def captured_messages() -> dict[tuple[str, str], CapturedMessage]:
    """Every captured message, keyed by (torch version, mode id)."""
    return {(c.torch, c.mode): c for c in CAPTURED_MESSAGES}
