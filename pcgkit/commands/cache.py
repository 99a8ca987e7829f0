"""`pcgkit cache`: the kit's environments and caches on this machine, with their sizes; `cache remove` deletes them.

The folders: bin/pcgkit's .venv (~7 GB) and .venv-light (~20 MB), the matrix's cell environments, FlashInfer JIT
cache and bytecode (.pcgkit/), and ${PCGKIT_CACHE:-~/.cache/pcgkit} (`preflight --sglang`'s release environments,
the docker base image, act's built actions); sizes as `du` counts them (pcgkit.util.diskuse). Only folders with the
kit's stamp (pcgkit.util.envlock.OWNED_MARK) are listed or removed, so a `PCGKIT_CACHE=$HOME` never touches the
user's own; an environment in use (`.NAME.use`) or being built (`.NAME.lock`) is kept with a line naming the holder,
and lock files are never unlinked.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import shutil
import sys
from pathlib import Path

from pcgkit import resources
from pcgkit.errors import ExitCode, UsageError
from pcgkit.util import envlock
from pcgkit.util.diskuse import human, usage

PREFLIGHT_DIR = "preflight-envs"  # under the cache root (pcgkit.preflight.envs.cache_root)


@dataclasses.dataclass(frozen=True)
class Entry:
    name: str  # what `cache remove` takes
    what: str
    path: Path


def _children(folder: Path) -> list[Path]:
    """The kit-stamped folders in `folder` (a folder without the stamp is someone else's, never listed)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".") and envlock.is_owned(p))


def find_entries(bootstrap: tuple[Path, ...], envs_root: Path, cache_root: Path) -> list[Entry]:
    """Every kit-stamped folder that exists, one Entry each (nothing sized, nothing read but directory listings)."""
    found: list[Entry] = []
    for path, what in zip(bootstrap, ("bin/pcgkit's reference environment: torch, FlashInfer; `run`, `test`",
                                      "bin/pcgkit's light environment: the kit alone; triage, advice, help")):
        if envlock.is_owned(path):
            found.append(Entry("reference" if path.name == ".venv" else "light", what, path))
    found += [Entry(f"cell:{p.name}", "a matrix cell's environment", p) for p in _children(envs_root)]
    beside = (("flashinfer-jit", "FlashInfer kernels the matrix cells built (JIT cache)"),
              ("cell-bytecode", "the matrix cells' compiled Python bytecode"))  # pcgkit.matrix.backends.venv.BYTECODE_DIR
    found += [Entry(name, what, path) for name, what in beside if envlock.is_owned(path := envs_root.parent / name)]
    found += [Entry(f"preflight:{p.name}", "`preflight --sglang` release environment", p)
              for p in _children(cache_root / PREFLIGHT_DIR)]
    found += [Entry(f"cache:{p.name}", "the kit's cache", p) for p in _children(cache_root) if p.name != PREFLIGHT_DIR]
    return found


def _cache() -> Path:
    try:
        return resources.cache_dir()
    except ValueError as exc:  # a relative PCGKIT_CACHE
        raise UsageError(str(exc)) from None


def _entries() -> list[Entry]:
    return find_entries(resources.bootstrap_envs(), resources.default_envs_root(), _cache())


def _list(args: argparse.Namespace) -> int:
    rows = [(e, usage(e.path)) for e in _entries()]
    if args.json:
        doc = {"schema": "pcgkit.cache/1", "cache_root": str(_cache()),
               "entries": [{"name": e.name, "what": e.what, "path": str(e.path), "bytes": u.bytes,
                            "hardlinked_bytes": u.shared, "files": u.files} for e, u in rows]}
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
        return 0
    total = sum(u.bytes for _e, u in rows)
    shared = sum(u.shared for _e, u in rows)
    print(f"pcgkit cache: {len(rows)} folders, {human(total)} on disk as du counts them"
          + (f" ({human(shared)} of it in hardlinked files, shared with uv's cache: removing frees less)" if shared else ""))
    width = max((len(e.name) for e, _u in rows), default=0)
    for entry, use in rows:
        print(f"  {entry.name:<{width}}  {human(use.bytes):>10}  {entry.path}  ({entry.what})")
    if rows:
        print("remove with: pcgkit cache remove NAME [NAME ...], or --all")
    print(f"the kit's cache outside checkouts: {_cache()} (set {resources.CACHE_VAR} to move it)")
    note = foreign_note(_cache())
    if note:
        print(note)
    return 0


def foreign_note(cache_root: Path) -> str | None:
    """A line when the cache root holds folders the kit did not make (PCGKIT_CACHE=$HOME): they are never listed."""
    if not cache_root.is_dir() or envlock.is_owned(cache_root):
        return None
    others = [p.name for p in cache_root.iterdir() if p.is_dir() and not p.name.startswith(".")
              and not envlock.is_owned(p)]
    if not others:
        return None
    return (f"{cache_root} was not made by the kit: its {len(others)} other folder(s) ({', '.join(sorted(others)[:3])}"
            f"{', ...' if len(others) > 3 else ''}) are not the kit's and are never listed or removed")


def chosen(entries: list[Entry], names: list[str], everything: bool) -> list[Entry]:
    """The entries to remove (UsageError naming what exists for a name that matches none). Pure."""
    if everything == bool(names):
        raise UsageError("cache remove: name the folders (NAME ...) or pass --all, not both or neither")
    if everything:
        return entries
    by_name = {e.name: e for e in entries}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise UsageError(f"cache remove: no kit folder named {', '.join(unknown)} (there are: "
                         f"{', '.join(by_name) or 'none'}; `pcgkit cache` lists them; a folder the kit did not make is never removed)")
    return [by_name[n] for n in dict.fromkeys(names)]


def held_locks(path: Path) -> list[Path]:
    """The kit's lock files that guard `path`: its own build and use locks beside it (in a kit folder, also ones not
    made yet: holding them keeps a builder from starting while the folder goes), and those of the environments inside
    it (a folder of environments). Reads directory listings only."""
    beside = [envlock.build_lock_path(path), envlock.use_lock_path(path)]
    if not envlock.is_owned(path.parent):  # bin/pcgkit's envs in the checkout: no locks; none is made there
        beside = [p for p in beside if p.exists() or p.is_symlink()]
    inside = sorted(p for p in path.iterdir() if p.name.startswith(".") and p.suffix in (".lock", ".use")) \
        if path.is_dir() else []
    return [*beside, *inside]


def _remove_one(entry: Entry) -> str | None:
    """Delete one entry while holding every lock that guards it; the reason it was kept, else None."""
    with contextlib.ExitStack() as holds:
        for lock in held_locks(entry.path):
            handle = envlock.try_exclusive(lock)
            if handle is None:
                holder = "; ".join(envlock.holders(lock)) or "another process"
                use = "a matrix run is using it" if lock.suffix == ".use" else "it is being built"
                return f"{use}: {lock.name} is held by {holder}; remove it when that ends"
            holds.callback(handle.close)
        freed = usage(entry.path).bytes
        shutil.rmtree(entry.path)  # the lock files beside it stay: a waiter holds their inode
        print(f"pcgkit cache: removed {entry.name} ({entry.path}, {human(freed)})")
    return None


def _remove(args: argparse.Namespace) -> int:
    running = Path(sys.prefix).resolve()
    status = ExitCode.SUCCESS
    for entry in chosen(_entries(), args.names, args.all):
        if entry.path.resolve() == running:
            print(f"pcgkit cache: kept {entry.name}: this command runs from it (remove it with: rm -rf {entry.path})",
                  file=sys.stderr)
            continue
        kept = _remove_one(entry)
        if kept is not None:
            print(f"pcgkit cache: kept {entry.name}: {kept}", file=sys.stderr)
            status = ExitCode.ENVIRONMENT
    return int(status)


def register(subparsers) -> None:
    cache = subparsers.add_parser(
        "cache", help="the kit's environments and caches on this machine, with sizes; remove them",
        description="List the kit's environments and caches (bin/pcgkit's .venv and .venv-light, matrix cells, "
                    "preflight's release environments, the kit's cache folder) with their sizes; remove them.",
        epilog="examples:\n  %(prog)s\n  %(prog)s --json\n  %(prog)s remove preflight:sglang-0.5.12-0123456789ab\n  %(prog)s remove --all")
    cache.add_argument("--json", action="store_true", help="the list as JSON (schema pcgkit.cache/1)")
    cache.set_defaults(func=_list)
    sub = cache.add_subparsers(dest="cache_command")
    remove = sub.add_parser("remove", help="delete the named folders (or --all)",
                            description="Delete kit folders by the names `pcgkit cache` lists.",
                            epilog="examples:\n  %(prog)s reference\n  %(prog)s --all")
    remove.add_argument("names", nargs="*", metavar="NAME", help="a name from `pcgkit cache`")
    remove.add_argument("--all", action="store_true", help="every folder listed")
    remove.set_defaults(func=_remove)
