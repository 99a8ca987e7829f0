"""`bin/pcgkit lab discover`: releases on PyPI newer than the matrix (sglang, flashinfer-python, torch) and the cells
to add to fixtures/matrix.toml as TOML (lab.matrix.discover); runs nothing."""

from __future__ import annotations

from pathlib import Path

from lab.matrixargs import add_plan_options
from pcgkit.errors import UsageError
from pcgkit.matrix import pins as pins_mod
from pcgkit.matrix.cells import Cell
from pcgkit.matrix.plan import planned_cells
from pcgkit.util import atomic


def discover_text(cells: list[Cell], pins_path: Path, saved: str | None = None) -> str:
    """Read the index (or saved responses), compare, render (lab.matrix.discover)."""
    import gzip

    from lab.matrix import discover

    def read_saved(name: str) -> discover.IndexProject:
        folder = Path(saved or ".")
        for path in (folder / f"{name}.json", folder / f"{name}.json.gz"):
            if path.is_file():
                try:  # the user's file, not the network: its fault is a usage line, never "check that PyPI is reachable"
                    raw = atomic.read_user_bytes(path, "--index-json")
                    text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8")
                    # the read date of a saved response is its provenance's, not the file's: say which file
                    return discover.parse_project(text, f"{path}, a saved {discover.INDEX_JSON_URL.format(name=name)}",
                                                  "date as recorded beside it")
                except (discover.DiscoverError, OSError, EOFError, UnicodeDecodeError, RecursionError) as exc:
                    why = exc.args[0] if isinstance(exc, discover.DiscoverError) else f"{type(exc).__name__}: {exc}"
                    raise UsageError(f"--index-json {path}: not a saved PyPI JSON API response ({why}); save it "
                                     f"again from {discover.INDEX_JSON_URL.format(name=name)}") from None
        raise UsageError(f"--index-json {folder}: no {name}.json or {name}.json.gz there")

    fetch = read_saved if saved else discover.fetch_project
    projects = {name: fetch(name) for name in discover.DISTRIBUTIONS}
    return discover.render(discover.discover(projects, cells, pins_mod.load_pins(pins_path)))


def _cmd_discover(args) -> int:
    print(discover_text(planned_cells(args), Path(args.pins), args.index_json), end="")
    return 0


def register(subparsers) -> None:
    cmd = subparsers.add_parser(
        "discover", help="releases on PyPI newer than the matrix, as cells to add",
        description="List releases on PyPI newer than the matrix (sglang, flashinfer-python, torch) and print the cells to add as TOML.",
        epilog="examples:\n  %(prog)s\n  %(prog)s --index-json tests/data/pypi   # saved responses, no network")
    add_plan_options(cmd, cells=False)
    cmd.add_argument("--index-json", metavar="DIR",
                     help="read saved PyPI JSON responses (DIR/<name>.json[.gz]) instead of the network")
    cmd.set_defaults(func=_cmd_discover, cell=None)
