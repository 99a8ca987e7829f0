"""`pcgkit env`: the capture, its schema, redaction of planted secrets, broken installs, and --diff."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import jsonschema
import pytest

from pcgkit.bugreport.envcapture import probe_container, relevant_env_vars, render_text
from pcgkit.bugreport.envdiff import diff_lines, load_capture
from pcgkit.cli import main
from pcgkit.errors import UsageError
from pcgkit.util import proc
from pcgkit.util.redact import REDACTED, redact_text

REPO_ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((REPO_ROOT / "fixtures" / "schemas" / "env.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())

# Planted secrets: none of these values may appear in any output or file.
PLANTED = {
    "HF_TOKEN": "hf_plantedTokenValue0123456789",
    "NCCL_IB_AUTH_KEY": "ncclPlantedSecret4567",
    "FLASHINFER_CUBIN_DOWNLOAD_URL": "https://planteduser:plantedPassw0rd@mirror.example.invalid/cubins/",
    "SGLANG_API_PASSWORD": "sglangPlantedPw999",
}
SECRET_STRINGS = (
    "hf_plantedTokenValue0123456789", "ncclPlantedSecret4567", "plantedPassw0rd", "planteduser", "sglangPlantedPw999",
)
# Relevant but not secret: must be captured as is.
PLANTED_PLAIN = {"NCCL_SOCKET_IFNAME": "planted-eth7", "TORCH_LOGS": "+dynamo"}


def _pcgkit(args: list[str], env: dict, cwd: Path) -> tuple[bool, str]:
    """(exit status 0, the whole of stdout+stderr) of one `pcgkit` command."""
    log = cwd / f"pcgkit-{args[0]}-{len(list(cwd.glob('pcgkit-*.log')))}.log"
    argv = [sys.executable, "-m", "pcgkit.cli", *args]
    completed = proc.run(argv, env=env, cwd=cwd, timeout=240, log_path=log, echo=False)
    return completed.ok, log.read_text()


def _assert_no_secret(text: str, where: str) -> None:
    for secret in SECRET_STRINGS:
        assert secret not in text, f"planted secret {secret!r} leaked into {where}"


@pytest.fixture(scope="module")
def real_capture(tmp_path_factory):
    """One real `pcgkit env --json` in the reference venv, with secrets planted in its environment."""
    out = tmp_path_factory.mktemp("env") / "env.json"
    env = {**os.environ, **PLANTED, **PLANTED_PLAIN}
    ok, output = _pcgkit(["env", "--json", "--out", str(out)], env, out.parent)
    assert ok, output
    return json.loads(out.read_text()), out.read_text() + output


def test_real_capture_validates_against_the_schema(real_capture):
    """The capture of the reference venv is valid pcgkit.env/1 JSON."""
    data, _ = real_capture
    VALIDATOR.validate(data)


def test_real_capture_builds_on_collect_env_and_adds_the_bug_family(real_capture):
    """torch's collect_env fields are kept and our additions (packages, toolkit, devices) are there."""
    data, _ = real_capture
    assert data["torch_collect_env"]["fields"]["torch_version"].startswith(data["packages"]["torch"])
    assert "PyTorch version" in data["torch_collect_env"]["text"]
    assert data["packages"]["flashinfer-python"] and data["flashinfer"]["import_ok"] is True
    assert data["cuda_toolkit"]["cuda_home"] and data["cuda_toolkit"]["nvcc_version"]
    if not data["devices"]["gpus"]:  # this machine has no GPU: the capture must say simulated
        assert data["devices"]["mode"] == "simulated SM120" and "simulated" in data["devices"]["label"]


def test_real_capture_redacts_planted_secrets(real_capture):
    """Secret-named variables and URL credentials never reach the file or the terminal."""
    data, everything = real_capture
    _assert_no_secret(everything, "pcgkit env --json")
    env_vars = data["env_vars"]
    assert env_vars["NCCL_IB_AUTH_KEY"] == REDACTED
    assert env_vars["SGLANG_API_PASSWORD"] == REDACTED
    assert env_vars["FLASHINFER_CUBIN_DOWNLOAD_URL"] == f"https://{REDACTED}@mirror.example.invalid/cubins/"
    assert env_vars["NCCL_SOCKET_IFNAME"] == "planted-eth7" and env_vars["TORCH_LOGS"] == "+dynamo"
    assert "HF_TOKEN" not in env_vars  # not a relevant prefix: not captured at all


@pytest.fixture
def broken_install(tmp_path):
    """A PYTHONPATH whose torch and flashinfer raise on import, as a broken install would.

    The broken torch keeps its utils/collect_env.py (a missing .so leaves the files in place).
    """
    import importlib.util

    for package in ("torch", "flashinfer"):
        (tmp_path / "shadow" / package).mkdir(parents=True)
        (tmp_path / "shadow" / package / "__init__.py").write_text(
            f"raise ImportError('planted: {package} is broken (libfoo.so: cannot open shared object file)')\n"
        )
    real_torch = Path(importlib.util.find_spec("torch").submodule_search_locations[0])
    (tmp_path / "shadow" / "torch" / "utils").mkdir()
    (tmp_path / "shadow" / "torch" / "utils" / "collect_env.py").write_text(
        (real_torch / "utils" / "collect_env.py").read_text()
    )
    env = {**os.environ, **PLANTED, "PYTHONPATH": f"{tmp_path / 'shadow'}{os.pathsep}{REPO_ROOT}"}
    return env, tmp_path


def test_capture_survives_broken_torch_and_flashinfer(broken_install):
    """With torch and flashinfer failing to import, `pcgkit env --json` still exits 0 and says why."""
    env, tmp_path = broken_install
    ok, output = _pcgkit(["env", "--json", "--out", str(tmp_path / "env.json")], env, tmp_path)
    assert ok, output
    data = json.loads((tmp_path / "env.json").read_text())
    VALIDATOR.validate(data)
    assert data["torch"]["import_ok"] is False and "planted: torch is broken" in data["torch"]["error"]
    assert data["flashinfer"]["import_ok"] is False and "planted: flashinfer is broken" in data["flashinfer"]["error"]
    # collect_env still ran: the OS half of the report is there, and it knows torch is unusable.
    assert data["torch_collect_env"]["torch_available"] is False
    assert data["torch_collect_env"]["fields"]["os"]
    _assert_no_secret((tmp_path / "env.json").read_text() + output, "broken-install capture")


def test_text_output_of_a_broken_install_names_the_failure_without_secrets(broken_install):
    """The text form says which import fails and still redacts the planted URL credentials."""
    env, tmp_path = broken_install
    ok, output = _pcgkit(["env"], env, tmp_path)
    assert ok, output
    assert "import torch: FAILS: ImportError: planted: torch is broken" in output
    assert f"FLASHINFER_CUBIN_DOWNLOAD_URL=https://{REDACTED}@mirror.example.invalid/cubins/" in output
    _assert_no_secret(output, "pcgkit env (text)")


def test_url_credentials_are_removed_wherever_they_appear():
    """user:password@ and token@ in any URL inside free text are replaced; the host stays."""
    text = "pip index https://u:p4ss@pypi.example/simple and git+https://ghp_abc123@github.com/x"
    assert redact_text(text) == (
        f"pip index https://{REDACTED}@pypi.example/simple and git+https://{REDACTED}@github.com/x"
    )


def test_secret_values_are_scrubbed_from_other_variables():
    """A secret echoed inside a non-secret variable is scrubbed there too."""
    environ = {"MY_API_KEY": "s3cr3tvalue", "TORCH_EXTRA": "--key=s3cr3tvalue", "CUDA_VISIBLE_DEVICES": "0"}
    assert relevant_env_vars(environ) == {"CUDA_VISIBLE_DEVICES": "0", "TORCH_EXTRA": f"--key={REDACTED}"}


def test_container_probe_reads_the_image_from_podman_containerenv(tmp_path):
    """/run/.containerenv's image= line names the image; /.dockerenv alone says 'unknown'."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / ".containerenv").write_text('engine="podman-4.9"\nimage="localhost/pcgkit-cell:torch2.9.1"\n')
    assert probe_container({}, tmp_path)["image"] == "localhost/pcgkit-cell:torch2.9.1"
    (tmp_path / "run" / ".containerenv").unlink()
    (tmp_path / ".dockerenv").touch()
    docker = probe_container({}, tmp_path)
    assert docker["inside"] is True and docker["image"].startswith("unknown")
    assert probe_container({"PCGKIT_IMAGE": "pcgkit/cell@sha256:abc"}, tmp_path)["image"] == "pcgkit/cell@sha256:abc"
    assert probe_container({}, tmp_path / "nowhere")["inside"] is False


def _capture(**overrides) -> dict:
    base = {
        "schema": "pcgkit.env/1",
        "created": "2026-11-29T00:00:00+00:00",
        "python": {"version": "3.12.1", "executable": "/v/bin/python"},
        "packages": {"torch": "2.9.1", "flashinfer-python": "0.6.1", "sglang": None},
        "torch_collect_env": {"text": "long text", "fields": {"gcc_version": "12.2.0"}},
        "cuda_toolkit": {"cuda_home": "/usr/local/cuda", "nvcc_version": "13.0"},
        "devices": {"mode": "simulated SM120", "gpus": []},
        "env_vars": {"CUDA_HOME": "/usr/local/cuda"},
    }
    for dotted, value in overrides.items():
        section, key = dotted.split("__")
        if value is None:
            base[section].pop(key, None)
        else:
            base[section][key] = value
    return base


def test_diff_prints_only_what_differs():
    """Two captures differing in torch and one variable give exactly those two lines (timestamps ignored)."""
    a = _capture()
    b = _capture(packages__torch="2.10.0", env_vars__CUDA_HOME=None, env_vars__NCCL_DEBUG="INFO")
    b["created"] = "2026-12-01T00:00:00+00:00"
    assert diff_lines(a, b) == [
        "env_vars.CUDA_HOME: /usr/local/cuda -> (absent)",
        "env_vars.NCCL_DEBUG: (absent) -> INFO",
        "packages.torch: 2.9.1 -> 2.10.0",
    ]
    assert diff_lines(a, _capture()) == []


def test_diff_reads_results_files_and_report_folders(tmp_path, capsys):
    """A results.json (in a report folder) is compared on what it recorded, against a full capture."""
    results = {
        "schema": "pcgkit.results/1",
        "environment": {
            "versions": {"torch": "2.10.0", "flashinfer-python": "0.6.1", "python": "3.12.1", "torch_cuda": "12.8"},
            "devices": [],
            "cuda_home": "/usr/local/cuda",
        },
        "results": [],
    }
    (tmp_path / "cell").mkdir()
    (tmp_path / "cell" / "results.json").write_text(json.dumps(results))
    (tmp_path / "a.json").write_text(json.dumps(_capture()))
    assert main(["env", "--diff", str(tmp_path / "a.json"), str(tmp_path / "cell")]) == 0
    assert capsys.readouterr().out.splitlines() == ["packages.torch: 2.9.1 -> 2.10.0"]
    with pytest.raises(UsageError):
        load_capture(tmp_path / "empty-folder-that-does-not-exist")


def test_diff_prefers_a_capture_embedded_in_results(tmp_path):
    """A results file carrying environment.env is compared as that full capture."""
    results = {"schema": "pcgkit.results/1", "environment": {"env": _capture(packages__torch="2.8.0")}, "results": []}
    (tmp_path / "results.json").write_text(json.dumps(results))
    assert load_capture(tmp_path)["packages"]["torch"] == "2.8.0"


def test_text_rendering_says_simulated_when_there_is_no_gpu():
    """With no GPU the text names the simulated SM120 instead of leaving the GPU line empty."""
    data = _capture()
    data["devices"]["label"] = "simulated SM120 (no GPU; hardware queries answered as 12.0)"
    assert "GPUs: none -> simulated SM120" in render_text(data)


def test_diff_takes_matrix_cell_ids(tmp_path, capsys):
    """`--diff seed fi-0.7.4` finds the two cells' folders under REPORTS/matrix/cells; unknown ids are errors."""
    from pcgkit.cli import main

    for cell, torch_version in (("seed", "2.9.1"), ("fi-0.7.4", "2.14.1")):
        folder = tmp_path / "matrix" / "cells" / cell
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(json.dumps({
            "schema": "pcgkit.results/1", "results": [],
            "environment": {"versions": {"torch": torch_version, "python": "3.12.1"}},
        }))
    assert main(["env", "--diff", "seed", "fi-0.7.4", "--reports", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2.9.1 -> 2.14.1" in out and "python" not in out
    assert main(["env", "--diff", "seed", "no-such-cell", "--reports", str(tmp_path)]) == 2
