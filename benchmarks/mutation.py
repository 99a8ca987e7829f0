"""Mutation testing of the honesty-critical core, on demand (not in CI): how many mutants do our tests kill?

Tool: cosmic-ray (PyPI; works offline once installed, runs any test command per mutant, mutates
files in place -- so each target runs in its own throwaway copy of the checkout, never the tree you
edit, and two targets never share a copy). Each target module is paired with the fast test files
that pin it: each mutant runs only those (the machine has 2 shared cores). Install the tool once
into any venv that also sees the kit's dependencies, e.g.:

    uv venv /tmp/mut --python .venv/bin/python
    echo "$PWD/.venv/lib/python3.12/site-packages" > /tmp/mut/lib/python3.12/site-packages/_kit.pth
    VIRTUAL_ENV=/tmp/mut uv pip install cosmic-ray==8.7.0
    /tmp/mut/bin/python benchmarks/mutation.py [--only modes --only hardware] [--jobs 2] [--timeout 60]

Scope, chosen for verdict logic rather than for a big number: only the operators in VERDICT_OPERATORS
(comparisons, boolean and/or/not, True/False, numbers, break/continue, zero-iteration loops), and
per target only the functions that judge (``functions``) minus cosmetic data tables (``skip_names``).
Equality <-> identity swaps (``==`` -> ``is``) are left out: on the interned strings and small ints
these modules compare they are equivalent under CPython, so they would only pad the survivor list.
Lines marked ``# pragma: no mutate`` are skipped too (cosmic-ray's own convention).

Writes reports/mutation/mutation.md (table, figure, every survivor with its diff) and mutation.json.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import datetime as _dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTEST = "python -m pytest -x -q -p no:cacheprovider -p no:randomly"

# Operators that can flip a verdict; arithmetic/unary-sign/exception-type/decorator/variable ones are
# left out (they mostly rewrite string formatting and dataclass plumbing, not judging).
VERDICT_OPERATORS = re.compile(
    r"core/(ReplaceComparisonOperator_.*|AddNot|ReplaceTrueWithFalse|ReplaceFalseWithTrue|ReplaceAndWithOr"
    r"|ReplaceOrWithAnd|ReplaceUnaryOperator_Delete_Not|NumberReplacer|ReplaceBreakWithContinue"
    r"|ReplaceContinueWithBreak|ZeroIterationForLoop)$")
_IDENTITY_SWAP = re.compile(r"ReplaceComparisonOperator_(Eq_Is|Eq_IsNot|NotEq_Is|NotEq_IsNot|Is_Eq|Is_NotEq"
                            r"|IsNot_Eq|IsNot_NotEq)$")


@dataclasses.dataclass(frozen=True)
class Target:
    name: str
    module: str
    tests: str  # the fast pytest selection that pins this module
    functions: tuple[str, ...] = ()  # top-level defs/classes to mutate; empty: the whole module
    skip_names: tuple[str, ...] = ()  # top-level names (data tables) never mutated


# The pure tests of the path check (judge_path, rows, capabilities, build() on recorded calls). The
# simulated-trace tests import torch+FlashInfer and take 15-40 s each on the shared machine: not per mutant.
_NO_FULL_TRACE = "judge or rows or capability or malformed or real_device or build"

TARGETS: tuple[Target, ...] = (
    Target("modes", "pcgkit/verdicts/modes.py", "tests/test_modes.py"),
    Target("fixmodes", "pcgkit/verdicts/fixmodes.py", "tests/test_fix_modes.py"),
    Target("expectations", "pcgkit/verdicts/expectations.py", "tests/test_expectations.py"),
    Target("signature", "pcgkit/values/signature.py", "tests/test_signature.py",
           functions=("Frame", "Signature", "parse_frame_str", "package_relative", "parse_frames",
                      "innermost_library_frame", "skipped_callable_name", "_user_code_section", "parse_message",
                      "parse_exception")),
    Target("redact", "pcgkit/util/redact.py", "tests/faults/test_secrets.py"
           " -k 'not credentialed and not resumes and not terminal_echo'"),
    Target("hardware", "pcgkit/harness/hardware.py", "tests/test_hardware.py",
           skip_names=("SIMULATED_PART_SHAPE", "SIMULATED_SM120", "SIMULATED_SM100", "SIMULATED_SM90")),
    Target("archpaths", "pcgkit/harness/archpaths.py", f"tests/test_simulation_path.py -k '{_NO_FULL_TRACE}'"),
    Target("pathevidence", "pcgkit/harness/pathevidence.py", f"tests/test_simulation_path.py -k '{_NO_FULL_TRACE}'"),
    Target("judging", "pcgkit/harness/judging.py",
           "tests/test_matrix_baseline.py tests/test_plugin.py::test_judge_against_baseline_maps_every_verdict"
           " tests/test_plugin.py::test_judge_against_baseline_omits_an_empty_why",
           functions=("judge_against_baseline",)),
)


def _copy_checkout(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.splitlines()
    for rel in files:
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("reports/", ".pcgkit/")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def line_ranges(source: str, names: tuple[str, ...]) -> list[tuple[int, int]]:
    """Line spans (inclusive) of the top-level defs/classes/assignments called ``names``."""
    spans = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = {node.name}
        elif isinstance(node, ast.Assign):
            bound = {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            bound = {node.target.id}
        else:
            continue
        if bound & set(names):
            start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            spans.append((start, node.end_lineno or node.lineno))
    return spans


def in_scope(target: Target, source_lines: list[str], operator: str, line: int,
             keep: list[tuple[int, int]], drop: list[tuple[int, int]]) -> bool:
    """Whether a mutant at ``line`` by ``operator`` belongs to the measured scope."""
    if not VERDICT_OPERATORS.match(operator) or _IDENTITY_SWAP.search(operator):
        return False
    if "pragma: no mutate" in source_lines[line - 1]:
        return False
    if target.functions and not any(a <= line <= b for a, b in keep):
        return False
    return not any(a <= line <= b for a, b in drop)


def _env(tree: Path) -> dict[str, str]:
    # No .pyc: a same-size mutant written within the same second could otherwise run stale bytecode.
    # The real HOME: tvm_ffi (imported with flashinfer) compiles a helper into ~/.cache once per HOME.
    return {"PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1", "HOME": os.environ.get("HOME", str(tree)),
            "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"}


def _filter_session(target: Target, tree: Path, session: Path) -> int:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    source = (tree / target.module).read_text()
    lines = source.splitlines()
    keep, drop = line_ranges(source, target.functions), line_ranges(source, target.skip_names)
    kept = 0
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item in list(db.pending_work_items):
            m = item.mutations[0]
            if in_scope(target, lines, m.operator_name, m.start_pos[0], keep, drop):
                kept += 1
            else:
                db.set_result(item.job_id, WorkResult(output="out of scope", worker_outcome=WorkerOutcome.SKIPPED))
    return kept


def _run_target(target: Target, timeout: float) -> dict:
    from cosmic_ray.work_db import WorkDB, use_db

    with tempfile.TemporaryDirectory(prefix=f"pcgkit-mutation-{target.name}-") as tmp:
        tree = Path(tmp)
        _copy_checkout(tree)
        config = tree / f"cr-{target.name}.toml"
        session = tree / f"cr-{target.name}.sqlite"
        config.write_text(
            "[cosmic-ray]\n"
            f'module-path = "{target.module}"\n'
            f"timeout = {timeout}\n"
            "excluded-modules = []\n"
            f'test-command = "{PYTEST} {target.tests}"\n'
            '[cosmic-ray.distributor]\nname = "local"\n'
        )
        env = _env(tree)
        bindir = Path(sys.executable).parent
        start = time.monotonic()
        subprocess.run([str(bindir / "cosmic-ray"), "init", str(config), str(session)], cwd=tree, env=env, check=True)
        _filter_session(target, tree, session)
        subprocess.run([str(bindir / "cosmic-ray"), "exec", str(config), str(session)], cwd=tree, env=env,
                       check=True)
        killed = survived = incompetent = 0
        survivors = []
        with use_db(str(session), WorkDB.Mode.open) as db:
            for item, result in db.completed_work_items:
                if result.test_outcome is None:  # out of scope (skipped) or the worker itself failed
                    incompetent += result.worker_outcome.value != "skipped"
                    continue
                outcome = result.test_outcome.value
                if outcome == "killed":
                    killed += 1
                elif outcome == "survived":
                    survived += 1
                    mutation = item.mutations[0]
                    survivors.append({"line": mutation.start_pos[0], "operator": mutation.operator_name,
                                      "diff": result.diff})
                else:
                    incompetent += 1
    return {"target": target.name, "module": target.module, "tests": target.tests,
            "functions": list(target.functions), "skip_names": list(target.skip_names), "killed": killed,
            "survived": survived, "incompetent": incompetent, "wall_s": round(time.monotonic() - start, 1),
            "survivors": sorted(survivors, key=lambda s: s["line"])}


def recheck(rows: list[dict], timeout: float) -> list[dict]:
    """Re-run only the recorded survivors against today's tests (after tests were added to kill them).

    Each survivor's diff is applied to a fresh copy and the target's current test command runs, so a
    full run is not needed to confirm a kill. Kills of the earlier run stand: tests are only added
    and the selections only grow, and with -x a passing test can never turn a failure back."""
    by_name = {t.name: t for t in TARGETS}
    out = []
    for row in rows:
        target = by_name[row["target"]]
        still, killed_now = [], 0
        with tempfile.TemporaryDirectory(prefix=f"pcgkit-recheck-{target.name}-") as tmp:
            tree = Path(tmp)
            _copy_checkout(tree)
            env = _env(tree)
            pristine = (tree / target.module).read_text()
            for survivor in row["survivors"]:
                diff = survivor["diff"].split("\n", 1)[1] if survivor["diff"].startswith("--- mutation diff") else survivor["diff"]
                subprocess.run(["patch", "-p1", "-s"], input=diff.rstrip("\n") + "\n", text=True, cwd=tree, check=True)
                try:
                    failed = subprocess.run(f"{PYTEST} {target.tests}", shell=True, cwd=tree, env=env,
                                            capture_output=True, timeout=timeout).returncode != 0
                except subprocess.TimeoutExpired:
                    failed = True  # cosmic-ray counts a timeout as killed too
                finally:
                    (tree / target.module).write_text(pristine)
                if failed:
                    killed_now += 1
                else:
                    still.append(survivor)
        out.append({**row, "tests": target.tests, "killed": row["killed"] + killed_now, "survived": len(still),
                    "survivors": still, "rechecked": {"survivors_before": len(row["survivors"]),
                                                      "killed_by_new_tests": killed_now}})
    return out


def render(rows: list[dict], meta: dict) -> str:
    killed = sum(r["killed"] for r in rows)
    scored = killed + sum(r["survived"] for r in rows)
    score = 100.0 * killed / scored if scored else 0.0
    lines = [f"# Mutation testing of the honesty-critical core ({meta['date']})", "",
             f"Tool: cosmic-ray {meta['tool_version']}; machine: {meta['machine']}.", "",
             f"**{killed} of {scored} mutants killed ({score:.1f}%)**; incompetent mutants (do not import/run) "
             "are not counted.", "",
             "| module | scope | tests run per mutant | killed | survived | incompetent | wall |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        scope = ", ".join(r["functions"]) or "whole module"
        if r["skip_names"]:
            scope += " minus " + ", ".join(r["skip_names"])
        lines.append(f"| `{r['module']}` | {scope} | `{r['tests']}` | {r['killed']} | {r['survived']} "
                     f"| {r['incompetent']} | {r['wall_s']} s |")
    if any("rechecked" in r for r in rows):
        lines += ["", "Survivors of the run were re-run against the tests added since (`--recheck`): "
                  + ", ".join(f"{r['target']} {r['rechecked']['killed_by_new_tests']} of "
                              f"{r['rechecked']['survivors_before']} now killed" for r in rows if "rechecked" in r)
                  + "."]
    lines += ["", "## Survivors", ""]
    for r in rows:
        for s in r["survivors"]:
            lines += [f"### `{r['module']}`:{s['line']} ({s['operator']})", "", "```diff", s["diff"].strip(), "```", ""]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", action="append", choices=[t.name for t in TARGETS], help="repeatable; default: all")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per mutant's test run")
    parser.add_argument("--jobs", type=int, default=2, help="targets run at once (each in its own copy)")
    parser.add_argument("--out", default=str(ROOT / "reports" / "mutation"))
    parser.add_argument("--recheck", metavar="MUTATION_JSON",
                        help="re-run only the survivors recorded in an earlier mutation.json (of --only targets)")
    args = parser.parse_args()
    from importlib.metadata import version

    import cosmic_ray  # noqa: F401  (fail here, clearly, when the tool is not installed)

    chosen = [t for t in TARGETS if not args.only or t.name in args.only]
    meta = {"date": _dt.date.today().isoformat(), "tool_version": version("cosmic-ray"),
            "machine": f"{os.cpu_count()} cores (shared: times are loaded-machine times)",
            "command": " ".join(["benchmarks/mutation.py", *sys.argv[1:]])}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.recheck:
        earlier = json.loads(Path(args.recheck).read_text())
        rows = recheck([r for r in earlier["rows"] if not args.only or r["target"] in args.only], args.timeout)
        meta = {**earlier["meta"], "recheck": {"date": meta["date"], "command": meta["command"]}}
        (out / "mutation.md").write_text(render(rows, meta))
        (out / "mutation.json").write_text(json.dumps({"schema": "pcgkit.mutation/2", "meta": meta, "rows": rows},
                                                      indent=2) + "\n")
        print(render(rows, meta))
        return 0
    rows = []
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        # written after every target: a run stopped part-way still leaves the targets it finished
        for row in as_completed([pool.submit(_run_target, t, args.timeout) for t in chosen]):
            rows.append(row.result())
            rows.sort(key=lambda r: [t.name for t in chosen].index(r["target"]))
            (out / "mutation.md").write_text(render(rows, meta))
            (out / "mutation.json").write_text(json.dumps({"schema": "pcgkit.mutation/2", "meta": meta,
                                                           "rows": rows}, indent=2) + "\n")
    print(render(rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
