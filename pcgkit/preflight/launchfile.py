"""A team's launch as data (`pcgkit matrix --preflight FILE`): the SGLang launch arguments and the arch to answer for.

    schema = "pcgkit.preflight-launch/1"
    name = "llama-70b-nvfp4"                      # the row's label in the report
    arch = "sm120"                                 # sm120 | sm100 | sm90 (simulated unless a matching GPU is there)
    launch = ["--model-path", "./ckpt", "--quantization", "modelopt_fp4", "--tp", "1"]

A relative `--model-path` is taken relative to the file's folder (the checkpoint's config files travel with the
launch file; never its weights). Parsing is pure; `load` reads the file.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from pcgkit.errors import UsageError
from pcgkit.util import atomic
from pcgkit.util.tomlfile import tomllib
from pcgkit.util.tomlschema import key_lines

SCHEMA = "pcgkit.preflight-launch/1"
ENV_VAR = "PCGKIT_PREFLIGHT"  # the launch file a matrix cell's preflight case reads (set by `matrix --preflight`)
ARCHES = ("sm120", "sm100", "sm90")


@dataclasses.dataclass(frozen=True)
class LaunchFile:
    name: str
    arch: str
    launch: tuple[str, ...]
    source: str

    def to_dict(self) -> dict:
        return {"name": self.name, "arch": self.arch, "launch": list(self.launch), "source": self.source}


def _absolute_model_path(launch: list[str], folder: Path) -> list[str]:
    out = list(launch)
    for i, token in enumerate(out):
        if token == "--model-path" and i + 1 < len(out) and not Path(out[i + 1]).is_absolute():
            out[i + 1] = str(folder / out[i + 1])
        elif token.startswith("--model-path=") and not Path(token.split("=", 1)[1]).is_absolute():
            out[i] = f"--model-path={folder / token.split('=', 1)[1]}"
    return out


def parse(data: dict[str, Any], source: str, folder: Path, text: str = "") -> LaunchFile:
    """The launch file's table as a LaunchFile (UsageError naming the field, and its line when `text` is given). Pure."""
    lines = key_lines(text)

    def at(key: str) -> str:
        line = lines.get(("", 0, key))
        return f"{source}:{line}" if line else source

    if data.get("schema") != SCHEMA:
        raise UsageError(f"{at('schema')}: schema must be {SCHEMA!r}, got {data.get('schema')!r}")
    unknown = sorted(set(data) - {"schema", "name", "arch", "launch"})
    if unknown:
        raise UsageError(f"{at(unknown[0])}: unknown key {unknown[0]!r} (known: schema, name, arch, launch)")
    launch = data.get("launch")
    if not isinstance(launch, list) or not launch or not all(isinstance(t, str) for t in launch):
        raise UsageError(f"{at('launch')}: `launch` must be a non-empty list of strings (the sglang launch arguments)")
    arch = data.get("arch", "sm120")
    if arch not in ARCHES:
        raise UsageError(f"{at('arch')}: `arch` must be one of {list(ARCHES)}, got {arch!r}")
    name = data.get("name", Path(source).stem)
    if not isinstance(name, str) or not name:
        raise UsageError(f"{at('name')}: `name` must be a non-empty string")
    return LaunchFile(name, arch, tuple(_absolute_model_path(launch, folder)), source)


def load(path: str | os.PathLike) -> LaunchFile:
    file = Path(path)
    try:
        text = atomic.read_user_text(file, "launch file")  # bounded, never a device
        data = tomllib.loads(text)
    except OSError as exc:
        raise UsageError(f"{file}: cannot read the launch file ({exc.strerror or exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{file}: not TOML ({exc})") from exc
    return parse(data, str(file), file.resolve().parent, text)
