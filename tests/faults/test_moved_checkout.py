"""bin/pcgkit notices a moved checkout: the environment whose scripts name the old path is rebuilt, with a line."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from .helpers import REPO_ROOT, second_user, shared_temp

# python3 as bin/pcgkit calls it: `-m uv ...` stood in (records the call, builds a tiny environment whose
# pcgkit prints "rebuilt"), anything else (pcgkit/util/interpreters.py) the real interpreter.
STUB = f"""#!/bin/sh
if [ "$1" = "-m" ] && [ "$2" = "uv" ]; then
  echo "uv $*" >> "$STUB_LOG"
  if [ "$3" = "venv" ]; then
    for last; do :; done
    mkdir -p "$last/bin"
    printf '#!/bin/sh\\necho rebuilt "$@"\\n' > "$last/bin/pcgkit"
    chmod +x "$last/bin/pcgkit"
  fi
  exit 0
fi
exec {sys.executable} "$@"
"""


def _checkout(where: Path) -> Path:
    """A checkout with just what the light bootstrap reads, and a light environment built for ANOTHER path."""
    for rel in ("bin/pcgkit", "pyproject.toml", "fixtures/reference/python-version", "pcgkit/util/interpreters.py"):
        (where / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / rel, where / rel)
    light = where / ".venv-light"
    (light / "bin").mkdir(parents=True)
    stamp = hashlib.sha256((where / "pyproject.toml").read_bytes() + b"extras: ci\n").hexdigest()[:16]
    (light / ".pcgkit-stamp").write_text(stamp + "\n")  # up to date: only the move is wrong
    (light / "bin" / "pcgkit").write_text("#!/old/checkout/.venv-light/bin/python\nprint('old')\n")
    (light / "bin" / "pcgkit").chmod(0o755)
    return where


def test_a_moved_checkout_rebuilds_its_light_environment(tmp_path):
    """`bin/pcgkit --version` in a moved checkout: says it moved, rebuilds, runs (was exit 127, no hint)."""
    root = _checkout(tmp_path / "moved")
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    (stubs / "python3").write_text(STUB)
    (stubs / "python3").chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}", "STUB_LOG": str(tmp_path / "uv.log")}
    env.pop("PCGKIT_LIGHT_VENV", None)
    done = subprocess.run([str(root / "bin" / "pcgkit"), "--version"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "moved" in done.stderr and "rebuilding" in done.stderr
    assert done.stdout.strip() == "rebuilt --version"
    assert "uv venv" in (tmp_path / "uv.log").read_text()


def test_an_unmoved_checkout_is_not_rebuilt(tmp_path):
    """The same checkout reached through a symlinked folder has not moved: nothing is rebuilt."""
    root = _checkout(tmp_path / "here")
    light = root / ".venv-light"
    (light / "bin" / "python").symlink_to(sys.executable)
    (light / "bin" / "pcgkit").write_text(f"#!{light}/bin/python\nprint('same')\n")
    os.symlink(root, tmp_path / "link")
    done = subprocess.run([str(tmp_path / "link" / "bin" / "pcgkit"), "--version"], capture_output=True, text=True,
                          timeout=60, env={k: v for k, v in os.environ.items() if k != "PCGKIT_LIGHT_VENV"})
    assert "moved" not in done.stderr and done.stdout.strip() == "same", done.stderr


def test_another_user_on_a_root_owned_checkout_gets_one_line_and_nothing_deleted():
    """A root-owned checkout whose light environment runs an interpreter in a folder only root can enter: another
    user is told in one line that the checkout is not theirs to build in (exit 4), and the environment is left
    whole (was: "this checkout moved", `rm -rf` of .venv-light, 1,028 permission errors)."""
    user, python = second_user()
    where = shared_temp("pcgkit-rootowned-")
    try:
        private = where / "private"  # like /root/.pyenv: the interpreter root built the environment with
        private.mkdir(mode=0o700)
        (private / "python").symlink_to(python)
        root = _checkout(where / "checkout")
        light = root / ".venv-light"
        (light / "bin" / "pcgkit").write_text(f"#!{private}/python\nprint('root')\n")
        for n in range(20):
            (light / "lib" / f"f{n}").parent.mkdir(exist_ok=True)
            (light / "lib" / f"f{n}").write_text("x")
        before = sorted(str(p.relative_to(light)) for p in light.rglob("*"))
        env = {k: v for k, v in os.environ.items() if k != "PCGKIT_LIGHT_VENV"}
        done = subprocess.run(["runuser", "-u", user, "--", str(root / "bin" / "pcgkit"), "--version"], env=env,
                              capture_output=True, text=True, timeout=60, cwd="/")
        assert done.returncode == 4, done.stderr
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("pcgkit: error:") and "not writable by you" in lines[0], lines
        assert "this checkout moved" not in lines[0] and "Permission denied" not in done.stderr
        assert sorted(str(p.relative_to(light)) for p in light.rglob("*")) == before
    finally:
        shutil.rmtree(where)
