"""Every way a run can stop: a kit run inside a kit run (`ci local`, `e2e`) stops its own children before
it goes, and results are written as each case finishes, so a hang the case timeout cannot interrupt loses
only the hung case (with `-m` too)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pcgkit.util import proc

from .helpers import REPO_ROOT, alive, kit_env


def _wait_for(predicate, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


NESTED = textwrap.dedent("""\
    import sys
    from pcgkit.util import proc, signals
    from pcgkit.errors import Interrupted
    inner = sys.argv[1] == "inner"
    folder = sys.argv[2]
    try:
        with signals.stop_policy():
            if inner:  # the inner kit (a `pcgkit matrix` that `ci local` started): its own child in its own session
                proc.run(["sh", "-c", f"sleep 300 & echo $! > {folder}/grandchild; echo $$ > {folder}/child; wait"], echo=False)
            else:
                proc.run([sys.executable, __file__, "inner", folder], echo=False)
    except Interrupted as exc:
        open(f"{folder}/{'inner' if inner else 'outer'}.stopped", "w").write(str(exc))
        sys.exit(exc.exit_code)
    """)


def test_stopping_a_kit_that_runs_a_kit_leaves_no_orphan(tmp_path):
    """SIGINT to an outer kit (`ci local`) whose child is a kit with children of its own: the inner kit is asked
    to stop first (SIGTERM, then SIGKILL after a grace), stops its own child, and nothing survives."""
    script = tmp_path / "nested.py"
    script.write_text(NESTED)
    outer = subprocess.Popen([sys.executable, str(script), "outer", str(tmp_path)], cwd=REPO_ROOT, env=kit_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: all((tmp_path / n).exists() and (tmp_path / n).read_text().strip() for n in ("child", "grandchild")))
    pids = [int((tmp_path / n).read_text()) for n in ("child", "grandchild")]
    outer.send_signal(signal.SIGINT)
    out, err = outer.communicate(timeout=60)
    assert outer.returncode == 130, err
    _wait_for(lambda: not any(alive(pid) for pid in pids), 10)
    assert (tmp_path / "inner.stopped").exists(), (err, sorted(p.name for p in tmp_path.iterdir()))
    assert (tmp_path / "inner.stopped").read_text() == "SIGTERM"  # the inner kit stopped cleanly, not SIGKILLed


CASES = textwrap.dedent('''\
    import json, time
    import pytest
    from pcgkit.verdicts.result import JUNIT_RESULT_PROPERTY
    from tests.faults.helpers import result

    class MODE:
        id = "x"

    @pytest.mark.cpu_sim
    def test_finishes(record_property):
        record_property(JUNIT_RESULT_PROPERTY, json.dumps(result(mode="mode1").to_dict()))

    @pytest.mark.cpu_sim
    def test_hangs_past_every_timeout():
        time.sleep(300)  # native code holding SIGALRM looks like this from outside: only the kill stops it
    ''')


def _hang_argv(tmp_path: Path, results: Path, select: str | None) -> list[str]:
    (tmp_path / "test_hang_cases.py").write_text(CASES)
    argv = [sys.executable, "-m", "pytest", "-p", "pcgkit.plugin", "-p", "no:cacheprovider", "-q",
            f"--pcgkit-json={results}", "--rootdir", str(tmp_path), str(tmp_path / "test_hang_cases.py")]
    return argv + (["-m", select] if select else [])


@pytest.mark.slow  # waits out a hung case's timeout: tens of seconds
def test_a_hang_loses_only_the_hung_case(tmp_path):
    """The run is killed for its overall timeout while a case hangs: results.json already holds the case that finished."""
    results = tmp_path / "results.json"
    done = proc.run(_hang_argv(tmp_path, results, None), env=kit_env(), timeout=40, echo=False, cwd=REPO_ROOT)
    assert done.timed_out
    data = json.loads(results.read_text())
    assert [r["mode"] for r in data["results"]] == ["mode1"]


@pytest.mark.slow  # a real run killed mid-way: tens of seconds
def test_with_a_marker_selection_a_killed_run_still_writes_results(tmp_path, monkeypatch):
    """`pcgkit run -m cpu_sim` whose pytest is killed: results.json exists with the finished case and the
    selected-but-unfinished case as an error row (nothing silently missing)."""
    from pcgkit.jobs import run as runjob

    reports = tmp_path / "reports"
    reports.mkdir()
    plan = runjob.RunPlan(python=sys.executable, reports_dir=reports, timeout_s=40, case_timeout_s=30, select="cpu_sim")
    monkeypatch.setattr(runjob, "plan_pytest_argv", lambda p: _hang_argv(tmp_path, p.files.results_path, p.select))
    monkeypatch.setattr(runjob, "probe_versions", lambda python: {"torch": None})
    environment, results, completed = runjob.execute(plan)
    assert completed.timed_out
    data = json.loads(plan.files.results_path.read_text())
    by_mode = {r["mode"]: r for r in data["results"]}
    assert by_mode["mode1"]["verdict"] == "reproduced"
    errors = [r for r in data["results"] if r["verdict"] == "error"]
    assert errors and all("timed out" in r["reason"] for r in errors)
