"""`pcgkit matrix --torch-build cpu`: the CPU build of a cell's locked torch, every other pin as locked.

Planning (the CPU lock's constraints and uv command, the cell's identity) is checked without uv; one
test installs for real: a test-made cell (torch 2.13.0 on Python 3.11, the one CPU wheel this machine
holds: /opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl, from PyTorch's CPU index)
whose CUDA lock uv resolves from PyPI, then the kit's own venv backend derives and installs the CPU
lock, reading the wheel from a local HTTP page shaped like PyTorch's (the index location is the one
overridable value; download.pytorch.org is not reachable here).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import http.server
import threading
import urllib.parse
from pathlib import Path

import pytest

from pcgkit.cli import main
from pcgkit.matrix import locks, torchbuild
from pcgkit.matrix.backends import venv as backend_venv
from pcgkit.matrix.backends.base import BackendConfig, Deadline
from pcgkit.matrix.cells import TORCH_BUILD_CPU, TORCH_BUILD_CUDA, Cell
from pcgkit.matrix.outcome import RAN, CellOutcome
from pcgkit.matrix.plan import with_torch_build
from pcgkit.matrix.runner import run_matrix
from pcgkit.util.interpreters import find_python
from pcgkit.util.untrusted import UntrustedValueError

CPU_WHEEL = Path("/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl")
COMMITTED = locks.DEFAULT_LOCKS_DIR


def test_cpu_lock_constrains_every_other_pin_exactly_and_asks_for_torchs_cpu_build():
    """From a committed lock: every pin but torch becomes `name==version`, torch `==<v>+cpu`; sglang's no-deps part is kept."""
    text = (COMMITTED / "sglang-0.5.19.txt").read_text()
    inputs = locks.LockInputs(("torch==2.13.0", "flashinfer-python==0.6.18"), (), ("sglang==0.5.19",), "3.12")
    plan = torchbuild.cpu_lock_plan(inputs, text, "https://mirror.example/torch/")
    locked = locks.pinned(torchbuild.split_lock(text)[0])
    assert plan.torch == "2.13.0" and "torch==2.13.0+cpu" in plan.constraints
    assert set(plan.constraints) - {"torch==2.13.0+cpu"} == {f"{n}=={v}" for n, v in locked.items() if n != "torch"}
    assert {"nvidia-cublas", "triton"} <= {c.split("==")[0] for c in plan.constraints}  # bounds only, if anything requires them
    assert plan.requirements == inputs.requirements and plan.no_deps.startswith("sglang==0.5.19")
    rendered = torchbuild.render_cpu_lock("sglang-0.5.19", plan, "abc", "torch==2.13.0+cpu \\\n    --hash=sha256:00\n")
    assert rendered.endswith(f"{locks.NO_DEPS_MARK}\n{plan.no_deps}\n") and "https://mirror.example/torch/" in rendered


def test_cpu_compile_reads_the_one_location_and_writes_it_into_the_lock():
    """The uv command resolves for the cell's Python and platform, finds torch at the location, and emits it."""
    inputs = locks.LockInputs(("torch==2.9.1",), (), (), "3.12")
    plan = torchbuild.cpu_lock_plan(inputs, "torch==2.9.1 \\\n    --hash=sha256:00\nfilelock==3.0\n", "/srv/wheels")
    argv = locks.compile_argv(["uv"], "/usr/bin/python3.12", inputs, Path("r.in"), Path("o.txt"), Path("c.txt"),
                              find_links=plan.find_links)
    assert argv[argv.index("--find-links") + 1] == "/srv/wheels" and "--emit-find-links" in argv
    assert argv[argv.index("--python-platform") + 1] == locks.LOCK_PLATFORM and argv[-1] == "r.in"
    assert plan.constraints == ("filelock==3.0", "torch==2.9.1+cpu")
    assert torchbuild.changed_pins("torch==2.9.1\ntriton==3\nfilelock==3.0\n", "torch==2.9.1+cpu\nfilelock==3.0\n") == {
        "torch": ("2.9.1", "2.9.1+cpu"), "triton": ("3", None)}


def test_hashes_read_from_the_page_reach_the_wheel_uv_left_unhashed():
    """uv writes no hash for a wheel a page links: the page's sha256 fragments of that version's wheels are added."""
    page = ('<a href="/whl/cpu/torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl#sha256=aa">x</a>'
            "<a href='/whl/cpu/torch-2.13.0%2Bcpu-cp312-cp312-manylinux_2_28_x86_64.whl#sha256=bb'>y</a>"
            '<a href="/whl/cpu/torch-2.13.0%2Bcpu-cp312-cp312-win_amd64.whl">no hash</a>'
            '<a href="/whl/cpu/torch-2.9.1%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl#sha256=cc">other version</a>')
    assert torchbuild.link_hashes(page, "torch", "2.13.0+cpu") == ("aa", "bb")
    resolved = "filelock==3.0 \\\n    --hash=sha256:ff\ntorch==2.13.0+cpu\n    # via -r r.in\n"
    hashed = torchbuild.with_hashes(resolved, "torch==2.13.0+cpu", ("aa", "bb"))
    assert "torch==2.13.0+cpu \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\n    # via -r r.in" in hashed
    assert torchbuild.with_hashes(resolved, "torch==2.13.0+cpu", ()) == resolved


def test_cpu_build_is_another_cell_identity_and_says_so_in_its_label():
    """A cpu cell gets its own definition hash (own environment, own cached result); a cuda cell keeps today's hash."""
    cell = Cell("seed", flashinfer="0.6.1", torch="2.9.1", lock_digest="d")
    cuda, cpu = with_torch_build([cell], TORCH_BUILD_CUDA)[0], with_torch_build([cell], TORCH_BUILD_CPU)[0]
    assert cuda.definition_hash == cell.definition_hash != cpu.definition_hash
    config = BackendConfig(cells_root=Path("/r"), envs_root=Path("/e"))
    assert backend_venv.env_dir_for(cpu, config) != backend_venv.env_dir_for(cell, config)
    assert "torch 2.9.1+cpu" in cpu.label() and "torch 2.9.1 " in cell.label() + " "
    assert Cell.from_dict(cpu.to_dict()) == cpu
    with pytest.raises(UntrustedValueError, match="torch_build"):
        Cell.from_dict({**cpu.to_dict(), "torch_build": "rocm"})
    existing = Cell("here", kind="existing", interpreter="/x/python")
    assert with_torch_build([existing], TORCH_BUILD_CPU) == [existing]  # an interpreter used as it is


def test_a_cpu_result_is_never_reused_for_a_cuda_run_nor_the_reverse(tmp_path: Path):
    """Cached results answer only for the build that made them: switching builds reruns, repeating one reuses."""
    ran: list[str] = []

    def fake_run(cell, config, on_stage):
        ran.append(cell.torch_build)
        return CellOutcome(cell, RAN, 0.1, versions={"torch": "2.9.1" + ("+cpu" if cell.torch_build == "cpu" else "")})

    config = BackendConfig(cells_root=tmp_path / "cells", envs_root=tmp_path / "envs")
    cell = Cell("seed", flashinfer="0.6.1", torch="2.9.1")
    for build in ("cuda", "cpu", "cpu", "cuda", "cpu"):
        run_matrix(with_torch_build([cell], build), config, jobs=1, run=fake_run, show_progress=False, expected=())
    assert ran == ["cuda", "cpu", "cuda", "cpu"]


def test_torch_build_cpu_is_refused_where_it_cannot_apply(capsys):
    """The docker backend's torch comes from its image: a one-line usage error (`lab lock` has no --torch-build: locks
    are the locked build)."""
    assert main(["matrix", "--backend", "docker", "--torch-build", "cpu", "--cell", "seed"]) == 2
    assert "--torch-build cpu: the venv backend's option" in capsys.readouterr().err


@contextlib.contextmanager
def pytorch_shaped_page(wheel: Path, root: Path):
    """A local static host shaped like download.pytorch.org: /whl/cpu/torch/ is a page with one anchor per
    wheel (an absolute path, '+' percent-encoded, the sha256 in the fragment); the wheel sits under /whl/cpu/."""
    digest = hashlib.sha256()
    with wheel.open("rb") as handle:
        for block in iter(functools.partial(handle.read, 1 << 20), b""):
            digest.update(block)
    (root / "whl" / "cpu" / "torch").mkdir(parents=True)
    (root / "whl" / "cpu" / wheel.name).symlink_to(wheel)
    href = f"/whl/cpu/{urllib.parse.quote(wheel.name)}#sha256={digest.hexdigest()}"
    (root / "whl" / "cpu" / "torch" / "index.html").write_text(
        f'<!DOCTYPE html>\n<html><body>\n<h1>Links for torch</h1>\n<a href="{href}">{wheel.name}</a><br/>\n</body></html>\n')

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/whl/cpu/torch/"
    finally:
        server.shutdown()
        server.server_close()


def test_cpu_build_installs_the_real_cpu_wheel_with_every_other_pin_as_locked(tmp_path: Path):
    """Real uv, real wheel: the CUDA lock from PyPI, its CPU build installed; torch is +cpu, no nvidia-*/triton, the rest as locked."""
    if not CPU_WHEEL.is_file():
        pytest.skip(f"{CPU_WHEEL} is not on this machine (a real CPU torch wheel from download.pytorch.org/whl/cpu)")
    base_python = find_python("3.11")
    if base_python is None:
        pytest.skip("no Python 3.11 on this machine (the CPU wheel is cp311)")
    cell = Cell("cpu-probe", python="3.11", torch="2.13.0")
    locks_dir = tmp_path / "locks"
    locks_dir.mkdir()
    inputs = backend_venv.cell_lock_inputs(cell)
    cuda_lock = locks.compile_lock(cell, inputs, base_python, tmp_path / "lock-work", backend_venv.uv_env(), 600.0)
    assert isinstance(cuda_lock, str), cuda_lock.output_tail[-2000:]
    locked = locks.pinned(cuda_lock)
    assert locked["torch"] == "2.13.0" and "triton" in locked and any(n.startswith("nvidia-") for n in locked)
    locks.lock_path(locks_dir, cell.id).write_text(cuda_lock)  # as `bin/pcgkit lab lock` commits it
    cpu_cell = dataclasses.replace(cell, torch_build=TORCH_BUILD_CPU)
    with pytorch_shaped_page(CPU_WHEEL, tmp_path / "site") as url:
        config = BackendConfig(cells_root=tmp_path / "cells", envs_root=tmp_path / "envs", locks_dir=locks_dir,
                               torch_cpu_index=url)
        prepared = backend_venv.prepare_env(cpu_cell, tmp_path / "cells" / cell.id, config, Deadline(900))
    assert prepared.python.endswith("/bin/python")
    installed = {d.name.lower().replace("_", "-"): d.version for d in prepared.installed}
    assert installed["torch"] == "2.13.0+cpu"
    assert not [n for n in installed if n.startswith("nvidia-") or n == "triton"], installed
    assert {n: v for n, v in installed.items() if n != "torch"} == {n: locked[n] for n in installed if n != "torch"}
    assert prepared.lock["source"] == "committed" and prepared.lock["torch_build"] == TORCH_BUILD_CPU
    assert prepared.lock["cpu_lock"]["changed"]["torch"] == ["2.13.0", "2.13.0+cpu"]
    assert prepared.lock["cpu_lock"]["changed"]["triton"] == [locked["triton"], None]
    record = (tmp_path / "cells" / cell.id / torchbuild.LOCK_FILE).read_text()
    assert f"--find-links {url}" in record and "torch==2.13.0+cpu" in record
