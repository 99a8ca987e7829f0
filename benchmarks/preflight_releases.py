"""The docs table of `pcgkit preflight` over the matrix's SGLang releases (issue 30's evidence).

For each release (default: every release in fixtures/sglang_launch_validation.json, the matrix range's parser
reads; or the ones named), in that release's own environment (`pcgkit preflight --sglang X`, built with uv on
first use), simulated SM120, three launches of the kit's config-only checkpoint (no weights):
  nvfp4-on   ModelOpt NVFP4 + `--quantization modelopt_fp4` + the release's own switch that turns piecewise on
             (read from its parser: nothing where it is on by default)
  nvfp4-off  the same with piecewise off as the release spells it
  bf16-on    a bf16 checkpoint with piecewise on
Writes each answer's JSON to OUT/ and rewrites the table between the `generated:preflight-table` markers of
docs/preflight.md. A release that cannot be built or answered is a row that says so, never left out.

    PYTHONPATH=. .venv/bin/python benchmarks/preflight_releases.py --out reports/samples/preflight-2026-12-01 [0.5.8 ...]
When only the advice model's evidence changed (a new cost measurement, new verdicts), the probes need not run again:
    PYTHONPATH=. .venv/bin/python benchmarks/preflight_releases.py --out reports/samples/preflight-2026-12-01 --readvise 2026-12-01
re-derives each recorded answer from its recorded probe (the functions the command calls) and re-renders the table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lab.sglang_facts import validated_flags
from pcgkit.e2e import checkpoint as ck

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "preflight.md"
MARK = "generated:preflight-table"


def write_checkpoints(folder: Path) -> dict[str, Path]:
    out = {}
    for name, quantized in (("nvfp4", True), ("bf16", False)):
        path = folder / name
        path.mkdir(parents=True, exist_ok=True)
        (path / "config.json").write_text(json.dumps(ck.model_config(ck.TinyLlamaShape(), 1, 2, quantized=quantized)))
        if quantized:
            (path / "hf_quant_config.json").write_text(json.dumps(ck.hf_quant_config()))
        out[name] = path
    return out


def launches(flags, ckpts: dict[str, Path]) -> dict[str, list[str]]:
    on = list(flags.enable_argv)
    off = flags.disable.split("=") if flags.disable and "=" in flags.disable else ([flags.disable] if flags.disable else [])
    nvfp4 = ["--model-path", str(ckpts["nvfp4"]), "--quantization", "modelopt_fp4"]
    return {"nvfp4-on": nvfp4 + on, "nvfp4-off": nvfp4 + off, "bf16-on": ["--model-path", str(ckpts["bf16"])] + on}


def preflight(release: str, launch: list[str]) -> tuple[int, dict | str, float]:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pcgkit.cli", "preflight", "--json", "--arch", "sm120",
                           "--sglang", release, "--", *launch], capture_output=True, text=True, timeout=3600)
    took = time.monotonic() - start
    try:
        return done.returncode, json.loads(done.stdout), took
    except ValueError:
        return done.returncode, (done.stderr.strip().splitlines() or ["no output"])[-1], took


def machine_paths_out(text: str) -> str:
    """The checkout, the interpreter's stdlib and the home cache as stable names: committed data stays diffable."""
    text = text.replace(str(ROOT) + "/", "")
    text = re.sub(r"/[^\s\"']*/lib/python3\.\d+/(?!site-packages)", "<stdlib>/", text)
    return text.replace(str(Path.home()) + "/", "~/")


def cell(answer: dict | str | None, asked_on: bool = False) -> str:
    """One table cell. In an "on" column an `ok` whose probe found piecewise capture off says so: the release could not
    do what the column asks (0.5.22 has no torch.compile piecewise backend), so it is no "ok with piecewise on"."""
    if answer is None:
        return "not run"
    if isinstance(answer, str):
        return f"error: {answer[:80]}"
    text = answer["answer"] + (f" ({answer['mode']})" if answer.get("mode") else "")
    piecewise = (answer.get("probe") or {}).get("piecewise") or {}
    if asked_on and answer["answer"] == "ok" and piecewise.get("on") is False:
        text = f"piecewise off: {piecewise.get('why') or 'not on for this launch'}"
    return text.replace("|", "\\|")


def recorded_rows(out: Path) -> list[tuple[str, dict]]:
    """Every answer recorded in OUT (this run's and earlier runs'), by release in version order."""
    from packaging.version import Version

    by_release: dict[str, dict] = {}
    for path in out.glob("sglang-*.json"):
        record = json.loads(path.read_text())
        by_release.setdefault(record["release"], {})[record["launch_name"]] = record["answer"]
    return sorted(by_release.items(), key=lambda item: Version(item[0]))


def write_table(out: Path, measured_on: str = "") -> None:
    rows = recorded_rows(out)
    today = dt.date.today().isoformat()
    where = out.relative_to(ROOT) if out.is_absolute() and out.is_relative_to(ROOT) else out
    table = ["| SGLang | NVFP4, piecewise on | NVFP4, piecewise off | bf16, piecewise on |", "|---|---|---|---|"]
    table += [f"| {r} | {cell(a.get('nvfp4-on'), True)} | {cell(a.get('nvfp4-off'))} | {cell(a.get('bf16-on'), True)} |"
              for r, a in rows]
    table.append(f"\nMeasured {measured_on or today} on a CPU machine, SM120 simulated (labelled in every answer), by "
                 f"`benchmarks/preflight_releases.py`; each answer's JSON is in `{where}/`. Releases of the range "
                 "not listed were not run.")
    text = DOC.read_text()
    block = f"<!-- {MARK} -->\n" + "\n".join(table) + f"\n<!-- /{MARK} -->"
    DOC.write_text(re.sub(rf"<!-- {MARK} -->.*?<!-- /{MARK} -->", lambda m: block, text, flags=re.S))


def readvise(out: Path) -> int:
    """Re-derive every recorded answer from its recorded probe with this checkout's code, as the command does
    (`decide`, then the measured call path and the advice: pure over the probe and the kit's evidence), without
    running any probe again. Returns how many answers changed."""
    from pcgkit.commands.preflight import advice_for, failure_modes, with_measured_call_path
    from pcgkit.preflight.answer import decide

    changed = 0
    for path in sorted(out.glob("sglang-*.json")):
        record = json.loads(path.read_text())
        answer = record["answer"]
        if not isinstance(answer, dict):
            continue
        result = with_measured_call_path(decide(answer["probe"], failure_modes()))
        fresh = {**answer, "answer": result.answer.value, "reason": result.reason, "mode": result.mode,
                 "advice": advice_for(result)}
        if fresh != answer:
            record["answer"] = fresh
            path.write_text(json.dumps(record, indent=1) + "\n")
            changed += 1
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--readvise", metavar="MEASURED_ON",
                        help="run nothing: re-derive each recorded answer's advice from the current evidence and re-render "
                             "the table, keeping the date the answers were measured (e.g. 2026-12-01)")
    parser.add_argument("--only", action="append", choices=("nvfp4-on", "nvfp4-off", "bf16-on"),
                        help="run only these launches (repeatable); the others' cells say `not run`")
    parser.add_argument("releases", nargs="*")
    args = parser.parse_args(argv)
    if args.readvise:
        changed = readvise(args.out)
        write_table(args.out, args.readvise)
        print(f"{changed} recorded answers re-advised; table re-rendered", flush=True)
        return 0
    flags_by_release = {f.sglang: f for f in validated_flags()}
    releases = args.releases or list(flags_by_release)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        ckpts = write_checkpoints(Path(tmp))
        for release in releases:
            for name, launch in launches(flags_by_release[release], ckpts).items():
                if args.only and name not in args.only:
                    continue
                status, answer, took = preflight(release, launch)
                record = {"release": release, "launch_name": name, "launch": launch, "exit": status,
                          "seconds": round(took, 1), "answer": answer}
                (args.out / f"sglang-{release}-{name}.json").write_text(
                    machine_paths_out(json.dumps(record, indent=1).replace(tmp, "CHECKPOINTS")) + "\n")
                print(f"{release:12} {name:10} exit {status:3} {cell(answer)} ({took:.0f} s)", flush=True)
            write_table(args.out)  # after each release: a stopped run keeps what it measured
    return 0


if __name__ == "__main__":
    sys.exit(main())
