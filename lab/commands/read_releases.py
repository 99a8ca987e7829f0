"""`bin/pcgkit lab read-releases [--cache DIR]`: download every SGLang release wheel in the matrix range
(`pip download --no-deps`, outside the checkout) and read each one's switch, FP4 op and runner facts (which runner
piecewise/prefill capture builds, what the breakable runner refuses: pcgkit.sglang.runners, with file:line) into
fixtures/sglang_releases.json."""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import tempfile
from pathlib import Path

import tomllib

from lab.commands import write_fixture
from pcgkit import resources
from pcgkit.errors import EnvironmentSetupError, ToolMissingError
from pcgkit.util import atomic

TODAY = _dt.date.today


def _releases_in_range() -> list[str]:
    """The SGLang releases of the matrix range: every release whose wheel ships piecewise CUDA graphs (as
    `bin/pcgkit lab pins` recorded them in fixtures/sglang_requires.toml)."""
    data = tomllib.loads(resources.fixture("sglang_requires.toml").read_text())
    return [r["version"] for r in data.get("release", ()) if r.get("piecewise_cuda_graph")]


def _read_releases(args: argparse.Namespace) -> int:
    import importlib.util
    import shutil

    import lab.sglang_releases as rel
    from pcgkit.sglang.releases import TABLE_FILE
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
                raise ToolMissingError("read-releases: no pip to download wheels with (none in this venv, none on PATH)")
            done = proc.run(rel.download_argv(pip, version, folder), timeout=600)
            wheels = sorted(folder.glob("sglang-*.whl"))
            if not done.ok or not wheels:  # the machine's (the network, the index), not the command line's: exit 4
                raise EnvironmentSetupError(f"sglang=={version}: no wheel downloaded: "
                                            f"{rel.pip_failure(done.output_tail, done.describe_failure())}")
        facts.append(rel.read_wheel(wheels[-1], version, today))
    write_fixture("bin/pcgkit lab read-releases", args.out, resources.fixture(TABLE_FILE),
                  rel.table_dict(facts, today, "bin/pcgkit lab read-releases"), f"{len(facts)} SGLang releases read into")
    return 0


def register(subparsers) -> None:
    releases = subparsers.add_parser("read-releases", help="read every SGLang release in range from its own wheel",
                              description="Read every SGLang release in the matrix range from its own wheel into fixtures/sglang_releases.json.",
                              epilog="examples:\n  %(prog)s --cache /tmp/sglang-wheels\n  %(prog)s --release 0.5.14 --out /tmp/t.json")
    releases.add_argument("--cache", help="where wheels are downloaded and kept (default: the temp folder)")
    releases.add_argument("--release", action="append", help="only this release (repeatable)")
    releases.add_argument("--out", help="write here instead of fixtures/sglang_releases.json")
    releases.add_argument("--today", help=argparse.SUPPRESS)
    releases.set_defaults(func=_read_releases)
