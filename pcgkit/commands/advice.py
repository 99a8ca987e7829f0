"""`pcgkit advice`: what the kit tells a user for their versions, and the commands that refresh its sources.

- `advice show --sglang X [--flashinfer Y] [--torch Z] [--arch sm120] [--json]`: the statements, each with
  its sources and dates (the same answers triage, the README box, compat.md and the drafts print);
- `advice refresh-upstream [--replay DIR]`: re-read every issue/PR state from GitHub's API (HTTPS;
  GITHUB_TOKEN when set) into fixtures/upstream_reads.json, dated today;
- `advice read-flashinfer [--cache DIR]`: download every FlashInfer release from the oldest an SGLang release in
  range pins, and record where each defines fp4_quantize (fixtures/flashinfer_releases.json);
- `advice read-releases [--cache DIR]`: download every SGLang release wheel in the matrix range
  (`pip download --no-deps`, outside the checkout) and read each one's switch and FP4 op facts into
  fixtures/sglang_releases.json;
- `advice record-mode2 RESULTS`: keep the mode-2 case's two measured process states from a results file
  in fixtures/measurements/mode2-condition.json.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import tempfile
from pathlib import Path

import tomllib

from pcgkit import resources
from pcgkit.errors import UsageError
from pcgkit.util import atomic

TODAY = _dt.date.today


def _show(args: argparse.Namespace) -> int:
    from pcgkit.advice import Versions, advise, load_evidence

    versions = Versions(args.sglang, args.flashinfer, args.torch)
    if not versions.known():
        raise UsageError("advice show: give at least one of --sglang, --flashinfer, --torch")
    answer = advise(versions, args.arch, load_evidence())
    if args.json:
        sys.stdout.write(json.dumps(answer.to_dict(), indent=2) + "\n")
        return 0
    for statement in answer.statements():
        sim = " (simulated)" if statement.simulated else ""
        print(f"- [{statement.topic}] {statement.text}{sim}")
        for source in statement.sources:
            print(f"    source: {source.kind}: {source.cite()}")
    return 0


def reads_file(reads, quotes, generated: str, how: str) -> dict:
    """The reads file's JSON (pcgkit.upstream-reads/1). Pure."""
    import dataclasses

    from pcgkit.advice.load import READS_SCHEMA

    return {"schema": READS_SCHEMA, "generated": generated, "generated_by": how,
            "reads": [{k: v for k, v in dataclasses.asdict(r).items() if v not in ("", None)} for r in reads],
            "quotes": [dataclasses.asdict(q) for q in quotes]}


def _refresh_upstream(args: argparse.Namespace) -> int:
    from pcgkit.advice import github
    from pcgkit.advice.load import READS_FILE, parse_reads

    source = Path(args.reads) if args.reads else resources.fixture(READS_FILE)
    reads, quotes = parse_reads(atomic.read_json_object(source, "reads file"), str(source))
    fetch = github.replay_fetch(Path(args.replay)) if args.replay else github.live_fetch
    today = args.today or TODAY().isoformat()
    fresh = github.refresh(reads, fetch, today)
    how = f"bin/pcgkit advice refresh-upstream ({'replayed from ' + args.replay if args.replay else 'GitHub REST API'})"
    target = Path(args.out) if args.out else source
    atomic.write_json(target, reads_file(fresh, quotes, today, how), indent=1)
    changed = [f"{new.ref}: {old.state} -> {new.state}" for old, new in zip(reads, fresh) if old.state != new.state]
    print(f"pcgkit advice: {len(fresh)} reads written to {target}" + (f"; changed: {', '.join(changed)}" if changed else ""),
          file=sys.stderr)
    return 0


def _releases_in_range() -> list[str]:
    """The SGLang releases of the matrix range: every release whose wheel ships piecewise CUDA graphs (as
    `pcgkit matrix --refresh-pins` recorded them in fixtures/sglang_requires.toml)."""
    data = tomllib.loads(resources.fixture("sglang_requires.toml").read_text())
    return [r["version"] for r in data.get("release", ()) if r.get("piecewise_cuda_graph")]


def _read_releases(args: argparse.Namespace) -> int:
    import importlib.util
    import shutil

    from pcgkit.sglang import releases as rel
    from pcgkit.util import proc

    wanted = args.release or _releases_in_range()
    pip = rel.pip_command(sys.executable, importlib.util.find_spec("pip") is not None,
                          shutil.which("pip3") or shutil.which("pip"))
    cache = Path(args.cache or Path(tempfile.gettempdir()) / "pcgkit-sglang-wheels")
    today = args.today or TODAY().isoformat()
    facts = []
    for version in wanted:
        folder = atomic.ensure_dir(cache / version, "wheel cache folder")
        wheels = sorted(folder.glob("sglang-*.whl"))
        if not wheels:
            if pip is None:
                raise UsageError("read-releases: no pip to download wheels with (none in this venv, none on PATH)")
            done = proc.run(rel.download_argv(pip, version, folder), timeout=600)
            wheels = sorted(folder.glob("sglang-*.whl"))
            if not done.ok or not wheels:
                raise UsageError(f"sglang=={version}: no wheel downloaded ({done.describe_failure()})")
        facts.append(rel.read_wheel(wheels[-1], version, today))
    target = Path(args.out) if args.out else resources.fixture(rel.TABLE_FILE)
    atomic.write_json(target, rel.table_dict(facts, today, "bin/pcgkit advice read-releases"), indent=1)
    print(f"pcgkit advice: {len(facts)} SGLang releases read into {target}", file=sys.stderr)
    return 0


def _flashinfer_in_range() -> list[str]:
    """Every final FlashInfer release from the oldest any SGLang release in range pins (fixtures/sglang_requires.toml's
    known versions), oldest first: the releases whose error strings a user of the matrix range can paste."""
    from pcgkit.fp4.releases import version_key

    data = tomllib.loads(resources.fixture("sglang_requires.toml").read_text())
    pinned = [req.split("==", 1)[1] for r in data.get("release", ()) if r.get("piecewise_cuda_graph")
              for req in r.get("requires", ()) if req.startswith(("flashinfer_python", "flashinfer-python")) and "==" in req]
    oldest = min((version_key(v) for v in pinned), default=version_key("0"))
    known = data.get("known_versions", {}).get("flashinfer-python", [])
    return [v for v in known if version_key(v) >= oldest and not version_key(v).is_prerelease]


def _read_flashinfer(args: argparse.Namespace) -> int:
    import importlib.util
    import shutil

    from pcgkit.fp4 import releases as fi
    from pcgkit.sglang.releases import pip_command
    from pcgkit.util import proc

    wanted = args.release or _flashinfer_in_range()
    pip = pip_command(sys.executable, importlib.util.find_spec("pip") is not None,
                      shutil.which("pip3") or shutil.which("pip"))
    cache = Path(args.cache or Path(tempfile.gettempdir()) / "pcgkit-flashinfer-wheels")
    today = args.today or TODAY().isoformat()
    read, not_read = [], {}
    for version in wanted:
        folder = atomic.ensure_dir(cache / version, "wheel cache folder")
        wheels = sorted(folder.glob("flashinfer_python-*.whl"))
        if not wheels and pip is not None:
            done = proc.run(fi.download_argv(pip, version, folder), timeout=600)
            wheels = sorted(folder.glob("flashinfer_python-*.whl"))
            if not wheels:
                not_read[version] = f"no wheel downloaded ({done.describe_failure()})"[:200]
                continue
        elif not wheels:
            raise UsageError("read-flashinfer: no pip to download wheels with (none in this venv, none on PATH)")
        read.append(fi.read_wheel(wheels[-1], version, today))
    target = Path(args.out) if args.out else resources.fixture(fi.TABLE_FILE)
    atomic.write_json(target, fi.table_dict(read, today, "bin/pcgkit advice read-flashinfer", not_read), indent=1)
    print(f"pcgkit advice: {len(read)} FlashInfer releases read into {target}"
          + (f"; not read: {', '.join(not_read)}" if not_read else ""), file=sys.stderr)
    return 0


def _record_mode2(args: argparse.Namespace) -> int:
    from pcgkit.advice.load import MODE2_FILE, mode2_record

    results = atomic.read_json_object(Path(args.results), "results file")
    try:
        record = mode2_record(results, args.how or f"results file {Path(args.results).name}")
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    target = Path(args.out) if args.out else resources.fixtures_dir().parent / MODE2_FILE
    atomic.write_json(target, record, indent=1)
    print(f"pcgkit advice: mode 2 condition recorded in {target}", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    advice = subparsers.add_parser(
        "advice", help="what to tell a user for their versions; refresh its sources",
        description="What the kit tells a user for their versions, and the commands that refresh its sources.",
        epilog="examples:\n  %(prog)s show --sglang 0.5.10 --arch sm120\n  %(prog)s refresh-upstream\n"
               "  %(prog)s read-releases --cache /tmp/sglang-wheels")
    sub = advice.add_subparsers(dest="advice_command", required=True)
    show = sub.add_parser("show", help="the statements for these versions, each with its sources",
                          description="The advice model's statements for these versions, each with its sources and dates.",
                          epilog="examples:\n  %(prog)s --sglang 0.5.10 --arch sm120\n"
                                 "  %(prog)s --flashinfer 0.6.12 --arch sm_121 --json")
    show.add_argument("--sglang")
    show.add_argument("--flashinfer")
    show.add_argument("--torch")
    show.add_argument("--arch", help="GPU architecture, e.g. sm120, sm_121, 12.0, sm90 (default: answer per measured arch)")
    show.add_argument("--json", action="store_true", help="the answer as JSON (schema pcgkit.advice/1)")
    show.set_defaults(func=_show)
    up = sub.add_parser("refresh-upstream", help="re-read issue/PR states from GitHub's API into the dated reads file",
                        description="Re-read every issue and PR state from GitHub's REST API into fixtures/upstream_reads.json, dated today.",
                        epilog="examples:\n  %(prog)s\n  %(prog)s --replay tests/data/github --out /tmp/reads.json")
    up.add_argument("--replay", help="a folder of recorded API responses instead of the network (tests)")
    up.add_argument("--reads", help="the reads file to refresh (default fixtures/upstream_reads.json)")
    up.add_argument("--out", help="write here instead of over the reads file")
    up.add_argument("--today", help=argparse.SUPPRESS)
    up.set_defaults(func=_refresh_upstream)
    releases = sub.add_parser("read-releases", help="read every SGLang release in range from its own wheel",
                              description="Read every SGLang release in the matrix range from its own wheel into fixtures/sglang_releases.json.",
                              epilog="examples:\n  %(prog)s --cache /tmp/sglang-wheels\n  %(prog)s --release 0.5.14 --out /tmp/t.json")
    releases.add_argument("--cache", help="where wheels are downloaded and kept (default: the temp folder)")
    releases.add_argument("--release", action="append", help="only this release (repeatable)")
    releases.add_argument("--out", help="write here instead of fixtures/sglang_releases.json")
    releases.add_argument("--today", help=argparse.SUPPRESS)
    releases.set_defaults(func=_read_releases)
    flashinfer = sub.add_parser("read-flashinfer", help="read every FlashInfer release in range from its own wheel",
                                description="Read where each FlashInfer release defines fp4_quantize (the file its "
                                            "error strings name) from its own wheel into fixtures/flashinfer_releases.json.",
                                epilog="examples:\n  %(prog)s --cache /tmp/flashinfer-wheels\n  %(prog)s --release 0.6.7 --out /tmp/t.json")
    flashinfer.add_argument("--cache", help="where wheels are downloaded and kept (default: the temp folder)")
    flashinfer.add_argument("--release", action="append", help="only this release (repeatable)")
    flashinfer.add_argument("--out", help="write here instead of fixtures/flashinfer_releases.json")
    flashinfer.add_argument("--today", help=argparse.SUPPRESS)
    flashinfer.set_defaults(func=_read_flashinfer)
    mode2 = sub.add_parser("record-mode2", help="record the mode-2 case's two process states from a results file",
                           description="Record the mode-2 case's two measured process states (JIT spec registered or not) from a results file.",
                           epilog="example:\n  %(prog)s reports/results.json")
    mode2.add_argument("results", help="a results.json holding the mode2 case's result")
    mode2.add_argument("--how", help="the command that produced the results (recorded beside them)")
    mode2.add_argument("--out", help="write here instead of fixtures/measurements/mode2-condition.json")
    mode2.set_defaults(func=_record_mode2)
