"""`pcgkit run` for real, in the reference environment (this interpreter): the four modes, and
the ways a run can break (broken install, hung run) ending as `error` cells, never bug verdicts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # `pcgkit run` end to end in the reference env, a hung run and a broken install: minutes

ROOT = Path(__file__).resolve().parent.parent

# No importorskip: these tests run in the reference environment (bin/pcgkit test), where a torch or
# flashinfer that does not import is a broken install and must fail, not skip.


def run_pcgkit(reports: Path, *extra: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    completed = subprocess.run(
        [sys.executable, "-m", "pcgkit.cli", "run", "--reports", str(reports), *extra],
        cwd=ROOT, capture_output=True, text=True, env=env or os.environ.copy(), timeout=900,
    )
    results_path = reports / "results.json"
    data = json.loads(results_path.read_text()) if results_path.exists() else {}
    return completed, data


PLANTED_SECRETS = {
    "FLASHINFER_PLANTED_API_TOKEN": "fi-planted-token-4242",
    "PCGKIT_PLANTED_PASSWORD": "planted-password-4242",
    "PIP_INDEX_URL": "https://planted-user:planted-url-pass-4242@pypi.example.invalid/simple",
}
SECRET_VALUES = ("fi-planted-token-4242", "planted-password-4242", "planted-url-pass-4242")


def simulated(data: dict) -> dict[str, dict]:
    """The four failure modes' simulated results (fix cases are checked in their own tests)."""
    modes = {f"mode{i}" for i in range(1, 5)}
    return {r["mode"]: r for r in data["results"] if r["variant"] == "sim-sm120" and r["mode"] in modes}


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    reports = tmp_path_factory.mktemp("reports")
    # Secrets planted in the environment of a real run: no report file may contain them.
    completed, data = run_pcgkit(reports, "-m", "cpu_sim", env={**os.environ, **PLANTED_SECRETS})
    return reports, completed, data


def test_reference_run_reproduces_the_four_modes(reference_run):
    """Simulated SM120 on the reference pins: every mode reproduced, at the documented frames."""
    _, completed, data = reference_run
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    results = simulated(data)
    assert {m: r["verdict"] for m, r in results.items()} == {f"mode{i}": "reproduced" for i in range(1, 5)}
    frame = {m: (r["signature"] or {}).get("innermost_library_frame") for m, r in results.items()}
    assert frame["mode1"] == "flashinfer/jit/cpp_ext.py:69:get_cuda_version"
    assert frame["mode3"] == "flashinfer/jit/cpp_ext.py:69:get_cuda_version"
    assert frame["mode2"].startswith("flashinfer/jit/") and "get_cuda_version" not in frame["mode2"]
    assert "torch.compiler.disable" in results["mode4"]["signature"]["message_head"]


def test_reference_run_carries_evidence(reference_run):
    """Each verdict names versions, the simulated device, a signature and a duration."""
    _, _, data = reference_run
    for result in simulated(data).values():
        assert result["versions"]["torch"] and result["versions"]["flashinfer-python"] and result["versions"]["python"]
        assert result["simulated"] is True and "simulated SM120" in result["device"]["label"]
        assert result["signature"]["exception_type"].startswith("torch._dynamo.exc.")
        assert result["duration_s"] > 0
    mode3 = simulated(data)["mode3"]
    assert mode3["evidence"]["get_cuda_version.cache_info"]["currsize"] >= 1
    assert mode3["signature"]["lru_cache_warnings"]


def test_reference_run_writes_reports_labelled_simulated(reference_run):
    """summary.md and junit.xml exist and say the result was simulated."""
    reports, completed, _ = reference_run
    summary = (reports / "summary.md").read_text()
    assert "SIMULATED SM120" in summary and "sim-sm120 (simulated)" in summary
    junit = (reports / "junit.xml").read_text()
    assert 'name="pcgkit.simulated" value="true"' in junit
    assert "SIMULATED SM120" in completed.stdout


def test_broken_flashinfer_install_is_an_error_not_a_verdict(tmp_path):
    """A flashinfer that fails to import turns every case into `error` with the reason."""
    broken = tmp_path / "site" / "flashinfer"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('simulated broken build: libflashinfer.so missing')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    completed, data = run_pcgkit(tmp_path / "reports", "-m", "cpu_sim", env=env)
    assert completed.returncode == 3  # ExitCode.ERROR_CELLS: error rows, not a behaviour change
    for result in simulated(data).values():
        assert result["verdict"] == "error"
        assert "broken install" in result["reason"] and "libflashinfer.so missing" in result["reason"]


def test_hung_run_is_killed_and_reported_as_errors(tmp_path):
    """A run past --timeout is killed (process group) and every mode becomes `error`, report written."""
    completed, data = run_pcgkit(tmp_path / "reports", "--timeout", "2")
    assert completed.returncode == 3  # ExitCode.ERROR_CELLS
    results = {r["mode"]: r for r in data["results"]}
    assert {"mode1", "mode2", "mode3", "mode4"} <= set(results)
    assert all(r["verdict"] == "error" and "timed out" in r["reason"] for r in results.values())
    assert (tmp_path / "reports" / "summary.md").exists()


def test_reference_run_leaks_no_planted_secret(reference_run):
    """Secrets in the run's environment appear in no report file (JUnit, JSON, summary, pytest log)."""
    reports, completed, _ = reference_run
    files = [p for p in reports.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"junit.xml", "results.json", "summary.md", "pytest.log"}
    for path in files:
        text = path.read_text(errors="replace")
        for secret in SECRET_VALUES:
            assert secret not in text, f"planted secret leaked into {path.name}"
    for secret in SECRET_VALUES:
        assert secret not in completed.stdout + completed.stderr
