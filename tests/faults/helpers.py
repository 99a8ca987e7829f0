"""Shared helpers for the fault-injection suite: outcomes on disk, the CLI in-process, one-line checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pcgkit.cli import main
from pcgkit.matrix.cells import EXISTING, Cell
from pcgkit.matrix.outcome import RAN, CellOutcome, write_outcome
from pcgkit.values.signature import Signature
from pcgkit.values.verdict import Verdict
from pcgkit.verdicts.result import CaseResult

REPO_ROOT = Path(__file__).resolve().parents[2]
DEVICE = {"name": "simulated", "compute_capability": "12.0", "simulated": True, "label": "simulated SM120"}
VERSIONS = {"flashinfer-python": "0.6.1", "torch": "2.9.1", "python": "3.12.1", "sglang": None}


def result(mode: str = "mode1", verdict: Verdict = Verdict.REPRODUCED, expected: str | None = "reproduced",
           reason: str = "known failure", message: str = "nvcc") -> CaseResult:
    sig = Signature(exception_type="torch._dynamo.exc.Unsupported", graph_break_id="gb0007", message_head=message,
                    innermost_library_frame=None, frame_chain=())
    return CaseResult(mode, "sim-sm120", verdict, reason, DEVICE, VERSIONS, 0.1, sig, expected)


def ran_cell(cell_id: str, **result_kwargs) -> CellOutcome:
    cell = Cell(cell_id, kind=EXISTING, interpreter=sys.executable)
    return CellOutcome(cell, RAN, 1.0, versions=VERSIONS, results=(result(**result_kwargs),))


def write_cells(reports: Path, *outcomes: CellOutcome) -> Path:
    root = reports / "matrix" / "cells"
    for outcome in outcomes:
        write_outcome(root / outcome.cell.id / "cell.json", outcome)
    return root


def run_main(argv: list[str], capsys) -> tuple[int, str, str]:
    """pcgkit's main() in-process: (status, stdout, stderr)."""
    status = main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_one_line_error(stderr: str) -> str:
    """The error path's contract: exactly one 'pcgkit: error:' line, no traceback."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr, stderr
    errors = [line for line in lines if line.startswith("pcgkit: error:")]
    assert len(errors) == 1, stderr
    return errors[0]


def kit_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **extra}
    env.pop("FORCE_COLOR", None)
    return env


def pcgkit(argv: list[str], cwd: Path, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    """pcgkit as a user runs it: a fresh process."""
    return subprocess.run([sys.executable, "-m", "pcgkit.cli", *argv], cwd=cwd, env=kit_env(**env),
                          capture_output=True, text=True, timeout=timeout)


def alive(pid: int) -> bool:
    """True while pid is a live (non-zombie) process, per the process table."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def stand_in_backend(monkeypatch, tmp_path: Path, cell: Cell, extra_argv: tuple[str, ...] = ()):
    """The venv backend with uv replaced by a shell stand-in (no download, no real install).

    The stand-in links the env's python to this interpreter, writes one distribution's dist-info
    (METADATA, RECORD) and counts its installs in tmp_path/installs.txt. The cell gets a committed,
    current lock, so no resolver runs. Returns (config, installs file)."""
    from pcgkit.matrix.backends import venv as backend_venv
    from pcgkit.matrix.backends.base import BackendConfig

    installs = tmp_path / "installs.txt"

    def fake_commands(env_dir, base_python, lock_file):
        site = f"{env_dir}/lib/python3.12/site-packages/tabulate-0.9.0.dist-info"
        script = (f"mkdir -p {env_dir}/bin {site} && ln -sf {base_python} {env_dir}/bin/python "
                  f"&& printf 'Name: tabulate\\nVersion: 0.9.0\\n' > {site}/METADATA && : > {site}/RECORD "
                  f"&& echo install >> {installs} && cat {lock_file}")
        return [["true", *extra_argv], ["sh", "-c", script, "uv-stand-in", *extra_argv]]

    monkeypatch.setattr(backend_venv, "install_commands", fake_commands)
    monkeypatch.setenv("PCGKIT_PYTHON", sys.executable)
    locks_dir = tmp_path / "locks"
    locks_dir.mkdir(exist_ok=True)
    (locks_dir / f"{cell.id}.txt").write_text(
        f"# inputs: {backend_venv.cell_lock_inputs(cell).digest}\n" + "".join(f"{c}\n" for c in cell.companions))
    config = BackendConfig(cells_root=tmp_path / "cells", envs_root=tmp_path / "envs", locks_dir=locks_dir)
    return config, installs


def second_user() -> tuple[str, str]:
    """(name, python) of a real unprivileged user, created once, and a system interpreter it can run (the kit's own
    may sit under /root, 0700). Skips where the tests do not run as root with useradd/runuser."""
    import shutil

    import pytest

    if os.geteuid() != 0 or shutil.which("runuser") is None or shutil.which("useradd") is None:
        pytest.skip("needs root with useradd/runuser to act as a second user")
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("no system python3 for the second user")
    name = "pcgkit-other"
    if subprocess.run(["id", name], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--no-create-home", name], check=True)
    return name, python


def shared_temp(prefix: str) -> Path:
    """A fresh folder in /tmp that another user may enter (0755): pytest's tmp_path and the kit's own per-run temp
    folder are private (0700)."""
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    folder.chmod(0o755)
    return folder
