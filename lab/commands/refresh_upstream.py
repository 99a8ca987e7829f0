"""`bin/pcgkit lab refresh-upstream [--replay DIR]`: re-read every issue/PR state the advice cites from GitHub's API
(HTTPS; GITHUB_TOKEN when set) into fixtures/upstream_reads.json, dated today."""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
from pathlib import Path

from pcgkit import resources
from pcgkit.util import atomic

TODAY = _dt.date.today


def reads_file(reads, quotes, generated: str, how: str) -> dict:
    """The reads file's JSON (pcgkit.upstream-reads/1). Pure."""
    import dataclasses

    from pcgkit.advice.load import READS_SCHEMA

    return {"schema": READS_SCHEMA, "generated": generated, "generated_by": how,
            "reads": [{k: v for k, v in dataclasses.asdict(r).items() if v not in ("", None)} for r in reads],
            "quotes": [dataclasses.asdict(q) for q in quotes]}


def _refresh_upstream(args: argparse.Namespace) -> int:
    from lab import github
    from pcgkit.advice.load import READS_FILE, parse_reads

    source = Path(args.reads) if args.reads else resources.fixture(READS_FILE)
    reads, quotes = parse_reads(atomic.read_json_object(source, "reads file"), str(source))
    fetch = github.replay_fetch(Path(args.replay)) if args.replay else github.live_fetch
    today = args.today or TODAY().isoformat()
    fresh = github.refresh(reads, fetch, today)
    how = f"bin/pcgkit lab refresh-upstream ({'replayed from ' + args.replay if args.replay else 'GitHub REST API'})"
    target = Path(args.out) if args.out else source
    atomic.write_json(target, reads_file(fresh, quotes, today, how), indent=1)
    changed = [f"{new.ref}: {old.state} -> {new.state}" for old, new in zip(reads, fresh) if old.state != new.state]
    print(f"bin/pcgkit lab refresh-upstream: {len(fresh)} reads written to {target}" + (f"; changed: {', '.join(changed)}" if changed else ""),
          file=sys.stderr)
    return 0


def register(subparsers) -> None:
    up = subparsers.add_parser("refresh-upstream", help="re-read issue/PR states from GitHub's API into the dated reads file",
                        description="Re-read every issue and PR state from GitHub's REST API into fixtures/upstream_reads.json, dated today.",
                        epilog="examples:\n  %(prog)s\n  %(prog)s --replay tests/data/github --out /tmp/reads.json")
    up.add_argument("--replay", help="a folder of recorded API responses instead of the network (tests)")
    up.add_argument("--reads", help="the reads file to refresh (default fixtures/upstream_reads.json)")
    up.add_argument("--out", help="write here instead of over the reads file")
    up.add_argument("--today", help=argparse.SUPPRESS)
    up.set_defaults(func=_refresh_upstream)
