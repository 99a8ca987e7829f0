"""Mutation testing of the honesty-critical core, on demand (not in CI): how many mutants do our tests kill?

Tool: cosmic-ray (PyPI; works offline once installed, runs any test command per mutant, mutates
files in place -- so this script works on a throwaway copy of the checkout, never the tree you
edit). Each target module is paired with the fast test files that pin it: each mutant runs only
those (the machine has 2 shared cores). Install the tool once into any venv that also sees the
kit's dependencies, e.g.:

    uv venv /tmp/mut --python .venv/bin/python
    echo "$PWD/.venv/lib/python3.12/site-packages" > /tmp/mut/lib/python3.12/site-packages/_kit.pth
    VIRTUAL_ENV=/tmp/mut uv pip install cosmic-ray==8.7.0
    /tmp/mut/bin/python benchmarks/mutation.py [--only archpaths --only hardware] [--timeout 60]

Writes reports/mutation/mutation.md (table, figure, every survivor with its diff) and mutation.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTEST = "python -m pytest -x -q -p no:cacheprovider -p no:randomly"


@dataclasses.dataclass(frozen=True)
class Target:
    name: str
    module: str
    tests: str  # the fast pytest selection that pins this module


TARGETS: tuple[Target, ...] = (
    Target("signature", "pcgkit/harness/signature.py", "tests/test_signature.py"),
    Target("modes", "pcgkit/verdicts/modes.py", "tests/test_modes.py"),
    Target("fixmodes", "pcgkit/verdicts/fixmodes.py", "tests/test_fix_modes.py"),
    Target("expectations", "pcgkit/verdicts/expectations.py", "tests/test_expectations.py"),
    Target("hardware", "pcgkit/harness/hardware.py", "tests/test_hardware.py"),
    Target("archpaths", "pcgkit/harness/archpaths.py",
           "tests/test_simulation_path.py -k 'judge or rows or capability or malformed or real_device'"),
    Target("pathevidence", "pcgkit/harness/pathevidence.py", "tests/test_simulation_path.py"),
    Target("simulate", "pcgkit/harness/simulate.py", "tests/test_simulation_path.py"),
    Target("custom_op", "pcgkit/fp4/custom_op.py", "tests/test_custom_op_fake.py"),
    Target("redact", "pcgkit/util/redact.py", "tests/test_proc.py"),
    Target("plugin", "pcgkit/harness/plugin.py", "tests/test_plugin.py"),
)


def _copy_checkout(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.splitlines()
    for rel in files:
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("reports/", ".pcgkit/")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _run_target(target: Target, tree: Path, timeout: float) -> dict:
    from cosmic_ray.work_db import WorkDB, use_db

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
    env = {"PYTHONPATH": str(tree), "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
           "HOME": str(tree)}
    start = time.monotonic()
    for argv in (["cosmic-ray", "init", str(config), str(session)],
                 ["cosmic-ray", "exec", str(config), str(session)]):
        subprocess.run([str(Path(sys.executable).parent / argv[0]), *argv[1:]], cwd=tree, env=env, check=True)
    killed = survived = incompetent = 0
    survivors = []
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
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
    return {"target": target.name, "module": target.module, "tests": target.tests, "killed": killed,
            "survived": survived, "incompetent": incompetent, "wall_s": round(time.monotonic() - start, 1),
            "survivors": sorted(survivors, key=lambda s: s["line"])}


def render(rows: list[dict], meta: dict) -> str:
    killed = sum(r["killed"] for r in rows)
    scored = killed + sum(r["survived"] for r in rows)
    score = 100.0 * killed / scored if scored else 0.0
    lines = [f"# Mutation testing of the honesty-critical core ({meta['date']})", "",
             f"Tool: cosmic-ray {meta['tool_version']}; machine: {meta['machine']}.", "",
             f"**{killed} of {scored} mutants killed ({score:.1f}%)**; incompetent mutants (do not import/run) "
             "are not counted.", "",
             "| module | tests run per mutant | killed | survived | incompetent | wall |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| `{r['module']}` | `{r['tests']}` | {r['killed']} | {r['survived']} | {r['incompetent']} "
                     f"| {r['wall_s']} s |")
    lines += ["", "## Survivors", ""]
    for r in rows:
        for s in r["survivors"]:
            lines += [f"### `{r['module']}`:{s['line']} ({s['operator']})", "", "```diff", s["diff"].strip(), "```", ""]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", choices=[t.name for t in TARGETS], help="repeatable; default: all")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per mutant's test run")
    parser.add_argument("--out", default=str(ROOT / "reports" / "mutation"))
    args = parser.parse_args()
    from importlib.metadata import version

    import cosmic_ray  # noqa: F401  (fail here, clearly, when the tool is not installed)

    chosen = [t for t in TARGETS if not args.only or t.name in args.only]
    with tempfile.TemporaryDirectory(prefix="pcgkit-mutation-") as tmp:
        tree = Path(tmp)
        _copy_checkout(tree)
        rows = [_run_target(t, tree, args.timeout) for t in chosen]
    import os

    meta = {"date": _dt.date.today().isoformat(), "tool_version": version("cosmic-ray"),
            "machine": f"{os.cpu_count()} cores (shared: times are loaded-machine times)"}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "mutation.md").write_text(render(rows, meta))
    (out / "mutation.json").write_text(json.dumps({"schema": "pcgkit.mutation/1", "meta": meta, "rows": rows},
                                                  indent=2) + "\n")
    print(render(rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
