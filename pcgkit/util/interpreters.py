"""Find a CPython interpreter of a given minor version without downloading one.

Stdlib only: the bootstrap script runs this with the machine's python3 before any venv exists.
uv would download a managed Python when none is found; machines here cannot reach GitHub, so we
look in the usual places first (PATH, pyenv, /usr) and say exactly what to install otherwise.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys


def _reports(path: str, version: str) -> bool:
    try:
        out = subprocess.run(
            [path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True, text=True, timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and out.stdout.strip() == version


def candidates(version: str) -> list[str]:
    pyenv_root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = [os.environ.get("PCGKIT_PYTHON"), shutil.which(f"python{version}")]
    found += sorted(glob.glob(f"{pyenv_root}/versions/{version}.*/bin/python{version}"), reverse=True)
    found += [f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    return [path for path in found if path]


def find_python(version: str) -> str | None:
    for path in candidates(version):
        if os.path.exists(path) and _reports(path, version):
            return path
    return None


def main(argv: list[str]) -> int:
    version = argv[1] if len(argv) > 1 else "3.12"
    path = find_python(version)
    if path is None:
        print(
            f"pcgkit: no Python {version} found (looked at $PCGKIT_PYTHON, PATH, pyenv, /usr). "
            f"Install it (apt-get install python{version}, pyenv install {version}, or uv python install {version}) "
            "or set PCGKIT_PYTHON to its path.",
            file=sys.stderr,
        )
        return 3
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
