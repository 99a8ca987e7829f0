"""`bin/pcgkit lab read-flashinfer [--cache DIR]`: download every FlashInfer release from the oldest an SGLang release
in range pins, and record where each defines fp4_quantize (the file its error strings name) in
fixtures/flashinfer_releases.json."""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import tempfile
from pathlib import Path

import tomllib

from pcgkit import resources
from pcgkit.errors import EnvironmentSetupError, ToolMissingError
from pcgkit.util import atomic

TODAY = _dt.date.today


def _flashinfer_in_range() -> list[str]:
    """Every final FlashInfer release from the oldest any SGLang release in range pins (fixtures/sglang_requires.toml's
    known versions), oldest first: the releases whose error strings a user of the matrix range can paste."""
    from pcgkit.util.ranges import version_key

    data = tomllib.loads(resources.fixture("sglang_requires.toml").read_text())
    pinned = [req.split("==", 1)[1] for r in data.get("release", ()) if r.get("piecewise_cuda_graph")
              for req in r.get("requires", ()) if req.startswith(("flashinfer_python", "flashinfer-python")) and "==" in req]
    oldest = min((version_key(v) for v in pinned), default=version_key("0"))
    known = data.get("known_versions", {}).get("flashinfer-python", [])
    return [v for v in known if version_key(v) >= oldest and not version_key(v).is_prerelease]


def _read_flashinfer(args: argparse.Namespace) -> int:
    import importlib.util
    import shutil

    import lab.flashinfer_releases as fi
    from lab.sglang_releases import pip_command, pip_failure
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
                not_read[version] = f"no wheel downloaded: {pip_failure(done.output_tail, done.describe_failure())}"[:300]
                continue
        elif not wheels:
            raise ToolMissingError("read-flashinfer: no pip to download wheels with (none in this venv, none on PATH)")
        read.append(fi.read_wheel(wheels[-1], version, today))
    if not read and not_read:  # nothing downloaded at all: the machine's (network, index), exit 4, pip's reason
        raise EnvironmentSetupError(f"read-flashinfer: no release read; {next(iter(not_read.items()))[0]}: "
                                    f"{next(iter(not_read.values()))}")
    target = Path(args.out) if args.out else resources.fixture(fi.TABLE_FILE)
    atomic.write_json(target, fi.table_dict(read, today, "bin/pcgkit lab read-flashinfer", not_read), indent=1)
    print(f"bin/pcgkit lab read-flashinfer: {len(read)} FlashInfer releases read into {target}"
          + (f"; not read: {', '.join(not_read)}" if not_read else ""), file=sys.stderr)
    return 0


def register(subparsers) -> None:
    flashinfer = subparsers.add_parser("read-flashinfer", help="read every FlashInfer release in range from its own wheel",
                                description="Read where each FlashInfer release defines fp4_quantize (the file its "
                                            "error strings name) from its own wheel into fixtures/flashinfer_releases.json.",
                                epilog="examples:\n  %(prog)s --cache /tmp/flashinfer-wheels\n  %(prog)s --release 0.6.7 --out /tmp/t.json")
    flashinfer.add_argument("--cache", help="where wheels are downloaded and kept (default: the temp folder)")
    flashinfer.add_argument("--release", action="append", help="only this release (repeatable)")
    flashinfer.add_argument("--out", help="write here instead of fixtures/flashinfer_releases.json")
    flashinfer.add_argument("--today", help=argparse.SUPPRESS)
    flashinfer.set_defaults(func=_read_flashinfer)
