"""`pcgkit cache`: the kit's folders found where each stage puts them, sized as du counts them, removed by name."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pcgkit import cli, resources
from pcgkit.commands.cache import chosen, find_entries
from pcgkit.errors import UsageError
from pcgkit.util.diskuse import human, usage
from pcgkit.util.envlock import OWNED_MARK


def _layout(tmp_path: Path) -> tuple[tuple[Path, Path], Path, Path]:
    checkout, cache = tmp_path / "checkout", tmp_path / "cache"
    for folder in (checkout / ".venv" / "bin", checkout / ".pcgkit" / "envs" / "seed-abc", checkout / ".pcgkit" / "flashinfer-jit",
                   cache / "preflight-envs" / "sglang-0.5.12-0123", cache / "docker"):
        folder.mkdir(parents=True)
        (folder.parent if folder.name == "bin" else folder).joinpath(OWNED_MARK).write_text("")  # as the kit stamps them
    (cache / "theirs").mkdir()  # no stamp: the user's, never listed
    (checkout / ".venv" / "bin" / "python").write_bytes(b"x" * 10000)
    return (checkout / ".venv", checkout / ".venv-light"), checkout / ".pcgkit" / "envs", cache


def test_find_entries_names_each_kit_folder_that_exists(tmp_path):
    """Reference env, a cell, the JIT cache, a preflight env and the cache's docker folder; the absent light env and
    the cache's unstamped folder are not listed."""
    bootstrap, envs, cache = _layout(tmp_path)
    names = [e.name for e in find_entries(bootstrap, envs, cache)]
    assert names == ["reference", "cell:seed-abc", "flashinfer-jit", "preflight:sglang-0.5.12-0123", "cache:docker"]


def test_usage_counts_a_hardlinked_file_once_and_reports_it_shared(tmp_path):
    """Two links to one 64 KiB file are 64 KiB, all of it shared; a missing folder is zero."""
    (tmp_path / "a").write_bytes(os.urandom(65536))
    os.link(tmp_path / "a", tmp_path / "b")
    got = usage(tmp_path)
    assert 65536 <= got.bytes < 2 * 65536 and got.shared >= 65536 and got.files == 1
    assert usage(tmp_path / "absent").bytes == 0
    assert human(1536) == "1.5 KiB" and human(3 * 2**30) == "3.0 GiB"


def test_chosen_refuses_unknown_names_and_ambiguous_requests(tmp_path):
    """An unknown name lists what exists; names together with --all, or neither, is a usage error."""
    entries = find_entries(*_layout(tmp_path))
    with pytest.raises(UsageError, match="no kit folder named nope .*there are: reference"):
        chosen(entries, ["nope"], False)
    for names, everything in (([], False), (["reference"], True)):
        with pytest.raises(UsageError):
            chosen(entries, names, everything)
    assert [e.name for e in chosen(entries, ["cache:docker", "cache:docker"], False)] == ["cache:docker"]


def test_cache_command_lists_as_json_and_removes_by_name(tmp_path, monkeypatch, capsys):
    """`cache --json` sizes every folder; `cache remove NAME` deletes that one folder and keeps the rest."""
    bootstrap, envs, cache = _layout(tmp_path)
    monkeypatch.setattr(resources, "bootstrap_envs", lambda: bootstrap)
    monkeypatch.setattr(resources, "default_envs_root", lambda: envs)
    monkeypatch.setenv(resources.CACHE_VAR, str(cache))
    assert cli.main(["cache", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    sizes = {e["name"]: e["bytes"] for e in doc["entries"]}
    assert doc["schema"] == "pcgkit.cache/1" and sizes["reference"] >= 10000
    assert cli.main(["cache", "remove", "preflight:sglang-0.5.12-0123"]) == 0
    assert not (cache / "preflight-envs" / "sglang-0.5.12-0123").exists() and (cache / "docker").is_dir()
    assert "removed preflight:sglang-0.5.12-0123" in capsys.readouterr().out
    assert cli.main(["cache", "remove", "gone"]) == 2
