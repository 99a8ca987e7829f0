"""The CI fan-out on this machine (`pcgkit ci local`): each cell a separate job and artifact, merged by
`pcgkit report --from`; the merge equals a single-host run of the same cells, and a GPU job's real
result sits beside the simulated one with their disagreement flagged.

Cheap on purpose: the cells are 'existing' interpreters that are stand-ins (they answer the import
check and, asked to run pytest, write the real H200 results of tests/data/fanout/: simulated for
`-m cpu_sim`, real for a hardware marker). Everything else (the jobs' own commands, the venv
backend, cell.json with where, archives, the merge, the report) is the kit's real code. The same
fan-out through the docker backend is docs/ci.md's measured run (Docker is not in every test run).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the matrix fanned out into jobs and merged, real cells: about a minute

DATA = Path(__file__).parent / "data" / "fanout"
REPO = Path(__file__).resolve().parent.parent
STAND_IN = """\
#!{python}
import json, shutil, sys
args = sys.argv[1:]
if args[:1] == ["-c"]:  # the import check / version probe
    env = json.load(open({sim!r}))["environment"]["versions"]
    print("PCGKIT-VERSIONS " + json.dumps(env)); sys.exit(0)
opts = dict(a.split("=", 1) for a in args if a.startswith("--") and "=" in a)
select = args[len(args) - 1 - args[::-1].index("-m") + 1]
source = {sim!r} if select == "cpu_sim" else {real!r}
shutil.copyfile(source, opts["--pcgkit-json"])
results = json.load(open(source))["results"]
cases = "".join('<testcase classname="cases" name="%s[%s]" time="0.1"/>' % (r["mode"], r["variant"]) for r in results)
open(opts["--junitxml"], "w").write('<testsuites><testsuite name="pytest" tests="%d">%s</testsuite></testsuites>' % (len(results), cases))
"""


def stand_in(path: Path) -> str:
    path.write_text(STAND_IN.format(python=sys.executable, sim=str(DATA / "h200-fi0.7.0-simulated-results.json"),
                                    real=str(DATA / "h200-fi0.7.0-real-results.json")))
    path.chmod(0o755)
    return str(path)


def pcgkit(*args: str) -> subprocess.CompletedProcess:
    env_path = {"PYTHONPATH": str(REPO)}
    import os

    return subprocess.run([sys.executable, "-m", "pcgkit.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **env_path})


@pytest.fixture(scope="module")
def matrix(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("fanout")
    (tmp / "matrix.toml").write_text(textwrap.dedent(f"""\
        schema = "pcgkit.matrix/1"
        [[cell]]
        id = "alpha"
        kind = "existing"
        interpreter = "{stand_in(tmp / 'alpha-python')}"
        [[cell]]
        id = "beta"
        kind = "existing"
        interpreter = "{stand_in(tmp / 'beta-python')}"
        """))
    return tmp, tmp / "matrix.toml"


VOLATILE_TOP = ("created", "environment", "previous_run", "changes", "sources", "source_notes", "kit_version")
VOLATILE_CELL = ("duration_s", "finished", "from_cache", "where", "source", "provenance", "log_tail")


def comparable(compat: dict) -> dict:
    """The compat model without timestamps, hosts, paths and timings."""
    out = {k: v for k, v in compat.items() if k not in VOLATILE_TOP}
    out["cells"] = sorted(({k: v for k, v in c.items() if k not in VOLATILE_CELL} for c in compat["cells"]),
                          key=lambda c: c["id"])
    return out


def test_fanned_out_jobs_merge_to_the_single_host_report(matrix):
    """Two cells as two jobs and two .tar.gz artifacts, merged: the same compat model as one run of both."""
    tmp, matrix_file = matrix
    fan = pcgkit("ci", "local", "--matrix", str(matrix_file), "--reports", str(tmp / "fan"), "--archive")
    assert fan.returncode == 0, fan.stdout + fan.stderr
    artifacts = sorted(p.name for p in (tmp / "fan" / "artifacts").iterdir())
    assert artifacts == ["cell-alpha-sim-sm120.tar.gz", "cell-beta-sim-sm120.tar.gz"]
    single = pcgkit("matrix", "--matrix", str(matrix_file), "--reports", str(tmp / "single"), "-m", "cpu_sim", "--jobs", "1")
    assert single.returncode == 0, single.stdout + single.stderr
    merged = json.loads((tmp / "fan" / "reports" / "compat.json").read_text())
    one = json.loads((tmp / "single" / "compat.json").read_text())
    assert comparable(merged) == comparable(one)
    # not vacuous: both really carry verdicts with evidence, and each merged row says where it ran
    assert {c["id"]: c["modes"]["mode1"]["verdict"] for c in merged["cells"]} == {"alpha": "reproduced", "beta": "reproduced"}
    assert all(c["where"]["runner_labels"] == ["ubuntu-latest"] for c in merged["cells"])
    assert [s["kind"] for s in merged["sources"]] == ["archive", "archive"]


def test_gpu_job_result_sits_beside_the_simulated_one_and_disagreement_is_flagged(matrix):
    """A gpu runner job for beta adds a second beta row; fix-upstream-op (fixed vs drifted) is listed."""
    tmp, matrix_file = matrix
    fan = pcgkit("ci", "local", "--matrix", str(matrix_file), "--reports", str(tmp / "fan-gpu"), "--cell", "beta",
                 "--runner-labels", "gpu=self-hosted,gpu", "--job-args", "cell-beta-gpu=--backend venv")
    # exit 1 (pcgkit.errors: behaviour changed against baseline): the real run's fix-upstream-op drifted
    assert fan.returncode == 1, fan.stdout + fan.stderr
    compat = json.loads((tmp / "fan-gpu" / "reports" / "compat.json").read_text())
    rows = {c["id"]: c for c in compat["cells"]}
    assert len(rows) == 2
    beta = sorted(i for i in rows if i.startswith("beta@"))
    assert len(beta) == 2
    assert {rows[i]["simulated"] for i in beta} == {True, False}
    assert [(d["cell"], d["case"], d["fields"]) for d in compat["disagreements"]] == [
        ("beta", "fix-upstream-op", ["verdict", "innermost_frame"])]
    assert "disagree: beta fix-upstream-op" in fan.stdout
    assert "fix-upstream-op" in (tmp / "fan-gpu" / "reports" / "compat.md").read_text().split("disagree", 1)[-1]


def test_a_foreign_archive_in_the_merge_is_an_error_row_and_a_red_exit(tmp_path):
    """report --from with a zip that is not a cell result: the report is written, the row says why, exit 3."""
    import zipfile

    from pcgkit.matrix.cells import Cell
    from pcgkit.matrix.outcome import RAN, CellOutcome, write_outcome
    from pcgkit.verdicts.result import read_results

    environment, results = read_results(DATA / "h200-fi0.7.0-simulated-results.json")
    good = tmp_path / "good" / "alpha"
    write_outcome(good / "cell.json", CellOutcome(Cell(id="alpha"), RAN, 1.0, versions=environment["versions"],
                                                  results=tuple(results)))
    bad = tmp_path / "foreign.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("notes.txt", "hello")
    done = pcgkit("report", "--reports", str(tmp_path / "r"), "--from", str(bad), "--from", str(good))
    assert done.returncode == 3, done.stdout + done.stderr  # an error row: pcgkit.errors.ExitCode.ERROR_CELLS
    compat = json.loads((tmp_path / "r" / "compat.json").read_text())
    errors = [c for c in compat["cells"] if c["status"] == "error"]
    assert len(errors) == 1 and "no cell.json inside" in errors[0]["reason"] and bad.name in errors[0]["reason"]
    assert [c["id"] for c in compat["cells"] if c["status"] == "ran"] == ["alpha"]
    assert "foreign.zip" in (tmp_path / "r" / "compat.md").read_text()
