"""Faults left from the earlier passes, replayed in the fourth: each was handled somewhere but not where the replay
reached it. A runner label with a newline wrote invalid YAML (exit 0); a process-substitution or temp path was
baked into the workflow; `report --not-run` with an unsafe id wrote a compat.json that `report --compat` refuses;
wrongly shaped probe answers were internal errors; offline mode was a "resolver conflict"; a network failure in the
workshop exited 2 (usage) and pip's reason was swallowed; an empty plan told the user to run `pcgkit matrix`, the
command they had just run."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest
import yaml

from pcgkit.matrix.outcome import NETWORK, classify_install_failure

from .helpers import REPO_ROOT, assert_one_line_error, ran_cell, run_main, write_cells

DATA = REPO_ROOT / "tests" / "data"


@pytest.mark.parametrize("label", ["gpu\nx: y", "gpu #comment", "gpu'", "a b"])
def test_a_runner_label_that_would_break_the_yaml_is_refused(tmp_path, capsys, label):
    """`ci github --runner-labels sm120=...` with a newline, a comment, a quote or a space: one line, exit 2, no file."""
    out = tmp_path / "wf.yml"
    status, _, err = run_main(["ci", "github", "--runner-labels", f"sm120=self-hosted,{label}", "--out", str(out)], capsys)
    assert status == 2 and "runner label" in assert_one_line_error(err)
    assert not out.exists()


def test_good_runner_labels_still_write_a_valid_workflow(tmp_path, capsys, monkeypatch):
    """Ordinary labels (letters, digits, '-', '_', '.', ':') give a workflow that YAML reads back with them."""
    monkeypatch.chdir(tmp_path)
    status, out, err = run_main(["ci", "github", "--runner-labels", "sm120=self-hosted,gpu-rtx.5090,sm_120:a",
                                 "--out", "-"], capsys)
    assert status == 0, err
    jobs = yaml.safe_load(out)["jobs"]
    assert any(job.get("runs-on") == ["self-hosted", "gpu-rtx.5090", "sm_120:a"] for job in jobs.values())


def test_a_matrix_file_outside_the_repository_is_not_baked_into_the_workflow(tmp_path, capsys, monkeypatch):
    """`ci github --matrix <(...)` (/dev/fd/63) or a temp file: one line saying the path will not exist on GitHub; a
    file inside the repository is written relative to it."""
    repo = tmp_path / "repo"
    (repo / "ci").mkdir(parents=True)
    matrix = (REPO_ROOT / "fixtures" / "matrix.toml").read_text()
    (repo / "ci" / "matrix.toml").write_text(matrix)
    (tmp_path / "elsewhere.toml").write_text(matrix)
    monkeypatch.chdir(repo)
    read, write = os.pipe()
    os.write(write, matrix.encode())
    os.close(write)
    try:
        for outside in (f"/dev/fd/{read}", str(tmp_path / "elsewhere.toml")):
            status, _, err = run_main(["ci", "github", "--matrix", outside, "--out", "wf.yml"], capsys)
            assert status == 2 and "does not exist" in assert_one_line_error(err) and outside in err
            assert not (repo / "wf.yml").exists()
    finally:
        os.close(read)
    status, _, err = run_main(["ci", "github", "--matrix", str(repo / "ci" / "matrix.toml"), "--out", "wf.yml"], capsys)
    assert status == 0, err
    text = (repo / "wf.yml").read_text()
    assert "--matrix ci/matrix.toml" in text and str(tmp_path) not in text


def test_not_run_with_an_unsafe_id_is_refused_before_compat_json_is_written(tmp_path, capsys):
    """`report --not-run '../x=why'`: one line (the id rule every reader applies), so no compat.json that
    `report --compat` would then refuse; a safe id is reported and read back."""
    reports = tmp_path / "reports"
    write_cells(reports, ran_cell("seed"))
    status, _, err = run_main(["report", "--reports", str(reports), "--not-run", "../x=runner offline"], capsys)
    assert status == 2 and "not a cell id" in assert_one_line_error(err)
    assert not (reports / "compat.json").exists()
    status, _, err = run_main(["report", "--reports", str(reports), "--not-run", "gpu-cell@sm120=runner offline"], capsys)
    assert status != 2 and "pcgkit: error" not in err and (reports / "compat.json").is_file(), err
    status, out, err = run_main(["report", "--compat", str(reports / "compat.json"), "--reports", str(tmp_path / "again")],
                                capsys)
    assert status != 2 and "pcgkit: error" not in err and "2 cells" in out, err  # read back whole, both cells


@pytest.mark.parametrize("answer", ["[]", '{"versions": []}', '{"dense": "x"}', '{"piecewise": 1}',
                                    '{"device": "gpu"}', '{"dense": {"signature": "x"}}', "not json"])
def test_a_wrongly_shaped_probe_answer_is_one_line_not_an_internal_error(tmp_path, capsys, monkeypatch, answer):
    """An interpreter whose probe writes an answer this kit cannot read: ProbeFailedError, one line, exit 4."""
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = "--json" ] && out="$2"; shift; done\n'
                    f"printf '%s' '{answer}' > \"$out\"\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    status, _, err = run_main(["preflight", "--python", str(fake), "--", "--model-path", str(tmp_path)], capsys)
    line = assert_one_line_error(err)
    assert status == 4 and "internal error" not in err and "answer" in line, err


def test_offline_mode_is_the_network_not_a_resolver_conflict():
    """uv's offline answer ("No solution found ... not found in the cache / needs to be downloaded") is `network`
    (the machine's state: exit 4), never "resolver conflict" (the pins' fault: exit 3)."""
    log = (DATA / "uv_errors" / "offline_not_in_cache.log").read_text()
    assert "No solution found" in log
    assert classify_install_failure(log) == NETWORK
    assert classify_install_failure((DATA / "uv_errors" / "conflicting_constraint.log").read_text()) == "resolver conflict"


@pytest.mark.parametrize("command", ["read-releases", "read-flashinfer"])
def test_a_network_failure_in_the_workshop_is_exit_4_with_pips_reason(tmp_path, capsys, monkeypatch, command):
    """`bin/pcgkit lab read-releases|read-flashinfer` when pip cannot reach the index: exit 4 (the machine), one
    line with pip's own words and the network named (was exit 2 'usage' with 'exit status 1')."""
    import lab.sglang_releases as releases
    from lab.cli import main as lab_main

    pip = tmp_path / "pip"
    pip.write_text(f"#!/bin/sh\ncat {DATA / 'pip_errors' / 'network_refused.log'}\nexit 1\n")
    pip.chmod(pip.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(releases, "pip_command", lambda *a: [str(pip)])
    status = lab_main([command, "--release", "0.5.14", "--cache", str(tmp_path / "cache"),
                       "--out", str(tmp_path / "out.json")])
    line = assert_one_line_error(capsys.readouterr().err)
    assert status == 4, line
    assert "network" in line and "No matching distribution found" in line and "exit status 1" not in line
    assert not (tmp_path / "out.json").exists()


def test_an_empty_plan_says_so_and_never_asks_to_run_matrix_first(tmp_path, capsys):
    """`matrix --matrix FILE` whose plan has no cells: one line about the file (exit 2), not the report's "no cells:
    run `pcgkit matrix` first"."""
    empty = tmp_path / "matrix.toml"
    empty.write_text('schema = "pcgkit.matrix/1"\n')
    status, _, err = run_main(["matrix", "--matrix", str(empty), "--reports", str(tmp_path / "r")], capsys)
    line = assert_one_line_error(err)
    assert status == 2 and "no cells" in line and str(empty) in line and "first" not in line


def test_the_replayed_commands_run_as_a_user_runs_them(tmp_path):
    """The same refusals through a fresh process (no in-process state), as the replay ran them."""
    import subprocess

    from .helpers import kit_env

    done = subprocess.run([sys.executable, "-m", "pcgkit.cli", "ci", "github", "--runner-labels", "sm120=a\nb",
                           "--out", str(tmp_path / "wf.yml")], capture_output=True, text=True, env=kit_env(), timeout=120)
    assert done.returncode == 2 and not (tmp_path / "wf.yml").exists()
    assert json.dumps("a\nb")[1:-1] in done.stderr or "runner label" in done.stderr


def test_a_log_pipe_that_stops_sending_without_ending_is_triaged_as_it_stands(capsys, monkeypatch):
    """`triage <(docker logs -f x)`: the log arrives, then nothing and no end; after IDLE_S of silence the log is
    triaged with a note (was a read that never stops)."""
    from pcgkit.commands import triage as triage_cli

    monkeypatch.setattr(triage_cli, "IDLE_S", 1.0, raising=False)
    read, write = os.pipe()
    os.write(write, (DATA / "triage_logs" / "01_sglang23386_dgxspark_nvcc_threading_lock.log").read_bytes())
    try:  # the write end stays open: the pipe never ends
        status, out, err = run_main(["triage", f"/dev/fd/{read}"], capsys)
    finally:
        os.close(write)
        os.close(read)
    assert status == 0 and "mode1" in out and "nothing new for 1 s" in err


def test_an_env_pipe_that_never_sends_or_has_no_writer_is_one_line(tmp_path, capsys, monkeypatch):
    """`--env` a FIFO nobody writes to (open() used to wait forever) or a pipe that never sends: one line each."""
    from pcgkit.util import atomic

    monkeypatch.setattr(atomic, "PIPE_WAIT_S", 1.0, raising=False)
    log = str(DATA / "triage_logs" / "01_sglang23386_dgxspark_nvcc_threading_lock.log")
    fifo = tmp_path / "env.fifo"
    os.mkfifo(fifo)
    status, _, err = run_main(["triage", log, "--env", str(fifo)], capsys)
    assert status == 2 and "--env" in assert_one_line_error(err)
    read, write = os.pipe()
    try:
        status, _, err = run_main(["triage", log, "--env", f"/dev/fd/{read}"], capsys)
    finally:
        os.close(write)
        os.close(read)
    assert status == 2 and "sent nothing for 1 s" in assert_one_line_error(err)


def test_a_process_substitution_that_did_not_reach_the_kit_says_so(capsys):
    """`--env /dev/fd/N` whose descriptor is closed (sudo closes them): the line says why, not only "no such file"."""
    log = str(DATA / "triage_logs" / "01_sglang23386_dgxspark_nvcc_threading_lock.log")
    status, _, err = run_main(["triage", log, "--env", "/dev/fd/987"], capsys)
    assert status == 2 and "did not reach pcgkit" in assert_one_line_error(err)


@pytest.mark.parametrize("value", ["NaN", "0", '"4096"', "1.5"])
def test_a_nan_hidden_size_is_the_checkpoints_fault(tmp_path, value):
    """config.json with `"hidden_size": NaN` (Python's json reads it): the probe stops before SGLang's shape
    arithmetic and names the checkpoint and the field (unknown, exit 11), never a crash inside the trace."""
    from pcgkit.preflight import probe

    (tmp_path / "config.json").write_text('{"architectures": ["LlamaForCausalLM"], "hidden_size": ' + value + "}")
    with pytest.raises(probe.Unresolved) as stopped:
        probe.read_checkpoint_config(str(tmp_path))
    assert stopped.value.fault == probe.CHECKPOINT and "hidden_size" in str(stopped.value)
    (tmp_path / "config.json").write_text('{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096}')
    assert probe.read_checkpoint_config(str(tmp_path))["hidden_size"] == 4096
