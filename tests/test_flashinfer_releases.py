"""Where each FlashInfer release defines fp4_quantize (fixtures/flashinfer_releases.json, read from each wheel), and the
error strings the README box prints per spelling."""

from __future__ import annotations

import json

import lab.flashinfer_releases as fi
from pcgkit import resources


def _table():
    return {r.flashinfer: r for r in fi.parse_table(json.loads(resources.fixture(fi.TABLE_FILE).read_text()))}


def test_the_module_moved_in_0_6_7_as_read_from_the_wheels():
    """0.6.6 defines fp4_quantize in flashinfer/fp4_quantization.py, 0.6.7 through 0.7.4 in flashinfer/quantization/."""
    table = _table()
    assert table["0.6.6"].fp4_module == "flashinfer/fp4_quantization.py"
    assert table["0.6.7"].fp4_module == "flashinfer/quantization/fp4_quantization.py"
    assert table["0.7.4"].fp4_module == "flashinfer/quantization/fp4_quantization.py"
    assert [path for path, _ in fi.spellings(tuple(table.values()))] == [
        "flashinfer/fp4_quantization.py", "flashinfer/quantization/fp4_quantization.py"]
    assert all(r.wheel.startswith(f"flashinfer_python-{v}-") and r.read_on for v, r in table.items())


def test_fp4_module_is_the_file_that_defines_the_function_not_a_reexport():
    """A re-export (`from .quantization.fp4_quantization import fp4_quantize`) is not the defining module."""
    texts = {"flashinfer/fp4_quantization.py": "from .quantization.fp4_quantization import fp4_quantize\n",
             "flashinfer/quantization/fp4_quantization.py": "import torch\n\ndef fp4_quantize(\n    input,\n):\n    ...\n"}
    assert fi.fp4_module_from_texts(texts) == "flashinfer/quantization/fp4_quantization.py"
    assert fi.fp4_module_from_texts({"flashinfer/x.py": "    def fp4_quantize(self):\n"}) is None


def test_box_names_both_spellings_with_their_releases():
    """Every error string that names the fp4 module names both spellings, each with the releases read that have it
    (docs/check-environment.md's list, which the README box links)."""
    page = (resources.fixtures_dir().parent / "docs" / "check-environment.md").read_text()
    box = page.split("<!-- generated:error-strings -->")[1].split("<!-- /generated:error-strings -->")[0]
    lines = [line for line in box.splitlines() if "fp4_quantization.py" in line and line.startswith("- ")]
    assert lines
    for line in lines:
        assert "`flashinfer/fp4_quantization.py` (FlashInfer 0.5.0–0.6.6)" in line
        assert "`flashinfer/quantization/fp4_quantization.py` (FlashInfer 0.6.7–0.7.4)" in line
    assert "`fixtures/flashinfer_releases.json`, each release's wheel read" in box
