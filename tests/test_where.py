"""Where a cell ran: read from CI environment variables (pure), redacted, and stable across hosted runs."""

from __future__ import annotations

from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import RAN, CellOutcome, with_where
from pcgkit.matrix.where import HOSTED, LABELS_VAR, Where, where_from

GITHUB_ENV = {
    "GITHUB_ACTIONS": "true", "RUNNER_NAME": "gpu-box-7", "RUNNER_ENVIRONMENT": "self-hosted", "GITHUB_JOB": "sm120",
    "GITHUB_RUN_ID": "123456", "GITHUB_RUN_ATTEMPT": "2", "GITHUB_REPOSITORY": "org/pcgkit",
    "GITHUB_SERVER_URL": "https://github.com", LABELS_VAR: "self-hosted,linux,sm120",
}


def where(env, host="gpu-box-7", backend="docker", **kw) -> Where:
    return where_from(env, host, "Linux-6.8", "NVIDIA RTX PRO 6000 (compute capability 12.0)", "580.65", backend, **kw)


def test_github_runner_fields_and_run_url():
    """A GitHub job records runner name, labels, job and the run's URL with its attempt."""
    w = where(GITHUB_ENV)
    assert (w.ci, w.runner_name, w.job) == ("github-actions", "gpu-box-7", "sm120")
    assert w.runner_labels == ("self-hosted", "linux", "sm120")
    assert w.run_url == "https://github.com/org/pcgkit/actions/runs/123456/attempts/2"
    assert w.key == "gpu-box-7[self-hosted,linux,sm120]/docker"


def test_hosted_runners_are_one_machine_across_random_host_names():
    """Two hosted jobs on differently named VMs get the same key (history lines up across runs)."""
    env = {**GITHUB_ENV, "RUNNER_ENVIRONMENT": HOSTED, LABELS_VAR: "ubuntu-latest"}
    assert where(env, host="fv-az101-1", backend="venv").key == where(env, host="fv-az877-3", backend="venv").key
    assert where(env, host="fv-az101-1", backend="venv").key == "ubuntu-latest/venv"


def test_secrets_in_captured_text_are_redacted():
    """A token value echoed in a runner name or URL never reaches cell.json."""
    env = {**GITHUB_ENV, "RUNNER_NAME": "box-ghp_abcdefgh1234", "GH_TOKEN": "ghp_abcdefgh1234",
           "GITHUB_SERVER_URL": "https://user:pw@github.example"}
    w = where(env)
    assert "ghp_abcdefgh1234" not in str(w.to_dict()) and "pw@" not in w.run_url
    assert w.runner_name == "box-<redacted>"


def test_docker_provenance_names_the_image_and_backend():
    """The docker backend's image id and digest become the where's image fields."""
    w = where({}, backend="venv", provenance={"backend": "docker", "image_id": "sha256:abc", "image_digest": "none: locally built"})
    assert (w.backend, w.image, w.image_digest, w.ci) == ("docker", "sha256:abc", "none: locally built", "")
    assert w.key == "gpu-box-7/docker"


def test_cell_json_round_trips_where_and_cached_results_keep_theirs():
    """cell.json keeps where; stamping a result that already says where it ran changes nothing."""
    first, second = where(GITHUB_ENV), where({}, host="laptop")
    outcome = with_where(CellOutcome(Cell(id="seed"), RAN, 1.0), first)
    again = CellOutcome.from_dict(outcome.to_dict())
    assert again.where == first
    assert with_where(again, second).where == first
