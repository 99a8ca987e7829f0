"""The kit deletes only what it made and honours its own locks: `cache remove` under a PCGKIT_CACHE that is the
user's $HOME, an environment in use or being built; every lock opened without following links or blocking."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pcgkit import resources
from pcgkit.errors import EnvironmentSetupError
from pcgkit.util.envlock import build_lock

from .helpers import REPO_ROOT, assert_one_line_error, kit_env, run_main, second_user, shared_temp


def _home_as_cache(tmp_path: Path, monkeypatch) -> Path:
    """PCGKIT_CACHE set to a user's home: projects and a model hub's downloads beside one kit-built environment."""
    home = tmp_path / "home"
    (home / "projects" / "thesis").mkdir(parents=True)
    (home / "projects" / "thesis" / "chapter1.tex").write_text("years of work\n")
    (home / "huggingface" / "hub").mkdir(parents=True)
    (home / "huggingface" / "hub" / "model.safetensors").write_bytes(b"w" * 1000)
    monkeypatch.setenv(resources.CACHE_VAR, str(home))
    monkeypatch.setattr(resources, "bootstrap_envs", lambda: ())
    monkeypatch.setattr(resources, "default_envs_root", lambda: tmp_path / "checkout" / ".pcgkit" / "envs")
    return home


def test_cache_remove_all_keeps_the_users_folders_in_a_home_set_as_the_cache(tmp_path, monkeypatch, capsys):
    """PCGKIT_CACHE=$HOME: `cache remove --all` removes the kit's preflight environment, never ~/projects or
    ~/huggingface (it deleted both, exit 0); `cache` says the other folders are not the kit's."""
    home = _home_as_cache(tmp_path, monkeypatch)
    kit_env_dir = home / "preflight-envs" / "sglang-0.5.12-0123456789ab"
    with build_lock(kit_env_dir):  # as preflight builds one
        (kit_env_dir / "bin").mkdir(parents=True)
    status, out, _ = run_main(["cache"], capsys)
    assert status == 0 and "preflight:sglang-0.5.12-0123456789ab" in out
    assert "projects" not in out.split("was not made by the kit")[0] and "not the kit's" in out
    assert run_main(["cache", "remove", "--all"], capsys)[0] == 0
    assert (home / "projects" / "thesis" / "chapter1.tex").read_text() == "years of work\n"
    assert (home / "huggingface" / "hub" / "model.safetensors").is_file()
    assert not kit_env_dir.exists()


def test_cache_remove_refuses_a_folder_the_kit_did_not_make(tmp_path, monkeypatch, capsys):
    """`cache remove cache:huggingface` with PCGKIT_CACHE=$HOME is one usage line; the downloads stay (were deleted)."""
    home = _home_as_cache(tmp_path, monkeypatch)
    status, _, err = run_main(["cache", "remove", "cache:huggingface"], capsys)
    assert status == 2 and "cache:huggingface" in assert_one_line_error(err)
    assert (home / "huggingface" / "hub" / "model.safetensors").is_file()


def _holder(code: str) -> subprocess.Popen:
    """A second kit process that takes a lock the way the kit does and holds it until killed."""
    holder = subprocess.Popen([sys.executable, "-c", code], env=kit_env(), stdout=subprocess.PIPE, text=True,
                              cwd=REPO_ROOT)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


@pytest.mark.parametrize(("code", "said"), [
    ("from pcgkit.matrix.backends.venv import env_in_use as hold", "a matrix run is using it"),
    ("from pcgkit.util.envlock import build_lock as hold", "it is being built"),
])
def test_cache_remove_keeps_an_environment_in_use_or_being_built(tmp_path, monkeypatch, capsys, code, said):
    """A cell environment whose use lock a running matrix holds, or whose build lock a builder holds, is kept with
    a line naming the holder's pid (exit 4); the lock file is not unlinked (it was: a second builder got it too)."""
    envs = tmp_path / "checkout" / ".pcgkit" / "envs"
    _home_as_cache(tmp_path, monkeypatch)
    env_dir = envs / "seed-abc"
    with build_lock(env_dir):
        (env_dir / "bin").mkdir(parents=True)
    holder = _holder(f"{code}\nimport time; from pathlib import Path\n"
                     f"with hold(Path({str(env_dir)!r})):\n    print('held', flush=True); time.sleep(60)\n")
    try:
        locks = {p: p.stat().st_ino for p in env_dir.parent.iterdir() if p.name.startswith(".seed-abc.")}
        status, _, err = run_main(["cache", "remove", "cell:seed-abc"], capsys)
        assert status == 4 and said in err and f"pid {holder.pid}" in err
        assert (env_dir / "bin").is_dir()
        assert {p: p.stat().st_ino for p in locks} == locks
    finally:
        holder.kill()
        holder.wait()
    assert run_main(["cache", "remove", "cell:seed-abc"], capsys)[0] == 0 and not env_dir.exists()
    assert all(p.exists() for p in locks)  # never unlinked, even once free


@pytest.mark.parametrize("suffix", ["lock", "use"])
def test_a_planted_link_as_an_env_lock_is_refused_and_its_target_untouched(tmp_path, suffix):
    """`.NAME.lock` (the build lock) or `.NAME.use` (the matrix's use lock) -> ~/notes.txt: both go through the one
    opener, so the lock is one line about the link and the notes keep their bytes (they were emptied)."""
    from pcgkit.matrix.backends.venv import env_in_use

    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    env_dir = tmp_path / "envs" / "seed-abc"
    env_dir.parent.mkdir()
    (env_dir.parent / f".{env_dir.name}.{suffix}").symlink_to(notes)
    with pytest.raises(EnvironmentSetupError, match="symbolic link"):
        with {"lock": build_lock, "use": env_in_use}[suffix](env_dir):
            pass
    assert notes.read_text() == "my notes\n"


def test_a_fifo_as_the_build_lock_is_one_line_not_a_hang(tmp_path):
    """A FIFO at `.NAME.lock`: a fresh kit process says so within seconds (it hung forever opening it to write)."""
    env_dir = tmp_path / "envs" / "seed-abc"
    env_dir.parent.mkdir()
    os.mkfifo(env_dir.parent / f".{env_dir.name}.lock")
    code = ("from pathlib import Path\nfrom pcgkit.util.envlock import build_lock\n"
            f"with build_lock(Path({str(env_dir)!r})):\n    pass\n")
    try:
        done = subprocess.run([sys.executable, "-c", code], env=kit_env(), capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("opening a FIFO as the build lock hung")
    assert done.returncode != 0 and "named pipe" in done.stderr


def test_another_user_uses_a_complete_shared_environment():
    """An environment built by one user, in a folder another user may read but not write: the other user's build
    lock is taken (read-only) and the env is used (was PermissionError opening `.NAME.lock` for writing)."""
    shared = shared_temp("pcgkit-shared-")
    try:
        env_dir = shared / "envs" / "seed-abc"
        with build_lock(env_dir):
            env_dir.mkdir(exist_ok=True)
            (env_dir / ".complete").write_text("done\n")
        for folder in (env_dir.parent, env_dir):
            folder.chmod(0o755)
        code = ("from pathlib import Path\nfrom pcgkit.util.envlock import build_lock\n"
                f"with build_lock(Path({str(env_dir)!r})):\n    print('used', flush=True)\n")
        user, python = second_user()
        kit = shared / "kit"  # the other user imports the kit from a folder it can read: the checkout may sit in a
        shutil.copytree(REPO_ROOT / "pcgkit", kit / "pcgkit",  # private one (`mktemp -d` is 0700)
                        ignore=shutil.ignore_patterns("__pycache__"))
        for folder in (kit, *(p for p in kit.rglob("*") if p.is_dir())):
            folder.chmod(0o755)
        done = subprocess.run(["runuser", "-u", user, "--", python, "-c", code],
                              env=kit_env(PYTHONPATH=str(kit)), capture_output=True, text=True, timeout=60,
                              cwd="/")
        assert done.returncode == 0 and done.stdout.strip() == "used", done.stderr
    finally:
        shutil.rmtree(shared)
