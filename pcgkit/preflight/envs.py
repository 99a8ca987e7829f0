"""An SGLang release's own environment for `pcgkit preflight --sglang VERSION` (and the tests, and the docs table).

A uv venv with `sglang==VERSION --no-deps`, the torch / FlashInfer pins that release declares
(fixtures/sglang_requires.toml, refreshed by `bin/pcgkit lab pins`) and the light packages its modules
need to import on a machine without a GPU (fixtures/sglang_import_deps.toml + sglang_sweep_deps.toml). Built
once per (release, requirement list) under the kit's cache (`${PCGKIT_CACHE:-~/.cache/pcgkit}/preflight-envs`),
behind a file lock so parallel callers build it once. `plan_env` is pure; `release_env` runs uv.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import time
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from pcgkit import resources
from pcgkit.errors import EnvironmentSetupError, UsageError
from pcgkit.util.envlock import build_lock, stamp
from pcgkit.util.tomlfile import tomllib

PIN_NAMES = ("torch", "flashinfer-python", "flashinfer-cubin")  # canonical names (releases spell them _ or -)
PYTHON = "3.12"  # the SGLang wheels in range are cp312 (pcgkit/matrix: the cells' default python)


@dataclasses.dataclass(frozen=True)
class ReleaseEnv:
    sglang: str
    requirements: tuple[str, ...]  # installed with their dependencies (uv resolves them together)
    folder: Path

    @property
    def python(self) -> Path:
        return self.folder / "bin" / "python"


def cache_root() -> Path:
    try:
        return resources.cache_dir() / "preflight-envs"
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def declared_pins(sglang: str, requires: dict) -> list[str]:
    """The release's own torch / FlashInfer pins (UsageError for a release the pins file does not know). Pure."""
    release = next((r for r in requires.get("release", ()) if r.get("version") == sglang), None)
    if release is None:
        known = [r.get("version") for r in requires.get("release", ())]
        raise UsageError(f"--sglang {sglang}: not a release the kit has pins for (known: {', '.join(known[-8:])}, ...; "
                         "`bin/pcgkit lab pins` reads newer ones)")
    return [r for r in release["requires"] if canonicalize_name(Requirement(r).name) in PIN_NAMES]


def sweep_import_dependencies(sglang: str) -> list[str]:
    """import-deps of the case (fixtures/sglang_import_deps.toml) + the sweep's own extras for this sglang
    (fixtures/sglang_sweep_deps.toml): what a release's modules need to import on a machine without a GPU."""
    from pcgkit.matrix.deps import sglang_import_dependencies

    base = sglang_import_dependencies(sglang)
    extra = sglang_import_dependencies(sglang, resources.fixture("sglang_sweep_deps.toml"))
    return base + [p for p in extra if p not in base]


def plan_env(sglang: str, requires: dict, import_deps: list[str], root: Path) -> ReleaseEnv:
    """Where and what: the folder name carries a hash of the requirement list, so a changed list is a new env. Pure."""
    requirements = tuple(dict.fromkeys([*declared_pins(sglang, requires), *import_deps]))
    key = hashlib.sha256(json.dumps([sglang, requirements]).encode()).hexdigest()[:12]
    return ReleaseEnv(sglang, requirements, root / f"sglang-{sglang}-{key}")


def size_forecast(built: list[int]) -> str:
    """What the next build will take, said before it starts: the median of the ones already built here, else the
    typical size. Pure."""
    if built:
        median = sorted(built)[len(built) // 2]
        return f"about {median / 2**30:.1f} GiB, like the {len(built)} release environment(s) already built here"
    from pcgkit.util.diskuse import TYPICAL_STACK_ENV_GB

    return f"about {TYPICAL_STACK_ENV_GB} GB (torch's CUDA build and its NVIDIA libraries are most of it)"


def _say(line: str) -> None:
    print(f"pcgkit preflight: {line}", file=sys.stderr, flush=True)


def release_env(sglang: str) -> ReleaseEnv:
    """The built environment for an SGLang release (EnvironmentSetupError with uv's own line when it cannot be built).
    Before building it says what, how big and where; each step shows progress; the built size is printed after."""
    from pcgkit.util import interpreters, proc
    from pcgkit.util.diskuse import human, usage

    requires = tomllib.loads(resources.fixture("sglang_requires.toml").read_text())
    env = plan_env(sglang, requires, sweep_import_dependencies(sglang), cache_root())
    if (env.folder / ".complete").is_file():  # written last: a complete env is only read, no lock to write
        stamp(env.folder)  # one an older kit built, before the stamp existed (best effort)
        _say(f"using sglang {sglang}'s environment in {env.folder} (built earlier; `pcgkit cache` lists it)")
        return env
    with build_lock(env.folder):
        if (env.folder / ".complete").is_file():  # another preflight built it while this one waited
            _say(f"using sglang {sglang}'s environment in {env.folder} (built earlier; `pcgkit cache` lists it)")
            return env
        interpreter = interpreters.find_python(PYTHON)
        if interpreter is None:
            raise EnvironmentSetupError(f"no Python {PYTHON} here: SGLang's wheels need it")
        others = [p for p in env.folder.parent.iterdir() if p.is_dir() and (p / ".complete").is_file()]
        pins = ", ".join(r for r in env.requirements if canonicalize_name(Requirement(r).name) in PIN_NAMES)
        _say(f"building sglang {sglang}'s environment once (sglang {sglang}, {pins} and {len(env.requirements)} "
             f"packages in all; {size_forecast([usage(p).bytes for p in others])}) in {env.folder}; later runs reuse "
             f"it; `pcgkit cache remove preflight:{env.folder.name}` removes it")
        uv = proc.uv_command()
        steps = (("1/3 creating the venv", [*uv, "venv", "-q", "--allow-existing", "-p", interpreter, str(env.folder)]),
                 (f"2/3 installing {pins} and the import dependencies (the large part)",
                  [*uv, "pip", "install", "-q", "--python", str(env.python), *env.requirements]),
                 (f"3/3 installing sglang=={sglang} (no dependencies)",
                  [*uv, "pip", "install", "-q", "--python", str(env.python), "--no-deps", f"sglang=={sglang}"]))
        start = time.monotonic()
        for label, argv in steps:
            _say(label)
            done = proc.run(argv, env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"}, timeout=3600, echo=False,
                            progress=f"preflight: {label}")
            if not done.ok:
                tail = (done.output_tail.strip().splitlines() or ["no output"])[-1]
                raise EnvironmentSetupError(f"building sglang {sglang}'s environment in {env.folder} failed: {tail[:300]}")
        (env.folder / ".complete").write_text("\n".join(env.requirements) + "\n")
        _say(f"built in {time.monotonic() - start:.0f} s: {human(usage(env.folder).bytes)} in {env.folder}")
    return env
