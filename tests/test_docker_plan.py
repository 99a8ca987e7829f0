"""The container backend's pure parts, no Docker needed: pins, base choice, tag, build arguments,
context, run settings, error classification, the lock rewrite and the report's image table."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from pcgkit.commands import docker as docker_cli
from pcgkit.matrix.backends import docker as backend_docker
from pcgkit.matrix.backends import docker_engine as engine
from pcgkit.matrix.backends import docker_plan as plan
from pcgkit.matrix.backends import loop
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.outcome import RAN, CellOutcome
from pcgkit.report.compat import build_compat
from pcgkit.report.markdown import render_markdown

SEED = Cell(id="seed", sglang="0.5.8", flashinfer="0.6.1", torch="2.9.1", companions=("flashinfer-cubin==0.6.1",))


def test_checked_in_pins_parse_and_record_no_invented_digest():
    """docker/pins.toml parses; every digest is either a sha256 or says it is not recorded yet."""
    pins = plan.load_image_pins()
    assert pins.default_base in pins.bases
    assert pins.bases[pins.default_base].ref.startswith("nvidia/cuda:12.8")
    for base in pins.bases.values():
        assert base.digest == plan.NOT_RECORDED or base.digest.startswith("sha256:"), base


def test_bad_pins_name_the_problem():
    """A pins file whose default base is not defined is rejected with the name in the message."""
    text = 'schema = "pcgkit.docker-pins/1"\ndefault_base = "nope"\n[bases.a]\nref = "x:1"\n'
    with pytest.raises(ValueError, match="'nope'"):
        plan.parse_image_pins(text)


def test_base_for_uses_named_base_raw_ref_or_default():
    """A cell's base-image is a pins name or a full reference; no base-image means the default."""
    pins = plan.load_image_pins()
    assert plan.base_for(SEED, pins).ref == pins.bases[pins.default_base].ref
    named = Cell(id="s", base_image="sglang-0.5.8")
    assert plan.base_for(named, pins).ref == "lmsysorg/sglang:v0.5.8"
    raw = plan.base_for(Cell(id="r", base_image="local/base:1"), pins)
    assert (raw.ref, raw.digest) == ("local/base:1", plan.NOT_RECORDED)


def test_pinned_ref_only_with_a_real_digest():
    """ref@digest is used for pulls only when a sha256 digest is recorded."""
    assert plan.BaseImage("b", "x:1").pinned_ref == "x:1"
    assert plan.BaseImage("b", "x:1", digest="sha256:ab").pinned_ref == "x:1@sha256:ab"


def test_image_tag_follows_the_definition_hash_and_is_a_valid_tag():
    """The tag changes with the cell definition and contains only characters Docker accepts."""
    a = plan.image_tag(SEED)
    b = plan.image_tag(Cell(id="seed", sglang="0.5.8", flashinfer="0.6.1", torch="2.9.0"))
    assert a != b and a.startswith("pcgkit-cell:seed-")
    odd = plan.image_tag(Cell(id="seed~fi-0.6.1", torch="2.9.1"))
    assert "~" not in odd.split(":", 1)[1]


def test_build_args_carry_the_cells_exact_pins():
    """torch, flashinfer, companions, sglang and the Python version reach the Dockerfile's ARGs."""
    pins = plan.load_image_pins()
    args = plan.build_args(SEED, plan.base_for(SEED, pins), pins, ["pytest>=8"])
    assert args["TORCH_PIN"] == "torch==2.9.1"
    assert args["FLASHINFER_PIN"] == "flashinfer-python==0.6.1"
    assert args["EXTRA_PINS"] == "flashinfer-cubin==0.6.1"
    assert args["SGLANG_PIN"] == "sglang==0.5.8"
    assert args["PYTHON_VERSION"] == "3.12"
    assert args["BASE_IMAGE"] == "nvidia/cuda:12.8.1-devel-ubuntu24.04"
    assert args["KIT_DEPS"] == "pytest>=8"


def test_dockerfile_declares_every_build_arg():
    """Each build argument the plan passes is an ARG of docker/Dockerfile (a typo would be ignored)."""
    pins = plan.load_image_pins()
    text = plan.DOCKERFILE.read_text()
    for name in plan.build_args(SEED, plan.base_for(SEED, pins), pins, []):
        assert f"ARG {name}" in text, name


def test_context_hash_changes_with_args_and_kit_files(tmp_path):
    """Another pin, other CUDA wheel pins or an edited kit file give another context hash (and so a rebuild)."""
    (tmp_path / "pcgkit").mkdir()
    (tmp_path / "pcgkit" / "x.py").write_text("a = 1\n")
    first = plan.context_hash({"TORCH_PIN": "torch==2.9.1"}, root=tmp_path)
    assert first == plan.context_hash({"TORCH_PIN": "torch==2.9.1"}, root=tmp_path)
    assert first != plan.context_hash({"TORCH_PIN": "torch==2.9.0"}, root=tmp_path)
    assert first != plan.context_hash({"TORCH_PIN": "torch==2.9.1"}, root=tmp_path, cuda_requirements="x==1\n")
    (tmp_path / "pcgkit" / "x.py").write_text("a = 2\n")
    assert first != plan.context_hash({"TORCH_PIN": "torch==2.9.1"}, root=tmp_path)


def test_write_context_holds_the_kit_and_build_aids_only(tmp_path):
    """The context has the Dockerfile, image/ (its scripts, the CUDA wheel pins), kit/ (package, cases,
    fixtures) and build-aids/, nothing else."""
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    house = tmp_path / "house"
    house.mkdir()
    (house / "torch-0-py3-none-any.whl").write_bytes(b"w")
    ctx = plan.write_context(tmp_path / "ctx", ca_bundle=ca, wheelhouse=house, cuda_requirements="# cuda: 13.0\n")
    assert sorted(p.name for p in ctx.iterdir()) == [".pcgkit-written.json", "Dockerfile", "build-aids", "image", "kit"]
    assert sorted(p.name for p in (ctx / "image").iterdir()) == [
        "cuda-requirements.txt", "cuda-toolkit.sh", "entrypoint.sh", "jit-prebuild.py"]
    assert (ctx / "image" / "cuda-requirements.txt").read_text() == "# cuda: 13.0\n"
    assert (ctx / "kit" / "pcgkit" / "matrix" / "backends" / "docker_plan.py").is_file()
    assert (ctx / "kit" / "cases" / "test_mode1_nvcc_subprocess.py").is_file()
    assert not (ctx / "kit" / "tests").exists() and not (ctx / "kit" / ".venv").exists()
    assert (ctx / "build-aids" / "ca.pem").read_text().startswith("-----BEGIN")
    assert (ctx / "build-aids" / "wheelhouse" / "torch-0-py3-none-any.whl").is_file()


def test_run_settings_lock_the_container_down():
    """No network, non-root, read-only root, only the output volume writable, GPUs only when asked."""
    kwargs = plan.container_kwargs("img", ("--timeout", "5"), "vol", gpus=False, environment={}, labels={})
    assert kwargs["network_mode"] == "none" and kwargs["read_only"] is True
    assert kwargs["user"] == plan.CONTAINER_USER != "root"
    assert kwargs["volumes"] == {"vol": {"bind": "/out", "mode": "rw"}}
    assert kwargs["tmpfs"]["/tmp"].split(",")[:2] == ["rw", "exec"]  # JIT modules are loaded from /tmp
    assert "device_requests" not in kwargs
    gpu = plan.container_kwargs("img", (), "vol", gpus=True, environment={}, labels={})
    assert gpu["device_requests"] == [{"Driver": "", "Count": -1, "Capabilities": [["gpu"]]}]


def test_run_command_passes_timeouts_and_required_hardware():
    """The container's arguments after the entrypoint carry the deadlines and --require-hardware."""
    assert plan.run_command(300, 60, ("sm120",)) == ("--timeout", "300", "--case-timeout", "60",
                                                    "--require-hardware=sm120")


def test_docker_run_command_is_pasteable():
    """The maintainer's line has --gpus all, the result mount, the lock-down flags and the tag."""
    line = plan.docker_run_command("pcgkit-cell:seed-abc")
    for piece in ("--gpus all", "--network none", "--read-only", ":/out", "pcgkit-cell:seed-abc"):
        assert piece in line
    assert "--gpus" not in plan.docker_run_command("t", gpus=False)


@pytest.mark.parametrize(
    ("message", "cause"),
    [
        ("Error while fetching server API version: ('Connection aborted.', FileNotFoundError(2, 'No such file'))",
         engine.NO_DAEMON),
        ("Error while fetching server API version: ('Connection aborted.', PermissionError(13, 'Permission denied'))",
         engine.PERMISSION),
        ('could not select device driver "" with capabilities: [[gpu]]', engine.NO_GPU_RUNTIME),
        ('Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host',
         engine.PULL_UNREACHABLE),
        ("manifest unknown: manifest unknown", engine.PULL_FAILED),
        ("something else entirely", engine.ENGINE_ERROR),
    ],
    ids=["no-daemon", "permission", "no-gpu-runtime", "unreachable", "manifest", "other"],
)
def test_classify_engine_errors(message, cause):
    """The engine's own words map to the named causes an error cell reports."""
    assert engine.classify(message) == cause


def test_wants_gpus():
    """auto requests GPUs exactly when the host reports a driver; all/none override."""
    assert backend_docker.wants_gpus("auto", "570.1") and not backend_docker.wants_gpus("auto", None)
    assert backend_docker.wants_gpus("all", None) and not backend_docker.wants_gpus("none", "570.1")


def test_set_digest_rewrites_one_line_and_keeps_the_rest():
    """The lock rewrite touches only the named base's digest line; comments stay."""
    text = plan.DEFAULT_IMAGE_PINS.read_text()
    new = docker_cli.set_digest(text, "cuda-12.9", "sha256:" + "a" * 64)
    changed = [(a, b) for a, b in zip(text.splitlines(), new.splitlines()) if a != b]
    assert changed == [('digest = "not recorded yet"', 'digest = "sha256:' + "a" * 64 + '"')]
    assert plan.parse_image_pins(new).bases["cuda-12.9"].digest == "sha256:" + "a" * 64
    assert plan.parse_image_pins(new).bases["cuda-12.8"].digest == plan.NOT_RECORDED


def test_lock_keeps_the_file_when_no_registry_answers(tmp_path):
    """Every base failing leaves the file byte for byte; each failure is reported by name."""
    path = tmp_path / "pins.toml"
    path.write_text(plan.DEFAULT_IMAGE_PINS.read_text())

    def unreachable(ref):
        raise engine.DockerFailure(engine.PULL_UNREACHABLE, f"{ref}: no such host")

    report = docker_cli.lock(path, resolve=unreachable)
    assert path.read_text() == plan.DEFAULT_IMAGE_PINS.read_text()
    bases = plan.load_image_pins().bases
    assert {name for name, ok, _ in report if not ok} == {name for name, base in bases.items() if not base.local}
    assert all("registry unreachable" in msg for _, ok, msg in report if not ok)
    # a base made here (docker/local-base.sh) has no registry to ask: reported, never resolved
    assert [msg for name, ok, msg in report if ok] == [
        "pcgkit-local/bookworm-py311:minbase: made on this machine (docker/local-base.sh), no registry digest"]


def test_lock_records_what_the_registry_returns(tmp_path):
    """A reachable registry's digest lands in the file for that base only."""
    path = tmp_path / "pins.toml"
    path.write_text(plan.DEFAULT_IMAGE_PINS.read_text())
    digest = "sha256:" + "b" * 64

    def only_cuda_129(ref):
        if ref.startswith("nvidia/cuda:12.9"):
            return digest
        raise engine.DockerFailure(engine.PULL_UNREACHABLE, "no")

    docker_cli.lock(path, resolve=only_cuda_129)
    bases = plan.load_image_pins(path).bases
    assert bases["cuda-12.9"].digest == digest and bases["cuda-12.8"].digest == plan.NOT_RECORDED


def test_report_renders_image_provenance():
    """A docker cell's image id, digest, base and CUDA appear in compat.md's image table."""
    prov = {"backend": "docker", "image_id": "sha256:1234567890abcdef", "image_digest": plan.LOCALLY_BUILT,
            "base_image": "pcgkit-local/bookworm-py311:minbase", "base_image_digest": "not recorded yet",
            "cuda_in_image": "12.8.1", "host_driver": "570.86.15"}
    outcome = CellOutcome(SEED, RAN, 1.0, provenance=prov)
    text = render_markdown(build_compat([outcome], created="2026-01-01T00:00:00+00:00"))
    assert "## Images (docker backend)" in text
    for piece in ("sha256:1234567890a", "none: locally built", "bookworm-py311", "12.8.1", "570.86.15"):
        assert piece in text
    assert "## Images" not in render_markdown(build_compat([CellOutcome(SEED, RAN, 1.0)], created="x"))


def test_outcome_round_trips_provenance(tmp_path):
    """cell.json keeps the provenance, and an old cell.json without it still reads."""
    from pcgkit.matrix.outcome import read_outcome, write_outcome

    write_outcome(tmp_path / "cell.json", CellOutcome(SEED, RAN, 1.0, provenance={"backend": "docker"}))
    assert read_outcome(tmp_path / "cell.json").provenance == {"backend": "docker"}


def test_copy_out_extracts_only_files_below_the_folder(tmp_path):
    """copy_out writes the archive's files under /out into the cell folder and nothing outside it."""
    import io

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in (("out/results.json", b"{}"), ("out/sub/x.log", b"x"), ("etc/passwd", b"no")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))

    class FakeContainer:
        def get_archive(self, path):
            return iter([buffer.getvalue()]), {}

    written = engine.copy_out(FakeContainer(), "/out", tmp_path / "cell")
    assert sorted(p.relative_to(tmp_path / "cell").as_posix() for p in written) == ["results.json", "sub/x.log"]


def test_matrix_cli_accepts_the_docker_backend():
    """`pcgkit matrix --backend docker` parses, with the docker options, and the default stays venv."""
    from pcgkit.cli import build_parser

    args = build_parser().parse_args(["matrix", "--backend", "docker", "--gpus", "none", "--wheelhouse", "/w"])
    assert (args.backend, args.gpus, args.wheelhouse) == ("docker", "none", "/w")
    assert build_parser().parse_args(["matrix"]).backend == "venv"
    config = backend_docker.config_from_args(args)
    assert config.gpus == "none" and config.wheelhouse == Path("/w")


def test_existing_cells_are_an_error_for_the_docker_backend(tmp_path):
    """A host interpreter cannot run in an image: the cell is an error with that reason, not a crash."""
    from pcgkit.matrix.backends.base import BackendConfig

    run = loop.CellLoop(backend_docker.DockerBackend(backend_docker.DockerConfig()))
    outcome = run(Cell(id="here", kind="existing", interpreter="/usr/bin/python3"),
                  BackendConfig(cells_root=tmp_path, backend="docker"))
    assert outcome.is_error and "existing" in outcome.reason


def test_parse_env_pairs_and_rejects_junk():
    """--docker-env KEY=VALUE becomes pairs (values may contain '='); a bare word is a usage error."""
    from pcgkit.errors import UsageError

    assert backend_docker.parse_env(["A=1", "B=x=y"]) == (("A", "1"), ("B", "x=y"))
    with pytest.raises(UsageError, match="KEY=VALUE"):
        backend_docker.parse_env(["nope"])


class _FakeImage:
    id = "sha256:feed"
    tags = ["pcgkit-cell:x"]
    labels = {"pcgkit.build-aids": "none"}
    attrs = {"RepoDigests": [], "Config": {"Env": ["CUDA_VERSION=12.8.1"]}}


def _run_with_exit(monkeypatch, tmp_path, exited, write_results=False):
    """run_cell with the engine replaced: prepare_image gives a fake image, the run ends as `exited`."""
    monkeypatch.setattr(engine, "connect", lambda timeout_s=60.0: object())
    monkeypatch.setattr(backend_docker, "host_gpu", lambda: ("none (no NVIDIA GPU found)", ""))
    monkeypatch.setattr(backend_docker, "prepare_image",
                        lambda *a, **k: (_FakeImage(), plan.BaseImage("b", "base:1"), None, {}))

    def fake_run_cases(client, image, cell, config, docker, cell_dir, gpus, timeout_s):
        if write_results:
            (cell_dir / "results.json").write_text("{}")
        return exited

    monkeypatch.setattr(backend_docker, "run_cases", fake_run_cases)
    from pcgkit.matrix.backends.base import BackendConfig

    return loop.CellLoop(backend_docker.DockerBackend(backend_docker.DockerConfig(gpus="none")))(
        SEED, BackendConfig(cells_root=tmp_path, backend="docker"))


@pytest.mark.parametrize(
    ("exited", "cause"),
    [
        (engine.Exited(137, False, True, 3.0, "Killed"), engine.OOM_KILLED),
        (engine.Exited(None, True, False, 99.0, "still tracing"), engine.TIMEOUT),
        (engine.Exited(2, False, False, 1.0, "usage"), "no results.json"),
    ],
    ids=["oom", "timeout", "no-results"],
)
def test_container_endings_become_error_cells(monkeypatch, tmp_path, exited, cause):
    """OOM kill, the hard timeout and a run without results are error cells with that reason and provenance."""
    outcome = _run_with_exit(monkeypatch, tmp_path, exited)
    assert outcome.is_error and outcome.stage == "run"
    assert outcome.reason.startswith(cause), outcome.reason
    assert outcome.log_tail == exited.log_tail
    assert outcome.provenance["image_id"] == "sha256:feed" and outcome.provenance["cuda_in_image"] == "12.8.1"


def test_engine_failure_before_the_image_is_an_install_stage_error(monkeypatch, tmp_path):
    """A failure while getting the image (here: a build) is an error cell at the install stage."""
    monkeypatch.setattr(engine, "connect", lambda timeout_s=60.0: object())
    monkeypatch.setattr(backend_docker, "host_gpu", lambda: ("none (no NVIDIA GPU found)", ""))

    def failing(*a, **k):
        raise engine.DockerFailure(engine.BUILD_FAILED, "uv: no version of flashinfer-python==0.0.0", "tail")

    monkeypatch.setattr(backend_docker, "prepare_image", failing)
    from pcgkit.matrix.backends.base import BackendConfig

    outcome = loop.CellLoop(backend_docker.DockerBackend(backend_docker.DockerConfig(gpus="none")))(
        SEED, BackendConfig(cells_root=tmp_path, backend="docker"))
    assert outcome.is_error and outcome.stage == "install" and outcome.reason.startswith(engine.BUILD_FAILED)
    assert "next:" in outcome.reason and outcome.log_tail == "tail"


def test_cached_result_is_reused_only_by_its_backend(tmp_path):
    """A venv result in cell.json is not reused by a docker run of the same cell, and vice versa."""
    from pcgkit.matrix.backends.base import BackendConfig
    from pcgkit.matrix.outcome import write_outcome
    from pcgkit.matrix.runner import CELL_FILE, cached_outcome

    write_outcome(tmp_path / SEED.id / CELL_FILE, CellOutcome(SEED, RAN, 1.0))
    assert cached_outcome(SEED, BackendConfig(cells_root=tmp_path)) is not None
    assert cached_outcome(SEED, BackendConfig(cells_root=tmp_path, backend="docker")) is None


def test_run_command_carries_a_narrowed_scope_only():
    """A sglang-level cell's container runs `pcgkit run --scope sglang-level`; a full cell passes no scope."""
    from pcgkit.matrix.backends.docker_plan import run_command

    assert run_command(60, 30, scope="sglang-level")[-2:] == ("--scope", "sglang-level")
    assert "--scope" not in run_command(60, 30)
