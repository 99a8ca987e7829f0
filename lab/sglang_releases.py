"""Read every SGLang release in range from its own wheel (`bin/pcgkit lab read-releases`), into
fixtures/sglang_releases.json, which the kit reads (pcgkit.sglang.releases.parse_table): its piecewise switch
(pcgkit.sglang.facts.flags_from_source over the wheel's parser files), whether it registers its own FP4 op or calls
FlashInfer's, the flags its capture-failure messages name. `release_facts_from_texts` is pure; `read_wheel` opens one
zip file; the wheels come from `pip download --no-deps` (download_argv, pip_command)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

from pcgkit.sglang.facts import flags_from_source, prefill_default_from_source
from pcgkit.sglang.releases import TABLE_SCHEMA, ReleaseFacts
from pcgkit.sglang.runners import runner_facts_from_texts
from pcgkit.util.ranges import version_key

OWN_OP = re.compile(r"""op_name\s*=\s*["']flashinfer_fp4_quantize["']""")


FLASHINFER_OP_CALL = "torch.ops.flashinfer.fp4_quantize"


_PARSER_FILES = re.compile(r"^sglang/srt/(server_args\.py|arg_groups/.*\.py)$")


_GRAPH_CONFIG = "sglang/srt/model_executor/cuda_graph_config.py"


# `pip download` for the wheels SGLang publishes from 0.5.11 on needs the newer manylinux tag.
WHEEL_PLATFORM = "manylinux_2_34_x86_64"


WHEEL_PYTHON = "3.12"


_FAILED_MSG = re.compile(r"^\w*(?:PIECEWISE|PREFILL)\w*CAPTURE_FAILED_MSG\s*=\s*\((.*?)^\)", re.S | re.M)


_MSG_FLAG = re.compile(r"(--[a-z0-9][a-z0-9-]*(?:=[a-z_]+)?)")


def capture_failure_flags(texts: dict[str, str]) -> tuple[str, ...]:
    """Every flag named in the release's piecewise/prefill capture-failure messages (module-level
    `*PIECEWISE*CAPTURE_FAILED_MSG = (...)` / `*PREFILL*...`; the decode graphs' message is not this bug's). Pure."""
    found = [flag for text in texts.values() for body in _FAILED_MSG.findall(text) for flag in _MSG_FLAG.findall(body)]
    return tuple(dict.fromkeys(found))


def release_facts_from_texts(sglang: str, texts: dict[str, str], wheel: str, read_on: str) -> ReleaseFacts:
    """The facts from a wheel's Python files (path inside the wheel -> text). Pure."""
    parser = {name: text for name, text in texts.items() if _PARSER_FILES.match(name)}
    graph_config = texts.get(_GRAPH_CONFIG)
    prefill_default = prefill_default_from_source(graph_config) if graph_config else None
    flags = flags_from_source(parser, sglang, prefill_default, origin=f"the release wheel {wheel}")
    own = any(OWN_OP.search(text) for text in texts.values())
    calls = tuple(sorted(name for name, text in texts.items() if FLASHINFER_OP_CALL in text))
    return ReleaseFacts(sglang, flags, own, calls, wheel, read_on, capture_failure_flags(texts),
                        runner_facts_from_texts(texts))


def read_wheel(path: Path, sglang: str, read_on: str) -> ReleaseFacts:
    """Open one sglang wheel and read its facts (only its .py files under sglang/ are read)."""
    with zipfile.ZipFile(path) as wheel:
        texts = {name: wheel.read(name).decode("utf-8", "replace")
                 for name in wheel.namelist() if name.startswith("sglang/") and name.endswith(".py")}
    return release_facts_from_texts(sglang, texts, path.name, read_on)


def table_dict(facts: list[ReleaseFacts], generated: str, how: str) -> dict:
    """The JSON the table file holds, oldest release first. Pure."""
    ordered = sorted(facts, key=lambda f: version_key(f.sglang))
    return {"schema": TABLE_SCHEMA, "generated": generated, "generated_by": how,
            "releases": [f.to_dict() for f in ordered]}


def download_argv(pip: list[str], release: str, dest: Path) -> list[str]:
    """The one `pip download` of a release wheel (no dependencies, binary only). Pure."""
    return [*pip, "download", "--no-deps", f"sglang=={release}", "--platform", WHEEL_PLATFORM,
            "--only-binary=:all:", "--python-version", WHEEL_PYTHON, "--dest", str(dest), "--quiet"]


def pip_failure(output: str, ended: str) -> str:
    """pip's own reason a download failed, for the one error line: its last `ERROR:` line, with the network named
    when pip retried a connection first ("from versions: none" alone reads like a release that does not exist).
    `ended`: how the process ended (proc's describe_failure), used when pip printed no reason. Pure."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    reason = errors[-1] if errors else (lines[-1] if lines else ended)
    network = any("Retrying" in line and ("connect" in line.lower() or "NewConnectionError" in line) for line in lines)
    return ("network: pip could not reach the index; " if network else "") + reason[:300]


def pip_command(python: str, has_pip: bool, pip_on_path: str | None) -> list[str] | None:
    """How to call pip: this interpreter's when it has one (uv-made venvs do not), else the pip on PATH. Pure."""
    if has_pip:
        return [python, "-m", "pip"]
    return [pip_on_path] if pip_on_path else None
