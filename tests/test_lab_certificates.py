"""`bin/pcgkit lab certificates`: the recipe against the committed certificates, the pure plan, the table, the
comparison times aside, and the run loop on stand-in commands (an error row, the others finish, no child left)."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest
import tomllib

from lab.certificates import run
from lab.certificates.child import main as child_main
from lab.certificates.plan import (
    Job,
    Release,
    Row,
    Step,
    StepTime,
    choose,
    differences,
    env_plan,
    error_reason,
    not_remade,
    parse_recipe,
    plan_job,
    render_table,
    row_from_certificate,
)
from pcgkit import resources
from pcgkit.errors import Interrupted, UsageError
from pcgkit.util import signals

COMMITTED = resources.fixture("certificates")
RECIPE = parse_recipe(tomllib.loads((COMMITTED / "recipe.toml").read_text()))


def _where(tmp_path: Path) -> dict:
    return {"kit_requirements": ["pytest>=8"], "mirror": Path("/mirror.git"),
            "out": tmp_path / "out", "committed": tmp_path / "committed", "work": tmp_path / "work",
            "envs_root": tmp_path / "envs"}


def test_the_recipe_names_how_every_committed_simulated_certificate_was_made():
    """Each committed simulated certificate is in the recipe, and its recorded ref, commit, torch, arch and unroll
    budget are the recipe's: a recipe that drifted from the committed data fails here."""
    committed = sorted(p.name for p in COMMITTED.glob("certificate-*-sm120.json"))
    assert committed == sorted(f"certificate-{r.flashinfer}-{RECIPE.arch}.json" for r in RECIPE.releases)
    for release in RECIPE.releases:
        cert = json.loads((COMMITTED / f"certificate-{release.flashinfer}-{RECIPE.arch}.json").read_text())
        upstream = cert["inputs"]["upstream_tests"]
        assert (upstream["ref"], upstream["commit"][:len(release.upstream_commit)]) == (
            release.upstream_ref, release.upstream_commit), release.flashinfer
        assert cert["torch"].split("+")[0] == RECIPE.torch and cert["arch"] == RECIPE.arch
        assert cert["unroll_budget_s"] == RECIPE.unroll_budget_s and cert["simulated"] is True


def test_the_committed_gpu_certificate_is_named_as_not_remade():
    """The committed files no recipe release makes are listed by name (the H200 ops-only run), the sm120 ones not."""
    names = [p.name for p in COMMITTED.glob("certificate-*.json")]
    assert not_remade(names, RECIPE) == ["certificate-0.7.4-sm90-real-ops.json"]


def test_a_release_is_chosen_in_the_recipes_order_and_an_unknown_one_is_refused_by_name():
    """--release picks in the recipe's order whatever order it was given in; one the recipe lacks is a usage error."""
    assert [r.flashinfer for r in choose(RECIPE, ["0.7.4", "0.6.1"])] == ["0.6.1", "0.7.4"]
    assert len(choose(RECIPE, [])) == len(RECIPE.releases)
    with pytest.raises(UsageError, match="--release 0.5.0: not in the recipe .*0.6.1"):
        choose(RECIPE, ["0.5.0", "0.6.1"])


def test_a_recipe_missing_a_key_or_listing_a_release_twice_is_refused():
    """The recipe's errors name what is wrong, before anything is built."""
    with pytest.raises(UsageError, match="missing key 'torch'"):
        parse_recipe({"python": "3.12", "arch": "sm120", "unroll_budget_s": 1, "upstream_repo": "r", "release": []})
    twice = {"python": "3.12", "torch": "2.9.1", "arch": "sm120", "unroll_budget_s": 1, "upstream_repo": "r",
             "release": [{"flashinfer": "0.6.1", "upstream_ref": "a", "upstream_commit": "a"}] * 2}
    with pytest.raises(UsageError, match="listed twice"):
        parse_recipe(twice)


def test_each_environment_is_named_by_what_it_holds():
    """The subject's pins come first; a release's extra requirement (nvshmem for 0.7.4) is in its list and a
    different list is a different folder, so a cached environment is never reused for other requirements."""
    old, new = choose(RECIPE, ["0.6.1", "0.7.4"])
    a, b = env_plan(RECIPE, old, ["pytest>=8"], Path("/envs")), env_plan(RECIPE, new, ["pytest>=8"], Path("/envs"))
    assert a.requirements[:2] == (f"torch=={RECIPE.torch}", "flashinfer-python==0.6.1")
    assert any(r.startswith("nvshmem4py-cu13") for r in b.requirements)
    assert not any(r.startswith("nvshmem4py") for r in a.requirements)
    assert a.folder != env_plan(RECIPE, old, ["pytest>=9"], Path("/envs")).folder
    assert a.folder == env_plan(RECIPE, old, ["pytest>=8"], Path("/envs")).folder


def test_a_job_reads_the_tests_at_the_recipes_ref_judges_with_its_own_inputs_and_copies_four_files(tmp_path):
    """inputs at the release's ref into the staged folder, the certificate judged with exactly those inputs and the
    recipe's budget, the two JSON files compared with the committed ones, the four files copied to --out."""
    release = choose(RECIPE, ["0.6.12"])[0]
    job = plan_job(RECIPE, release, **_where(tmp_path))
    inputs, certificate = job.steps
    assert inputs.argv[inputs.argv.index("--upstream-ref") + 1] == "v0.6.12"
    assert certificate.argv[certificate.argv.index("--inputs") + 1] == str(job.inputs)
    assert certificate.argv[certificate.argv.index("--unroll-budget") + 1] == f"{RECIPE.unroll_budget_s:g}"
    assert inputs.argv[:3] == (str(job.env.interpreter), "-m", "lab.certificates.child")
    assert [dst.relative_to(tmp_path / "out").as_posix() for _src, dst in job.copies] == [
        "certificate-0.6.12-sm120.json", "certificate-0.6.12-sm120.md",
        "inputs/flashinfer-0.6.12.json", "inputs/upstream-tests-v0.6.12.json"]
    assert all(src.is_relative_to(job.work) for src, _dst in job.copies)
    assert [c.name for _s, c in job.committed] == ["certificate-0.6.12-sm120.json", "flashinfer-0.6.12.json",
                                                   "upstream-tests-v0.6.12.json"]


def test_differences_leave_out_times_and_match_rows_by_target():
    """Only when/how-long keys are ignored; a status change is named by its target, an extra row is one line."""
    old = {"created": "2026-12-05", "wall_s": 30.1, "callables": [
        {"target": "a", "status": "breaks", "seconds": 1.0}, {"target": "b", "status": "breaks", "seconds": 2.0}]}
    same = {"created": "2026-12-06", "wall_s": 44.0, "callables": [
        {"target": "a", "status": "breaks", "seconds": 9.0}, {"target": "b", "status": "breaks", "seconds": 3.0}]}
    assert differences(old, same) == []
    changed = {**same, "callables": [{"target": "c", "status": "breaks"}, {"target": "a", "status": "breaks"},
                                     {"target": "b", "status": "not-judged"}]}
    assert differences(old, changed) == ['callables.b.status: "breaks" -> "not-judged"', "callables.c: added"]
    assert differences({"x": [1, 2]}, {"x": [1, 3]}) == ["x[1]: 2 -> 3"]


def test_a_row_reads_the_certificates_coverage_and_refuses_another_release():
    """judged/listed, ops and sources come from the certificate's coverage; a certificate of another release (the
    environment held another flashinfer) is an error row, never counted as this one."""
    release = Release("0.6.1", "v0.6.1", "cc1a362ff936")
    cert = {"flashinfer": "0.6.1", "coverage": {"callables judged": 67, "callables listed": 105, "ops listed": 1,
                                                "ops judged with inputs": 1,
                                                "callables judged by input source": {"signature": 1, "docstring": 19}}}
    row = row_from_certificate(release, cert, "reused", [StepTime("certificate", 30.0, 25.5)], "same")
    assert (row.status, row.callables, row.ops, row.sources) == ("ok", (67, 105), (1, 1), (("docstring", 19), ("signature", 1)))
    other = row_from_certificate(release, {**cert, "flashinfer": "0.6.2"}, "reused", [], "")
    assert other.status == "error" and "holds flashinfer 0.6.2, not 0.6.1" in other.reason


def test_an_error_line_is_the_last_thing_the_command_said_not_its_echo():
    """The row's one line: step, how it ended, the last printed line that is not a command echo."""
    tail = "Traceback...\nModuleNotFoundError: No module named 'docstring_parser'\n+ uv pip freeze\n"
    assert error_reason("inputs", "exit status 1", tail) == (
        "inputs: exit status 1: ModuleNotFoundError: No module named 'docstring_parser'")
    assert error_reason("certificate", "timed out after 3600 s", "") == "certificate: timed out after 3600 s"


def test_the_table_has_a_line_per_release_and_an_error_rows_reason():
    """An ok row shows its counts and times (wall and CPU), an error row its one line; no cell breaks the table."""
    rows = [Row("0.6.1", "ok", "", (67, 105), (1, 1), (("docstring", 19),), "reused",
                (StepTime("inputs", 9.8, 7.7), StepTime("certificate", 32.8, None)), "same"),
            Row("0.7.4", "error", "environment (install): exit status 1: no matching distribution | x")]
    table = render_table(rows).splitlines()
    assert len(table) == 4 and table[0].count("|") == table[2].count("|")
    assert "| 67 / 105 | 1 / 1 | docstring 19 | reused | 9.8 s (7.7 s) | 32.8 s (-) | same |" in table[2]
    assert "error: environment (install): exit status 1: no matching distribution \\| x" in table[3]


def _stand_in(job: Job, *, inputs_code: str, certificate_code: str) -> Job:
    """The job with its two commands replaced by short Python scripts (no torch, no FlashInfer)."""
    py = (sys.executable, "-c")
    job.kit.mkdir(parents=True, exist_ok=True)
    return dataclasses.replace(job, steps=(
        Step("inputs", (*py, inputs_code), job.work / "inputs.log", job.work / "inputs.rusage.json", 60),
        Step("certificate", (*py, certificate_code), job.work / "certificate.log", job.work / "c.rusage.json", 60)))


def _writer(files: dict[Path, object]) -> str:
    writes = "".join(f"p=pathlib.Path({str(p)!r}); p.parent.mkdir(parents=True, exist_ok=True); "
                     f"p.write_text({json.dumps(data) if not isinstance(data, str) else data!r})\n"
                     for p, data in files.items())
    return "import pathlib\n" + writes


def test_a_failing_release_is_an_error_row_and_the_others_finish_and_are_copied(tmp_path, monkeypatch):
    """One release's certificate command fails: its row says why and nothing of it is copied; the other release
    runs to the end (parallel), its four files are copied and its row compares with the committed ones."""
    monkeypatch.setattr(run, "ensure_env", lambda env, work: "reused")
    jobs = []
    for release in choose(RECIPE, ["0.6.1", "0.6.12"]):
        job = plan_job(RECIPE, release, **_where(tmp_path))
        upstream = {"commit": release.upstream_commit + "0" * 28}
        cert = {"flashinfer": release.flashinfer, "created": "x", "coverage": {"callables judged": 3, "callables listed": 5}}
        inputs = _writer({job.inputs: {"created": "x"}, job.upstream: upstream})
        ok = _writer({job.certificate: cert, job.certificate.with_suffix(".md"): "page"})
        fail = "import sys; print('RuntimeError: the fake run raised'); sys.exit(4)"
        jobs.append(_stand_in(job, inputs_code=inputs, certificate_code=fail if release.flashinfer == "0.6.1" else ok))
    committed = tmp_path / "committed" / "certificate-0.6.12-sm120.json"
    committed.parent.mkdir(parents=True)
    committed.write_text(json.dumps({"flashinfer": "0.6.12", "created": "y", "coverage": {"callables judged": 2,
                                                                                        "callables listed": 5}}))
    rows = run.run_jobs(jobs, parallel=2)
    assert [r.release for r in rows] == ["0.6.1", "0.6.12"]
    assert rows[0].status == "error" and rows[0].reason == "certificate: exit status 4: RuntimeError: the fake run raised"
    assert rows[1].status == "ok" and rows[1].callables == (3, 5)
    assert rows[1].versus.startswith("1 difference") and "not committed: flashinfer-0.6.12.json" in rows[1].versus
    assert "coverage.callables judged: 2 -> 3" in (jobs[1].work / "versus-committed.txt").read_text()
    out = tmp_path / "out"
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "certificate-0.6.12-sm120.json", "certificate-0.6.12-sm120.md",
        "inputs/flashinfer-0.6.12.json", "inputs/upstream-tests-v0.6.12.json"]


def test_tests_read_at_another_commit_are_an_error_row_before_any_certificate(tmp_path, monkeypatch):
    """A mirror whose ref resolves elsewhere (a moved tag) stops the release after its inputs: no certificate."""
    monkeypatch.setattr(run, "ensure_env", lambda env, work: "reused")
    job = plan_job(RECIPE, choose(RECIPE, ["0.6.1"])[0], **_where(tmp_path))
    marker = tmp_path / "certificate-ran"
    job = _stand_in(job, inputs_code=_writer({job.upstream: {"commit": "deadbeef" * 5}}),
                    certificate_code=f"open({str(marker)!r}, 'w')")
    row = run.run_jobs([job])[0]
    assert row.status == "error" and "resolved to deadbeefdead in the mirror, not the recipe's cc1a362ff936" in row.reason
    assert not marker.exists() and [t.name for t in row.times] == ["inputs"]


def test_a_stop_during_a_parallel_run_kills_every_release_command_and_raises(tmp_path, monkeypatch):
    """A stop signal while two releases' commands run: both process groups die, no queued release starts, and
    Interrupted goes up to the one error path (exit 130)."""
    monkeypatch.setattr(run, "ensure_env", lambda env, work: "reused")
    pids = tmp_path / "pids"
    pids.mkdir()
    sleeper = f"import os, time; open(os.path.join({str(pids)!r}, str(os.getpid())), 'w'); time.sleep(120)"
    jobs = [_stand_in(plan_job(RECIPE, r, **_where(tmp_path)), inputs_code=sleeper, certificate_code="")
            for r in choose(RECIPE, ["0.6.1", "0.6.12", "0.7.0"])]

    def stop_when_running() -> None:
        deadline = time.monotonic() + 30
        while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        signals.request_stop(2)

    threading.Thread(target=stop_when_running, daemon=True).start()
    start = time.monotonic()
    with signals.stop_policy(), pytest.raises(Interrupted):
        run.run_jobs(jobs, parallel=2)
    assert time.monotonic() - start < 30
    started = [int(p.name) for p in pids.iterdir()]
    assert len(started) == 2  # the third release never started

    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    assert not [pid for pid in started if alive(pid)]


def test_the_run_uses_a_copy_of_the_kit_so_an_edit_during_the_run_cannot_mix_in(tmp_path):
    """copy_kit takes the parts pcgkit.resources needs (no bytecode) and replaces an older copy; the checkout
    edited afterwards leaves the copy as it was."""
    checkout = tmp_path / "checkout"
    for part in ("pcgkit", "lab", "fixtures", "cases", "docker"):
        (checkout / part / "__pycache__").mkdir(parents=True)
        (checkout / part / "a.py").write_text("old")
        (checkout / part / "__pycache__" / "a.cpython-312.pyc").write_text("")
    (checkout / "pyproject.toml").write_text("[project]")
    (checkout / "reports").mkdir()
    kit = tmp_path / "work" / "kit"
    kit.mkdir(parents=True)
    (kit / "stale.py").write_text("")
    run.copy_kit(checkout, kit)
    (checkout / "pcgkit" / "a.py").write_text("new")
    assert sorted(p.relative_to(kit).as_posix() for p in kit.rglob("*") if p.is_file()) == [
        "cases/a.py", "docker/a.py", "fixtures/a.py", "lab/a.py", "pcgkit/a.py", "pyproject.toml"]
    assert (kit / "pcgkit" / "a.py").read_text() == "old"


def test_an_import_error_reads_the_same_whatever_the_environment_folder_is_called():
    """The certificate's import errors are cut after the install path is taken out: two environments whose folders
    differ in length give the same text (the committed 0.7.0 and 0.7.2.post1 certificates differed by that alone)."""
    from lab.sweep.discover import _said

    tail = "flashinfer/moe_ep/kernel_src/cutedsl_megamoe/src/common/__init__.py' " + "x" * 200
    said = [_said(RuntimeError(f"kernel module 'common' is already imported from '{prefix}/site-packages/{tail}"))
            for prefix in ("/tmp/v/lib/python3.12", "/root/.cache/pcgkit/certificate-envs/flashinfer-0.7.0-0123456789ab"
                                                   "/lib/python3.12")]
    assert said[0] == said[1] and len(said[0]) == len("RuntimeError: ") + 160 and "site-packages" not in said[0]


def test_the_child_records_the_commands_cpu_time_and_exit(tmp_path):
    """child.py runs a kit command in its own interpreter and writes its exit status and user/system seconds."""
    record = tmp_path / "r.json"
    with pytest.raises(SystemExit) as exited:
        child_main([str(record), "lab", "--help"])
    assert exited.value.code == 0
    data = json.loads(record.read_text())
    assert data["argv"] == ["lab", "--help"] and data["exit"] == 0
    assert data["user_s"] > 0 and data["system_s"] >= 0


def test_the_command_plans_without_running_and_refuses_a_missing_mirror(capsys, monkeypatch):
    """--dry-run prints each release's environment and its two commands and starts no process; without
    --upstream-git (where FlashInfer's tests are read) it stops with a usage error before building anything."""
    from lab.cli import main
    from pcgkit.util import proc

    monkeypatch.setattr(proc, "run", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran a process")))
    assert main(["certificates", "--dry-run", "--release", "0.7.4"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("0.7.4: environment ") and "nvshmem4py-cu13" in out[0]
    assert [line.split(":")[0].strip() for line in out[1:4]] == ["inputs", "certificate", "then"]
    assert main(["certificates", "--release", "0.7.4"]) == 2
    assert "--upstream-git DIR is needed" in capsys.readouterr().err
