"""The CPU build of a cell's locked torch (`pcgkit matrix --torch-build cpu`), derived from its lock.

Simulated cells never touch CUDA, yet the committed lock holds PyPI's Linux torch: the CUDA build, with
nvidia-* and triton beside it (several GB). The CPU lock re-resolves the cell's own requirements with EVERY
pin of the lock as an exact constraint and torch's pinned to `<version>+cpu`: every distribution keeps its
locked version, and what only the CUDA torch required drops out (flashinfer's own nvidia-* dependencies
stay); the part installed without dependencies (sglang) is copied as it is. The CPU wheels come from one
`--find-links` location (PyTorch's page of CPU wheels, or a folder or mirror) that the lock records
(`--emit-find-links`). uv 0.13.9 writes no hash for a wheel a page links (astral-sh/uv#3874, #10308): the
kit adds the page's `#sha256=` fragments itself (`link_hashes`), so the CPU torch is hash-checked too.

Not uv's `--torch-backend cpu`: it names download.pytorch.org with no way to point it elsewhere (uv 0.13.9),
so the path could only be exercised where that host is reachable. Planning is pure; `compile_cpu_lock` is
the edge.
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from pcgkit.matrix import locks
from pcgkit.util import proc

# PyTorch's simple-index page for torch under its CPU index: a page of links to every CPU wheel
# (`torch-<version>+cpu-...whl#sha256=...`), which uv reads as a flat index.
DEFAULT_CPU_INDEX = "https://download.pytorch.org/whl/cpu/torch/"
INDEX_VAR = "PCGKIT_TORCH_CPU_INDEX"  # overrides the default (a mirror, or a folder of wheels offline)
LOCK_FILE = "lock-cpu.txt"  # the derived lock, recorded in the cell folder
TORCH = "torch"


@dataclasses.dataclass(frozen=True)
class CpuLockPlan:
    torch: str  # the locked torch version; "" when the lock installs no torch (nothing to swap)
    requirements: tuple[str, ...]  # the cell's own requirements, as locked
    constraints: tuple[str, ...]  # every other pin of the lock, exactly, and torch==<version>+cpu
    no_deps: str  # the lock's part installed without dependencies, verbatim
    find_links: str
    python: str
    platform: str


def split_lock(lock_text: str) -> tuple[str, str]:
    """(the part resolved with dependencies, the part installed without them). Pure."""
    head, _, tail = lock_text.partition(locks.NO_DEPS_MARK)
    return head, tail.strip()


def cpu_lock_plan(inputs: locks.LockInputs, lock_text: str, find_links: str) -> CpuLockPlan:
    """What uv resolves for the CPU build of this lock. Pure."""
    resolved, no_deps = split_lock(lock_text)
    pins = locks.pinned(resolved)
    torch = pins.get(TORCH, "").split("+", 1)[0]
    constraints = tuple(f"{name}=={version}" for name, version in sorted(pins.items()) if name != TORCH)
    if torch:
        constraints += (f"{TORCH}=={torch}+cpu",)
    return CpuLockPlan(torch, inputs.requirements, constraints, no_deps, find_links, inputs.python, inputs.platform)


def render_cpu_lock(cell_id: str, plan: CpuLockPlan, derived_from: str, resolved: str) -> str:
    """The CPU lock's text: a header naming the lock it was derived from, uv's resolution, the no-deps part. Pure."""
    header = [
        f"# {locks.LOCK_SCHEMA}: the CPU build of torch {plan.torch} for matrix cell {cell_id!r}, derived from its lock",
        f"# (digest {derived_from}): every other pin as locked; what only the CUDA torch required left out.",
        f"# python {plan.python}, platform {plan.platform}; the CPU wheels from {plan.find_links}",
    ]
    return locks.lock_text(header, resolved, plan.no_deps)


_HREF = re.compile(r"""href=["']([^"']+)["']""")


def link_hashes(page: str, name: str, version: str) -> tuple[str, ...]:
    """The sha256 of every wheel of name==version a page of links names (its `#sha256=` fragments). Pure."""
    hashes = []
    for href in _HREF.findall(page):
        path, _, fragment = href.partition("#")
        filename = urllib.parse.unquote(path.rsplit("/", 1)[-1])
        if filename.startswith(f"{name}-{version}-") and filename.endswith(".whl") and fragment.startswith("sha256="):
            hashes.append(fragment.removeprefix("sha256="))
    return tuple(dict.fromkeys(hashes))


def with_hashes(resolved: str, pin: str, hashes: Sequence[str]) -> str:
    """The resolution with hashes added to `pin`'s line when uv wrote none. Pure."""
    if not hashes:
        return resolved
    lines = resolved.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == pin:
            lines[i] = " \\\n".join([pin, *(f"    --hash=sha256:{h}" for h in hashes)])
    return "\n".join(lines) + "\n"


def _page_hashes(find_links: str, name: str, version: str, timeout: float) -> tuple[str, ...]:
    """link_hashes of the find-links page (the edge); () for a local folder (uv hashes those) or an unreadable page."""
    if urllib.parse.urlparse(find_links).scheme not in ("http", "https"):
        return ()
    try:
        with urllib.request.urlopen(find_links, timeout=timeout) as response:  # noqa: S310 - the user's own index
            return link_hashes(response.read().decode("utf-8", "replace"), name, version)
    except OSError:
        return ()  # the install then says which requirement has no hash


def changed_pins(locked_text: str, cpu_text: str) -> dict[str, tuple[str | None, str | None]]:
    """name -> (locked version, CPU-lock version) for every pin that differs between the two. Pure."""
    before, after = locks.pinned(locked_text), locks.pinned(cpu_text)
    return {name: (before.get(name), after.get(name)) for name in sorted(before.keys() | after.keys())
            if before.get(name) != after.get(name)}


def compile_cpu_lock(cell_id: str, inputs: locks.LockInputs, lock_text: str, find_links: str, base_python: str,
                     work: Path, env: dict[str, str], timeout: float) -> str | proc.Completed:
    """The CPU lock's text, or the uv run that failed (the edge); uv works as in locks.compile_lock."""
    plan = cpu_lock_plan(inputs, lock_text, find_links)
    with locks.private_workdir(work, "pcgkit-cpu-lock-") as private:
        requirements, constraints, out = Path("cpu-requirements.in"), Path("cpu-constraints.txt"), Path("cpu-resolved.txt")
        (private / requirements).write_text("\n".join(plan.requirements) + "\n")
        (private / constraints).write_text("\n".join(plan.constraints) + "\n")
        argv = locks.compile_argv(proc.uv_command(), base_python, inputs, requirements, out, constraints,
                                  find_links=plan.find_links)
        done = proc.run(argv, cwd=private, env=env, timeout=timeout, log_path=private / "cpu-compile.log")
        if not done.ok:
            return done
        resolved = (private / out).read_text()
        pin = f"{TORCH}=={plan.torch}+cpu"
        if plan.torch and re.search(rf"^{re.escape(pin)}\s*$", resolved, re.MULTILINE):  # uv wrote no hash for it
            resolved = with_hashes(resolved, pin, _page_hashes(find_links, TORCH, f"{plan.torch}+cpu", min(timeout, 60.0)))
        return render_cpu_lock(cell_id, plan, locks.file_digest(lock_text), resolved)
