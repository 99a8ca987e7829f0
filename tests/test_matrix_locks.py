"""Reproducible cells: rules derived from versions, committed locks (stale ones refused), the installed
set and the file-overlap check, the JIT cache key. No uv and no network: stand-in commands only."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from pcgkit.matrix import installed, jitcache, locks
from pcgkit.matrix.backends import loop
from pcgkit.matrix.backends import venv as backend_venv
from pcgkit.matrix.backends.base import BackendConfig
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.pins import DEFAULT_PINS_FILE, load_pins
from pcgkit.matrix.plan import DEFAULT_MATRIX_FILE, load_matrix, plan
from pcgkit.matrix.rules import RulesError, apply_rules, load_rules, parse_rules

CUDA_PYTHON_RULE = "cuda-python>=12.8"
HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"  # cells built on this interpreter (PCGKIT_PYTHON)


def test_default_plan_derives_cuda_python_constraint_from_flashinfer_version():
    """fi-0.7.4 (which lacked it by hand) and every flashinfer >= 0.6.15 cell get cuda-python>=12.8; 0.6.14 and older do not."""
    cells = {c.id: c for c in plan(load_matrix(DEFAULT_MATRIX_FILE), load_pins(DEFAULT_PINS_FILE), locks_dir=None)}
    for cell_id in ("fi-0.6.18.post1", "fi-0.7.0", "fi-0.7.4", "sglang-0.5.17", "sglang-0.5.18", "sglang-0.5.23"):
        assert CUDA_PYTHON_RULE in cells[cell_id].constraints, cell_id
    for cell_id in ("seed", "fi-0.6.12", "sglang-0.5.16"):
        assert CUDA_PYTHON_RULE not in cells[cell_id].constraints, cell_id
    assert "cuda-python" not in DEFAULT_MATRIX_FILE.read_text().split("install_rules.toml")[-1]  # never copied per cell


def test_rules_keep_explicit_constraints_and_reject_bad_tables():
    """A rule adds its constraint after the cell's own, once; a rule with an unknown axis is a clear error."""
    rules = load_rules()
    cell = Cell("c", flashinfer="0.7.4", torch="2.14.1", constraints=("x<2", CUDA_PYTHON_RULE))
    assert apply_rules([cell], rules)[0].constraints == ("x<2", CUDA_PYTHON_RULE)
    with pytest.raises(RulesError, match="`when` needs"):
        parse_rules('schema = "pcgkit.install-rules/1"\n[[rule]]\nwhen = {cuda = ">=1"}\nconstraints = ["a"]\nwhy = "w"\n')


def test_committed_locks_are_current_for_the_default_matrix():
    """Every committed lock was made from the inputs its cell has today (else the cell would refuse to install)."""
    cells = plan(load_matrix(DEFAULT_MATRIX_FILE), load_pins(DEFAULT_PINS_FILE))
    stale = []
    for cell in cells:
        path = locks.lock_path(locks.DEFAULT_LOCKS_DIR, cell.id)
        if path.is_file():
            assert cell.lock_digest == locks.file_digest(path.read_text())
            if locks.inputs_digest_of(path.read_text()) != backend_venv.cell_lock_inputs(cell).digest:
                stale.append(cell.id)
    assert stale == [], f"re-lock with `bin/pcgkit lab lock --cell ID`: {stale}"
    seed = locks.pinned(locks.lock_path(locks.DEFAULT_LOCKS_DIR, "seed").read_text())
    assert (seed["torch"], seed["flashinfer-python"], seed["sglang"]) == ("2.9.1", "0.6.1", "0.5.8")
    assert "--hash=sha256:" in locks.lock_path(locks.DEFAULT_LOCKS_DIR, "seed").read_text()


def test_a_refreshed_lock_changes_the_cells_identity(tmp_path: Path):
    """The lock's digest is part of the cell's definition: refreshing a lock reruns the cell."""
    cell = Cell("c", flashinfer="0.6.1", torch="2.9.1")
    (tmp_path / "c.txt").write_text("# inputs: 0000000000000000\na==1\n")
    first = locks.with_lock_digests([cell], tmp_path)[0]
    (tmp_path / "c.txt").write_text("# inputs: 0000000000000000\na==2\n")
    second = locks.with_lock_digests([cell], tmp_path)[0]
    assert len({cell.definition_hash, first.definition_hash, second.definition_hash}) == 3


def test_stale_lock_is_an_install_error_that_says_how_to_refresh(monkeypatch, tmp_path: Path):
    """A committed lock made from other inputs is never installed: the error names `bin/pcgkit lab lock --cell ID`."""
    monkeypatch.setenv("PCGKIT_PYTHON", sys.executable)
    (tmp_path / "locks").mkdir()
    (tmp_path / "locks" / "c.txt").write_text("# inputs: 0123456789abcdef\ntorch==2.9.1\n")
    config = BackendConfig(cells_root=tmp_path / "cells", envs_root=tmp_path / "envs", locks_dir=tmp_path / "locks")
    outcome = loop.run_cell(backend_venv.BACKEND, Cell("c", python=HERE, flashinfer="0.6.1", torch="2.9.1"), config)
    assert (outcome.status, outcome.stage) == ("error", "install")
    assert "lock out of date" in outcome.reason and "bin/pcgkit lab lock --cell c" in outcome.reason
    assert outcome.lock["source"] == "committed"


def _dist(site: Path, name: str, version: str, files: dict[str, str]) -> None:
    """A minimal installed distribution: METADATA and a RECORD listing `files` (path -> content)."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    import base64
    import hashlib

    rows = []
    for path, content in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(content)
        digest = base64.urlsafe_b64encode(hashlib.sha256(content.encode()).digest()).rstrip(b"=").decode()
        rows.append(f"{path},sha256={digest},{len(content)}")
    rows.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(rows) + "\n")


def test_two_distributions_owning_one_file_is_named_identical_copies_are_not(tmp_path: Path):
    """cuda-python 12.6.2.post1 over cuda-bindings 13.x is an overlap naming both; a shared empty nvidia/__init__.py is not."""
    site = tmp_path / "lib" / "python3.12" / "site-packages"
    _dist(site, "cuda-bindings", "13.5.0", {"cuda/bindings/runtime.pyx": "13", "nvidia/__init__.py": ""})
    _dist(site, "cuda-python", "12.6.2.post1", {"cuda/bindings/runtime.pyx": "12", "cuda/__init__.py": "x"})
    _dist(site, "nvidia-cublas-cu12", "12.8.4.1", {"nvidia/__init__.py": ""})
    dists = installed.read_installed(installed.site_packages(tmp_path))
    assert installed.freeze(dists) == {"cuda-bindings": "13.5.0", "cuda-python": "12.6.2.post1", "nvidia-cublas-cu12": "12.8.4.1"}
    overlaps = installed.file_overlaps(dists)
    assert [(o.path, o.owners) for o in overlaps] == [
        ("cuda/bindings/runtime.pyx", ("cuda-bindings==13.5.0", "cuda-python==12.6.2.post1"))]
    assert "cuda-bindings==13.5.0 and cuda-python==12.6.2.post1 both install 1 file" in installed.describe_overlaps(overlaps)


def test_overlapping_environment_is_an_error_cell_never_a_run(monkeypatch, tmp_path: Path):
    """An install that leaves two owners of one file gives an install error naming both, and no case runs."""
    monkeypatch.setenv("PCGKIT_PYTHON", sys.executable)
    locks_dir = tmp_path / "locks"
    locks_dir.mkdir()
    cell = Cell("c", python=HERE, flashinfer="0.7.4", torch="2.14.1")
    (locks_dir / "c.txt").write_text(f"# inputs: {backend_venv.cell_lock_inputs(cell).digest}\n")
    site = "lib/python3.12/site-packages"

    def fake_install(env_dir, base_python, lock_file):
        make = textwrap.dedent(f"""\
            mkdir -p {env_dir}/bin {env_dir}/{site} && ln -sf {base_python} {env_dir}/bin/python
            """)
        return [["sh", "-c", make], ["true"]]

    monkeypatch.setattr(backend_venv, "install_commands", fake_install)
    env_dir = backend_venv.env_dir_for(cell, BackendConfig(cells_root=tmp_path, envs_root=tmp_path / "envs"))
    _dist(env_dir / site, "cuda-bindings", "13.5.0", {"cuda/bindings/runtime.pyx": "13"})
    _dist(env_dir / site, "cuda-python", "12.6.2.post1", {"cuda/bindings/runtime.pyx": "12"})
    ran = []
    monkeypatch.setattr(backend_venv.runjob, "execute", lambda plan: ran.append(plan))
    config = BackendConfig(cells_root=tmp_path / "cells", envs_root=tmp_path / "envs", locks_dir=locks_dir)
    outcome = loop.run_cell(backend_venv.BACKEND, cell, config)
    assert (outcome.status, outcome.stage) == ("error", "install") and ran == []
    assert "cuda-bindings==13.5.0 and cuda-python==12.6.2.post1" in outcome.reason
    assert outcome.installed == {"cuda-bindings": "13.5.0", "cuda-python": "12.6.2.post1"}
    assert {"env", "install", "check", "total"} <= set(outcome.costs)


def test_lock_rendering_records_inputs_and_keeps_sglang_without_deps():
    """A lock's header carries its inputs' digest; sglang sits in the no-deps part; pinned() reads every pin."""
    cell = Cell("s", sglang="0.5.8", flashinfer="0.6.1", torch="2.9.1", constraints=("c<2",))
    inputs = locks.lock_inputs(cell, ["pytest>=8"], ["orjson"])
    assert inputs.no_deps == ("sglang==0.5.8",) and "orjson" in inputs.requirements and inputs.constraints == ("c<2",)
    text = locks.render_lock("s", inputs, "torch==2.9.1 \\\n    --hash=sha256:aa\n", "sglang==0.5.8 \\\n    --hash=sha256:bb\n")
    assert locks.inputs_digest_of(text) == inputs.digest
    assert text.index(locks.NO_DEPS_MARK) < text.index("sglang==0.5.8 \\")
    assert locks.pinned(text) == {"torch": "2.9.1", "sglang": "0.5.8"}
    argv = locks.compile_argv(["uv"], "/p", inputs, Path("in"), Path("out"), no_deps=True)
    assert {"--generate-hashes", "--no-deps", "--python-platform"} <= set(argv) and argv[argv.index("--python-version") + 1] == "3.12"


def test_jit_cache_key_separates_every_input_that_changes_the_build():
    """Same FlashInfer, torch, CUDA runtime, python and arch facts share a key; changing any one does not."""
    facts = jitcache.ArchFacts("", "none", "/usr/local/cuda-13.0/bin/nvcc")
    base = {"flashinfer-python": "0.6.1", "torch": "2.9.1", "nvidia-cuda-runtime-cu12": "12.8.90"}
    key = jitcache.cache_key(base, "3.12", facts)
    assert key == jitcache.cache_key(dict(base), "3.12", facts) and key.startswith("fi0.6.1-torch2.9.1-py3.12-")
    variants = [
        jitcache.cache_key({**base, "torch": "2.11.0"}, "3.12", facts),
        jitcache.cache_key({**base, "nvidia-cuda-runtime-cu12": "12.9.1"}, "3.12", facts),
        jitcache.cache_key(base, "3.11", facts),
        jitcache.cache_key(base, "3.12", jitcache.ArchFacts("12.0a", "none", facts.toolkit)),
        jitcache.cache_key(base, "3.12", jitcache.ArchFacts("", "9.0", facts.toolkit)),
        jitcache.cache_key({**base, "flashinfer-python": "0.6.3"}, "3.12", facts),
    ]
    assert len({key, *variants}) == 7
    assert jitcache.cache_key({"torch": "2.9.1"}, "3.12", facts) is None


def test_no_committed_lock_pairs_a_monolithic_cuda_python_with_cuda_bindings():
    """cuda-python < 12.8 ships its own cuda/bindings files: no committed lock may put it beside cuda-bindings."""
    from packaging.version import Version

    bad = []
    for path in sorted(locks.DEFAULT_LOCKS_DIR.glob("*.txt")):
        pins = locks.pinned(path.read_text())
        if "cuda-python" in pins and "cuda-bindings" in pins and Version(pins["cuda-python"]) < Version("12.8"):
            bad.append(f"{path.stem}: cuda-python {pins['cuda-python']} + cuda-bindings {pins['cuda-bindings']}")
    assert bad == []


def test_lock_compile_names_no_temporary_folder(monkeypatch, tmp_path: Path):
    """uv resolves inside the work folder on relative names, so its `# via -r ...` lines carry no temp path."""
    from pcgkit.util import proc

    calls: list[tuple[tuple[str, ...], object]] = []

    def fake_run(argv, *, cwd=None, **kwargs):
        argv = tuple(str(a) for a in argv)
        calls.append((argv, cwd))
        out = Path(cwd) / argv[argv.index("-o") + 1]
        out.write_text(f"torch==2.9.1\n    # via -r {argv[-1]}\n")
        return proc.Completed(argv, 0, "", 0.1, False)

    monkeypatch.setattr(proc, "run", fake_run)
    monkeypatch.setattr(proc, "uv_command", lambda: ["uv"])
    cell = Cell("x", flashinfer="0.6.1", torch="2.9.1")
    inputs = locks.LockInputs(("torch==2.9.1",), ("cuda-python>=12.8",), ("sglang==0.5.8",), "3.12")
    work = tmp_path / "pcgkit-lock-x-a1b2c3"
    text = locks.compile_lock(cell, inputs, sys.executable, work, {}, 60.0)
    assert isinstance(text, str) and str(tmp_path) not in text
    assert "# via -r lock-requirements.in" in text
    # uv runs in a private folder (credentials stay out of the cell folder, tests/faults/test_redaction_everywhere.py)
    # on relative names; the cell folder gets the redacted record of the same files
    assert all(Path(cwd).name.startswith("pcgkit-lock-") and not any(str(cwd) in a or str(tmp_path) in a
                                                                     for a in argv[1:] if a != sys.executable)
               for argv, cwd in calls)
    assert (work / "lock-requirements.in").read_text() == "torch==2.9.1\n"
