"""The team's launch as a case of the catalog (`preflight-launch`), run in every matrix cell by
`pcgkit matrix --preflight FILE`: the same probe and answer as `pcgkit preflight`, in the cell's environment.

The launch file (parsing is pure; `load` reads it): the SGLang launch arguments and the arch to answer for.

    schema = "pcgkit.preflight-launch/1"
    name = "llama-70b-nvfp4"                      # the row's label in the report
    arch = "sm120"                                 # sm120 | sm100 | sm90 (simulated unless a matching GPU is there)
    launch = ["--model-path", "./ckpt", "--quantization", "modelopt_fp4", "--tp", "1"]

A relative `--model-path` is taken relative to the file's folder (the checkpoint's config files travel with the
launch file; never its weights).

Verdicts: `reproduced` (the launch would die in piecewise capture: dynamo's Unsupported under fullgraph; the
evidence names the failure mode), `not-applicable` (no torch.compile piecewise capture for that launch: off, or
SGLang's breakable runner), `skipped` (preflight could not judge it here, with the reason). A launch whose compiled
region traces is never `fixed`: the probe runs none of the captured call path (that needs the GPU and the weights),
so the cell says `skipped` with TRACED_ONLY as its reason. Opt-in: without a launch file (PCGKIT_PREFLIGHT) the
case is not reported.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping

from pcgkit.errors import UsageError
from pcgkit.harness.casekit import CaseContext, MissingDependency, NotApplicable
from pcgkit.preflight.answer import Answer, decide, with_call_path
from pcgkit.util import atomic
from pcgkit.util.tomlfile import tomllib
from pcgkit.util.tomlschema import key_lines
from pcgkit.values.runcheck import NOT_RUN_TRACE_ONLY
from pcgkit.values.trace import TraceOutcome
from pcgkit.verdicts.modes import MODE_WORDS, Mode, is_dynamo_exception

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


# Any dynamo refusal under fullgraph kills piecewise capture; which failure mode it is goes in the evidence.
PREFLIGHT_LAUNCH = Mode("preflight-launch", *MODE_WORDS["preflight-launch"], matches=is_dynamo_exception)


# The reason of a launch that traced: said as traced only, never as works (the vocabulary's `fixed` needs the call
# path to have run: pcgkit.values.runcheck).
TRACED_ONLY = (f"traced only: what the launch compiles traces under fullgraph=True, so piecewise capture would not "
               f"crash while compiling; {NOT_RUN_TRACE_ONLY}: the probe traces on fake tensors, running the captured "
               f"graph needs the GPU and the weights, so this is no statement that the launch works")
NOT_RUN_HERE = "the preflight probe only traces; nothing ran the captured graph in this cell"


def launch_file() -> str:
    path = os.environ.get(ENV_VAR)
    if not path:
        raise NotApplicable(f"no launch to preflight: `pcgkit matrix --preflight FILE` sets {ENV_VAR}")
    if not Path(path).is_file():  # e.g. a container backend that does not mount it
        raise MissingDependency(f"the launch file {path} is not visible in this environment")
    return path


def run_probe_here(arch: str, launch: tuple[str, ...]) -> dict[str, Any]:
    """The probe in a fresh process of this environment's interpreter (sglang binds kernels at import time)."""
    from pcgkit.util import proc

    with tempfile.TemporaryDirectory(prefix="pcgkit-preflight-") as out:
        doc = Path(out) / "probe.json"
        done = proc.run([sys.executable, "-m", "pcgkit.preflight.probe", "--arch", arch, "--json", str(doc), "--",
                         *launch], echo=False)
        if not doc.is_file():
            raise MissingDependency(f"the preflight probe wrote no answer (exit {done.returncode}): "
                                    f"{(done.output_tail.strip().splitlines() or ['no output'])[-1][:300]}")
        return json.loads(doc.read_text())


def reproduce(ctx: CaseContext, modes: Mapping[str, Any]) -> TraceOutcome:
    """One launch file's answer in this environment, as a trace outcome (see the module docstring)."""
    launch = load(launch_file())
    ctx.evidence["preflight_launch"] = launch.to_dict()
    probe = run_probe_here(launch.arch if ctx.simulated else "auto", launch.launch)
    result = with_call_path(decide(probe, modes), None, NOT_RUN_HERE)
    ctx.evidence["preflight"] = {k: v for k, v in result.to_dict().items() if k != "probe"}
    ctx.evidence["preflight_piecewise"] = probe.get("piecewise")
    if result.answer is Answer.UNKNOWN:
        raise MissingDependency(f"preflight unknown: {result.reason}")
    if result.answer is Answer.OK and (probe.get("piecewise") or {}).get("on") is False:
        raise NotApplicable(result.reason)
    if result.answer is Answer.WILL_CRASH:
        return TraceOutcome(traced=False, executed=False, signature=result.signature,
                            lru_cache_warnings=tuple((probe.get("dense") or {}).get("lru_cache_warnings", ())),
                            graph_breaks=None, graph_break_reasons=(), duration_s=float(probe.get("duration_s", 0.0)))
    # Traced: the call path did not run, so no `fixed` (see TRACED_ONLY); the answer stays in the evidence.
    raise MissingDependency(f"{TRACED_ONLY} ({result.reason})")
