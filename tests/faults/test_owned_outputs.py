"""Outputs never replace what the user owns: files the kit did not write need --force; no device node; `-` is stdout."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from pcgkit.errors import OutputPathError
from pcgkit.util import atomic

from .helpers import assert_one_line_error, run_main

LABELS = ["--runner-labels", "sm120=self-hosted,linux,sm120", "--cell", "seed"]


def test_ci_github_keeps_the_orgs_actionlint_config_unless_forced(tmp_path, capsys):
    """An existing .github/actionlint.yaml the kit did not write is refused (nothing written), replaced with --force."""
    workflow = tmp_path / ".github" / "workflows" / "pcgkit.yml"
    workflow.parent.mkdir(parents=True)
    theirs = tmp_path / ".github" / "actionlint.yaml"
    theirs.write_text("self-hosted-runner:\n  labels: [org-label]\nconfig-variables: [ORG_VAR]\n")
    status, _, err = run_main(["ci", "github", "--out", str(workflow), *LABELS], capsys)
    assert status == 2 and "actionlint.yaml" in assert_one_line_error(err) and "--force" in err
    assert "org-label" in theirs.read_text() and not workflow.exists()
    assert run_main(["ci", "github", "--out", str(workflow), *LABELS, "--force"], capsys)[0] == 0
    assert "sm120" in theirs.read_text()
    assert run_main(["ci", "github", "--out", str(workflow), *LABELS], capsys)[0] == 0  # now the kit's: rerun is fine


def test_ci_github_keeps_a_hand_edited_workflow(tmp_path, capsys):
    """A workflow the kit wrote and the user then edited is not replaced without --force."""
    workflow = tmp_path / "wf.yml"
    assert run_main(["ci", "github", "--out", str(workflow), "--cell", "seed"], capsys)[0] == 0
    workflow.write_text(workflow.read_text() + "# my change\n")
    status, _, err = run_main(["ci", "github", "--out", str(workflow), "--cell", "seed"], capsys)
    assert status == 2 and "--force" in assert_one_line_error(err)
    assert workflow.read_text().endswith("# my change\n")


def test_repro_keeps_the_users_readme(tmp_path, capsys):
    """repro --out into a folder with the user's README.md and requirements.txt refuses before writing any file."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "README.md").write_text("my notes\n")
    (out / "requirements.txt").write_text("numpy\n")
    status, _, err = run_main(["repro", "mode1", "--out", str(out)], capsys)
    assert status == 2 and "README.md" in assert_one_line_error(err)
    assert (out / "README.md").read_text() == "my notes\n" and sorted(p.name for p in out.iterdir()) == [
        "README.md", "requirements.txt"]
    assert run_main(["repro", "mode1", "--out", str(out), "--force"], capsys)[0] == 0
    assert "my notes" not in (out / "README.md").read_text()
    assert run_main(["repro", "mode1", "--out", str(out)], capsys)[0] == 0  # the kit's own export: replaced


def test_e2e_checkpoint_keeps_a_real_checkpoint(tmp_path, capsys):
    """e2e checkpoint --out into a real checkpoint's folder leaves its config and weights alone."""
    real = tmp_path / "Llama-NVFP4"
    real.mkdir()
    (real / "config.json").write_text('{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096}\n')
    (real / "model.safetensors").write_bytes(b"weights" * 10)
    status, _, err = run_main(["e2e", "checkpoint", "--out", str(real)], capsys)
    assert status == 2 and "config.json" in assert_one_line_error(err)
    assert json.loads((real / "config.json").read_text())["hidden_size"] == 4096
    assert (real / "model.safetensors").read_bytes() == b"weights" * 10


def test_docker_context_keeps_the_users_dockerfile(tmp_path, capsys):
    """docker context DEST with the user's Dockerfile refuses; the Dockerfile is untouched."""
    dest = tmp_path / "ctx"
    dest.mkdir()
    (dest / "Dockerfile").write_text("FROM scratch\n")
    status, _, err = run_main(["docker", "context", "--cell", "seed", str(dest)], capsys)
    assert status == 2 and "Dockerfile" in assert_one_line_error(err)
    assert (dest / "Dockerfile").read_text() == "FROM scratch\n" and not (dest / "kit").exists()


@pytest.mark.parametrize("device", ["/dev/null", "/dev/stdout"])
def test_a_device_node_is_never_an_output(device, capsys, monkeypatch):
    """--out /dev/null or /dev/stdout is refused (as root the atomic rename would replace the node)."""
    real_replace = os.replace

    def guarded_replace(src, dst):  # a kit without the rule must fail this test, not break the machine's /dev
        if str(dst).startswith("/dev/"):
            os.unlink(src)
            raise AssertionError(f"the kit tried to rename a file over {dst}")
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", guarded_replace)
    status, _, err = run_main(["ci", "github", "--out", device, "--cell", "seed"], capsys)
    assert status == 2 and "'-'" in assert_one_line_error(err)
    with pytest.raises(OutputPathError):
        atomic.write_text(Path(device), "x")


def test_a_fifo_is_never_replaced(tmp_path):
    """A FIFO at the target is refused, not renamed over."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OutputPathError, match="'-'"):
        atomic.write_output(fifo, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dash_means_stdout_for_env_and_issue(tmp_path, capsys, monkeypatch):
    """`--out -` prints (env --diff, issue) instead of creating a file named '-'."""
    monkeypatch.chdir(tmp_path)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"schema": "pcgkit.env/1", "packages": {"torch": "2.9.1"}}))
    b.write_text(json.dumps({"schema": "pcgkit.env/1", "packages": {"torch": "2.10.0"}}))
    status, out, _ = run_main(["env", "--diff", str(a), str(b), "--out", "-"], capsys)
    assert status == 0 and "2.10.0" in out
    assert not (tmp_path / "-").exists()


def test_dash_is_stdout_at_the_writer_and_refused_for_a_folder(tmp_path, capsys, monkeypatch):
    """Every writer takes '-' as stdout (no file named '-'); a folder output (repro, e2e checkpoint) refuses it."""
    monkeypatch.chdir(tmp_path)
    atomic.write_json(Path("-"), {"written": "to stdout"})
    assert '"written": "to stdout"' in capsys.readouterr().out and not (tmp_path / "-").exists()
    for argv in (["repro", "mode1", "--out", "-"], ["e2e", "checkpoint", "--out", "-"]):
        status, _, err = run_main(argv, capsys)
        assert status == 2 and "stdout" in assert_one_line_error(err)
    assert not (tmp_path / "-").exists()


def test_e2e_checkpoint_never_removes_a_foreign_weight_shard(tmp_path):
    """A real model's shards (model-0000i-of-0000n.safetensors) are checked before the writer removes stale shards."""
    from pcgkit.e2e import checkpoint as ck

    out = tmp_path / "llama"
    out.mkdir()
    shard = out / "model-00001-of-00004.safetensors"
    shard.write_bytes(b"real weights")
    with pytest.raises(OutputPathError, match="model-00001-of-00004"):
        ck.write_checkpoint(out, ck.NAMED_SHAPES["llama-3.2-1b"], fmt=ck.BF16)
    assert shard.read_bytes() == b"real weights"
