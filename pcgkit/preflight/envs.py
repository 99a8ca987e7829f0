"""An SGLang release's own environment for `pcgkit preflight --sglang VERSION` (and the tests, and the docs table).

A uv venv with `sglang==VERSION --no-deps`, the torch / FlashInfer pins that release declares
(fixtures/sglang_requires.toml, refreshed by `pcgkit matrix --refresh-pins`) and the light packages its modules
need to import on a machine without a GPU (fixtures/sglang_import_deps.toml + sglang_sweep_deps.toml). Built
once per (release, requirement list) under the kit's cache (`${PCGKIT_CACHE:-~/.cache/pcgkit}/preflight-envs`),
behind a file lock so parallel callers build it once. `plan_env` is pure; `release_env` runs uv.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import json
import os
from pathlib import Path

import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from pcgkit import resources
from pcgkit.errors import EnvironmentSetupError, UsageError

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
    from pcgkit import resources

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
                         "`pcgkit matrix --refresh-pins` reads newer ones)")
    return [r for r in release["requires"] if canonicalize_name(Requirement(r).name) in PIN_NAMES]


def plan_env(sglang: str, requires: dict, import_deps: list[str], root: Path) -> ReleaseEnv:
    """Where and what: the folder name carries a hash of the requirement list, so a changed list is a new env. Pure."""
    requirements = tuple(dict.fromkeys([*declared_pins(sglang, requires), *import_deps]))
    key = hashlib.sha256(json.dumps([sglang, requirements]).encode()).hexdigest()[:12]
    return ReleaseEnv(sglang, requirements, root / f"sglang-{sglang}-{key}")


def release_env(sglang: str) -> ReleaseEnv:
    """The built environment for an SGLang release (EnvironmentSetupError with uv's own line when it cannot be built)."""
    from pcgkit.sglang.quant_specs import sweep_import_dependencies
    from pcgkit.util import interpreters, proc

    requires = tomllib.loads(resources.fixture("sglang_requires.toml").read_text())
    env = plan_env(sglang, requires, sweep_import_dependencies(sglang), cache_root())
    env.folder.parent.mkdir(parents=True, exist_ok=True)
    with open(env.folder.parent / f".{env.folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (env.folder / ".complete").is_file():
            return env
        interpreter = interpreters.find_python(PYTHON)
        if interpreter is None:
            raise EnvironmentSetupError(f"no Python {PYTHON} here: SGLang's wheels need it")
        uv = proc.uv_command()
        steps = ([*uv, "venv", "-q", "--allow-existing", "-p", interpreter, str(env.folder)],
                 [*uv, "pip", "install", "-q", "--python", str(env.python), *env.requirements],
                 [*uv, "pip", "install", "-q", "--python", str(env.python), "--no-deps", f"sglang=={sglang}"])
        for argv in steps:
            done = proc.run(argv, env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"}, timeout=3600)
            if not done.ok:
                tail = (done.output_tail.strip().splitlines() or ["no output"])[-1]
                raise EnvironmentSetupError(f"building sglang {sglang}'s environment in {env.folder} failed: {tail[:300]}")
        (env.folder / ".complete").write_text("\n".join(env.requirements) + "\n")
    return env
