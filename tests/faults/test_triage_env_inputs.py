"""triage's inputs as people give them: --env from a pipe, wrong-typed captures, a folder of large logs read one by one."""

from __future__ import annotations

import json
import os
import threading

import pytest

from pcgkit.commands import triage

from .helpers import assert_one_line_error, run_main

LOG = ("Traceback (most recent call last):\n"
       '  File "/x/sglang/srt/model_executor/piecewise_cuda_graph_runner.py", line 10, in capture\n'
       "torch._dynamo.exc.Unsupported: Attempted to call function marked as skipped\n")
CAPTURE = {"schema": "pcgkit.env/1", "packages": {"sglang": "0.5.8", "flashinfer-python": "0.6.1", "torch": "2.9.1"},
           "devices": {"gpus": [{"name": "NVIDIA RTX PRO 6000", "compute_capability": "12.0"}]}}


def test_env_from_a_process_substitution_pipe(tmp_path, capsys):
    """`triage LOG --env <(pcgkit env --json)`: a FIFO is read (bounded) like a file, not refused."""
    log, pipe = tmp_path / "server.log", tmp_path / "env-pipe"
    log.write_text(LOG)
    os.mkfifo(pipe)
    writer = threading.Thread(target=lambda: pipe.write_text(json.dumps(CAPTURE)), daemon=True)
    writer.start()
    status, out, err = run_main(["triage", str(log), "--env", str(pipe)], capsys)
    writer.join(10)
    assert status == 0, err
    assert "0.5.8" in out


@pytest.mark.parametrize("capture", [
    {**CAPTURE, "packages": "sglang 0.5.8"},
    {**CAPTURE, "packages": {"sglang": 58}},
    {**CAPTURE, "devices": {"gpus": "RTX"}},
    {**CAPTURE, "devices": {"gpus": [{"compute_capability": 12.0}]}},
])
def test_a_wrong_typed_env_capture_is_one_line(tmp_path, capsys, capture):
    """--env with a wrong-typed field: one usage line naming it (was an internal error)."""
    log, env = tmp_path / "server.log", tmp_path / "env.json"
    log.write_text(LOG)
    env.write_text(json.dumps(capture))
    status, _, err = run_main(["triage", str(log), "--env", str(env)], capsys)
    assert status == 2 and "capture" in assert_one_line_error(err)


def test_a_wrong_typed_python_capture_is_one_line(tmp_path, capsys, monkeypatch):
    """--python whose capture comes back wrong-typed (an old or foreign kit): one usage line."""
    log = tmp_path / "server.log"
    log.write_text(LOG)
    monkeypatch.setattr("pcgkit.util.foreign_env.capture_in", lambda python: {**CAPTURE, "packages": ["sglang"]})
    status, _, err = run_main(["triage", str(log), "--python", "/usr/bin/python3"], capsys)
    assert status == 2 and "packages" in assert_one_line_error(err)


def test_a_folder_of_logs_is_read_one_log_at_a_time(tmp_path, capsys, monkeypatch):
    """triage DIR reads each log when its turn comes: answer 1 is printed before log 2 is read (was all first)."""
    folder = tmp_path / "logs"
    folder.mkdir()
    for number in range(3):
        (folder / f"server-{number}.log").write_text(LOG)
    events: list[str] = []
    real_read, real_render = triage._read_file, triage.render
    monkeypatch.setattr(triage, "_read_file", lambda path, name: events.append(f"read {path.name}") or real_read(path, name))
    monkeypatch.setattr(triage, "render", lambda result, *more: events.append("answer") or real_render(result, *more))
    assert run_main(["triage", str(folder)], capsys)[0] == 0
    assert events == ["read server-0.log", "answer", "read server-1.log", "answer", "read server-2.log", "answer"]


def test_dev_zero_as_a_log_is_refused_not_read(capsys):
    """/dev/zero as a log: one line (a device), never 64 MiB of zeros diagnosed."""
    status, _, err = run_main(["triage", "/dev/zero"], capsys)
    assert status == 2 and "device" in assert_one_line_error(err)


@pytest.mark.parametrize("command", [["env"], ["triage", "{log}"]])
def test_an_interpreter_whose_capture_is_wrong_typed_is_one_line(tmp_path, capsys, command):
    """--python ENV whose capture comes back with `packages: 5` (a real child writing it): one line, not an internal error."""
    log = tmp_path / "server.log"
    log.write_text(LOG)
    fake = tmp_path / "python"
    fake.write_text('#!/bin/sh\nfor last; do :; done\necho \'{"schema": "pcgkit.env/1", "packages": 5}\' > "$last"\n')
    fake.chmod(0o755)
    argv = [part.replace("{log}", str(log)) for part in command] + ["--python", str(fake)]
    status, _, err = run_main(argv, capsys)
    assert status == 2 and "packages" in assert_one_line_error(err) and "internal error" not in err
