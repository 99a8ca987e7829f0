"""Install and import failures name their culprit; resolver constraints reach uv and the cell's identity."""

from __future__ import annotations

from pathlib import Path

from pcgkit.matrix import locks
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import install_failure_detail, last_exception_line
from pcgkit.matrix.pins import DEFAULT_PINS_FILE, load_pins
from pcgkit.matrix.plan import parse_matrix, plan

UV_MISSING_DEP = """error: No solution found when resolving dependencies
  cause: Because there is no version of apache-tvm-ffi==0.1.0b15 and flashinfer-python==0.4.1 depends on apache-tvm-ffi==0.1.0b15, we can conclude that flashinfer-python==0.4.1 cannot be used.
         And because you require flashinfer-python==0.4.1, we can conclude that your requirements are unsatisfiable.
"""
IMPORT_TRACEBACK = """Traceback (most recent call last):
  File "x.py", line 1, in <module>
ValueError: an earlier chained error
During handling of the above exception, another exception occurred:
  File "cuda_library_adapter.py", line 44, in <module>
AttributeError: module 'cuda.bindings.runtime' has no attribute 'cudaLibrary_t'. Did you mean: 'cudaArray_t'?
"""


def test_missing_dependency_is_named_with_its_dependent():
    """uv's 'no version of X and Y depends on X' becomes 'Y depends on X, which the index does not have'."""
    assert install_failure_detail(UV_MISSING_DEP) == (
        "flashinfer-python==0.4.1 depends on apache-tvm-ffi==0.1.0b15, which the index does not have")
    assert install_failure_detail("error: there is no version of torch==9.9") == ""


def test_import_failure_reason_is_the_last_exception_line():
    """The reason carries the final exception of the traceback, not an earlier chained one."""
    assert last_exception_line(IMPORT_TRACEBACK).startswith("AttributeError: module 'cuda.bindings.runtime'")
    assert last_exception_line("no traceback here") == ""


def test_constraints_reach_uv_and_change_only_constrained_cells_identity(tmp_path: Path):
    """A constrained cell passes --constraint to uv's resolver and hashes differently; an unconstrained one is unchanged."""
    plain = Cell("c", flashinfer="0.7.0", torch="2.14.1")
    constrained = Cell("c", flashinfer="0.7.0", torch="2.14.1", constraints=("cuda-python>=12.8",))
    assert "constraints" not in plain.definition() and plain.definition_hash != constrained.definition_hash
    inputs = locks.lock_inputs(constrained, ["pytest>=8"], [])
    argv = locks.compile_argv(["uv"], "/usr/bin/python3", inputs, tmp_path / "in.txt", tmp_path / "out.txt", tmp_path / "c.txt")
    assert argv[argv.index("--constraint") + 1] == str(tmp_path / "c.txt")
    assert "cuda-python>=12.8" not in argv and "cuda-python>=12.8" not in inputs.requirements  # bounds, installs nothing
    assert inputs.constraints == ("cuda-python>=12.8",)
    assert locks.lock_inputs(plain, ["pytest>=8"], []).digest != inputs.digest


def test_matrix_constraints_apply_to_cells_and_generated_sglang_cells():
    """`constraints` on a [[cell]] and in [sglang_releases] land on the planned cells."""
    spec = parse_matrix('''schema = "pcgkit.matrix/1"
[[cell]]
id = "a"
flashinfer-python = "0.7.0"
torch = "2.14.1"
constraints = ["cuda-python>=12.8"]
[sglang_releases]
from = "0.5.22"
to = "0.5.22"
constraints = ["x<2"]
''')
    cells = {c.id: c for c in plan(spec, load_pins(DEFAULT_PINS_FILE), rules=())}
    assert cells["a"].constraints == ("cuda-python>=12.8",)
    assert cells["sglang-0.5.22"].constraints == ("x<2",)
