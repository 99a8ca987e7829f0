"""Per-version SGLang facts, read from the INSTALLED sglang (never from a table written by hand).

- piecewise CUDA graphs: opt-in or on by default, and the flags that enable / disable / force them
  (`piecewise_flags()`: from `ServerArgs.add_cli_args(parser)` when `sglang.srt.server_args`
  imports; otherwise from the source text of the installed files, and the fact says so). This is
  the ONE reader of those flags: the report shows its human-readable fields and the end-to-end
  launch (pcgkit.e2e.launch) builds its argv from `enable_argv` / `force_argv`;
- the ports SGLang derives from --port (`derived_port_offsets()`).

The pure parts (`flags_from_actions`, `flags_from_source`) take data and are tested on real sglang
source text; the functions without arguments locate the installed files.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import re
import sys
from pathlib import Path
from typing import Iterable

from pcgkit.harness.versions import installed_version

OPT_IN = "opt-in"
ON_BY_DEFAULT = "on-by-default"
UNKNOWN = "unknown"
NOT_SHIPPED = "not-shipped"  # this sglang has no piecewise CUDA graph flags at all

_PIECEWISE_FLAG = re.compile(r"""["'](--[a-z0-9-]*piecewise[a-z0-9-]*)["']""")
PREFILL_BACKEND_FLAG = "--cuda-graph-backend-prefill"
TC_PIECEWISE = "tc_piecewise"  # 0.5.16+: the torch.compile piecewise prefill backend
BREAKABLE = "breakable"  # the prefill backend without torch.compile (0.5.14+; the default on CUDA from 0.5.15)
BREAKABLE_SWITCH = "--enable-breakable-cuda-graph"  # 0.5.11-0.5.13: the same runner behind a switch
ARGPARSE_SOURCE = "argparse (ServerArgs.add_cli_args)"  # `source` when read from the parser itself


@dataclasses.dataclass(frozen=True)
class PiecewiseFlags:
    """How the installed SGLang turns piecewise CUDA graphs (torch.compile per layer) on and off."""

    sglang: str | None
    default_state: str  # OPT_IN | ON_BY_DEFAULT | UNKNOWN | NOT_SHIPPED
    enable: str | None  # the argv that turns it on, e.g. "--enable-piecewise-cuda-graph"
    disable: str | None
    force: str | None  # keeps it on where SGLang would auto-disable it
    all_flags: tuple[str, ...]  # every option string that mentions piecewise CUDA graphs
    source: str  # "argparse (ServerArgs.add_cli_args)" or "source text of ... (import failed: ...)"
    note: str = ""
    # Clean argv tokens for a launch command (the fields above are for people and may carry
    # "(alias of ...)" / "[deprecated]"): what turns piecewise on (empty where it is on by default),
    # and what keeps it on past SGLang's auto-disable checks (never a deprecated alias).
    enable_argv: tuple[str, ...] = ()
    force_argv: tuple[str, ...] = ()
    # (ServerArgs field, value) pairs a parsed command line holds when piecewise is on with the
    # argv above: what a check against the release's own parser compares.
    on_values: tuple[tuple[str, object], ...] = ()
    # The argv that keeps prefill CUDA graphs but captures them with SGLang's breakable CUDA graph runner instead
    # of torch.compile (so the dynamo trace this kit is about never runs): `--enable-breakable-cuda-graph`
    # (0.5.11-0.5.13) or `--cuda-graph-backend-prefill=breakable`; None where the parser has neither.
    breakable: str | None = None

    def to_dict(self) -> dict:
        data = dataclasses.asdict(self)
        for key in ("all_flags", "enable_argv", "force_argv"):
            data[key] = list(getattr(self, key))
        data["on_values"] = [list(pair) for pair in self.on_values]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> PiecewiseFlags:
        """The inverse of to_dict (recorded facts, e.g. in fixtures/sglang_launch_validation.json)."""
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - fields
        if unknown:
            raise ValueError(f"not PiecewiseFlags fields: {sorted(unknown)}")
        lists = {key: tuple(data.get(key, ())) for key in ("all_flags", "enable_argv", "force_argv")}
        return cls(**{**data, **lists, "on_values": tuple(tuple(pair) for pair in data.get("on_values", ()))})


@dataclasses.dataclass(frozen=True)
class ActionInfo:
    """The part of an argparse action the facts need (so the pure code is testable without sglang)."""

    option_strings: tuple[str, ...]
    dest: str
    default: object = None
    const: object = None
    choices: tuple[str, ...] | None = None
    nargs: object = None
    deprecated: bool = False  # sglang's DeprecatedAction / "Deprecated..." help: kept only for old command lines


def _flag_state(info: ActionInfo) -> str:
    """'--x' for a switch, '--x=value' for a choice-taking option pinned by const (deprecated aliases)."""
    flag = info.option_strings[0]
    if info.nargs == 0 and isinstance(info.const, str):
        flag = f"{flag} (alias of {info.dest}={info.const})"
    return f"{flag} [deprecated]" if info.deprecated else flag


def flags_from_actions(
    actions: Iterable[ActionInfo], sglang: str | None, prefill_default: str | None = None, source: str = ""
) -> PiecewiseFlags:
    """The piecewise facts from the parser's actions, in either generation of flags (below); `prefill_default`:
    the backend choice's default, resolved at runtime (read from sglang by the caller). Pure."""
    actions = list(actions)
    piecewise = [a for a in actions if any("piecewise" in s for s in a.option_strings)]
    backend = next((a for a in actions if PREFILL_BACKEND_FLAG in a.option_strings), None)
    # a deprecated switch still parses but no longer decides anything: never the "enable" answer
    by_prefix = {p: next((a for a in piecewise if a.option_strings[0].startswith(p) and not
                          (a.deprecated and p == "--enable-")), None)
                 for p in ("--enable-", "--disable-", "--enforce-")}
    all_flags = tuple(sorted({s for a in piecewise for s in a.option_strings if s.startswith("--")}))
    switch = next((a for a in actions if BREAKABLE_SWITCH in a.option_strings and not a.deprecated), None)
    breakable = (f"{PREFILL_BACKEND_FLAG}={BREAKABLE}" if backend is not None and BREAKABLE in (backend.choices or ())
                 else BREAKABLE_SWITCH if switch is not None else None)
    if backend is not None and backend.choices and TC_PIECEWISE in backend.choices:
        return _backend_choice_flags(backend, by_prefix["--enforce-"], all_flags, sglang, prefill_default, source, breakable)
    return _switch_flags(piecewise, by_prefix, backend, all_flags, sglang, source, breakable)


def _backend_choice_flags(backend: ActionInfo, forced: ActionInfo | None, all_flags: tuple[str, ...], sglang: str | None,
                          prefill_default: str | None, source: str, breakable: str | None) -> PiecewiseFlags:
    """The second generation: a per-phase backend choice (`--cuda-graph-backend-prefill` with `tc_piecewise`). Pure."""
    default = backend.default if backend.default is not None else prefill_default
    state = UNKNOWN if default is None else (ON_BY_DEFAULT if default == TC_PIECEWISE else OPT_IN)
    # 0.5.16-0.5.19's --enforce-... is a deprecated alias of this very backend choice (and an
    # explicit backend skips the auto-disable cascade): passed only if it is a real switch.
    force_argv = (forced.option_strings[0],) if forced and not forced.deprecated else ()
    on_values: tuple[tuple[str, object], ...] = (("cuda_graph_backend_prefill", TC_PIECEWISE),)
    if forced is not None and force_argv and forced.dest != "cuda_graph_backend_prefill":
        on_values += ((forced.dest, forced.const if forced.const is not None else True),)
    return PiecewiseFlags(
        sglang=sglang,
        default_state=state,
        enable=f"{PREFILL_BACKEND_FLAG}={TC_PIECEWISE}",
        disable=f"{PREFILL_BACKEND_FLAG}=disabled",
        force=_flag_state(forced) if forced else None,
        all_flags=tuple(sorted(set(all_flags) | {PREFILL_BACKEND_FLAG})),
        source=source,
        note=f"prefill CUDA-graph backend default: {default or 'resolved at runtime, not read'}; "
        f"choices {list(backend.choices or ())}",
        enable_argv=(PREFILL_BACKEND_FLAG, TC_PIECEWISE),
        force_argv=force_argv,
        on_values=on_values,
        breakable=breakable,
    )


def _switch_flags(piecewise: list[ActionInfo], by_prefix: dict[str, ActionInfo | None], backend: ActionInfo | None,
                  all_flags: tuple[str, ...], sglang: str | None, source: str, breakable: str | None) -> PiecewiseFlags:
    """The first generation: boolean switches (`--enable-piecewise-cuda-graph` opt-in; later `--disable-...` /
    `--enforce-...` once it became the default). Pure."""
    enable, disable, force = by_prefix["--enable-"], by_prefix["--disable-"], by_prefix["--enforce-"]
    if enable is None and disable is None:
        offered = f"; {PREFILL_BACKEND_FLAG} offers {list(backend.choices or ())}, no {TC_PIECEWISE}" if backend else ""
        return PiecewiseFlags(sglang, NOT_SHIPPED, None, None, None, all_flags, source,
                              note="no piecewise CUDA graph switch in this version's parser" + offered, breakable=breakable)
    if disable is not None:
        state = OPT_IN if disable.default is True else ON_BY_DEFAULT
    else:
        assert enable is not None  # one of the two exists (checked above)
        state = ON_BY_DEFAULT if enable.default is True else OPT_IN
    # Where it is on by default nothing needs passing; the enable switch is passed otherwise (and
    # where the default could not be read), the disable switch never.
    enable_argv = (enable.option_strings[0],) if enable is not None and state != ON_BY_DEFAULT else ()
    force_argv = (force.option_strings[0],) if force is not None and not force.deprecated else ()
    passed = ((enable if enable_argv else None, True), (disable, False), (force if force_argv else None, True))
    on_values = tuple((action.dest, value) for action, value in passed if action is not None)
    return PiecewiseFlags(
        sglang=sglang,
        default_state=state,
        enable=enable.option_strings[0] if enable else None,
        disable=disable.option_strings[0] if disable else None,
        force=_flag_state(force) if force else None,
        all_flags=all_flags,
        source=source,
        note="; ".join(f"{_flag_state(a)}" for a in piecewise if a.deprecated),
        enable_argv=enable_argv,
        force_argv=force_argv,
        on_values=on_values,
        breakable=breakable,
    )


def action_info(action: argparse.Action) -> ActionInfo:
    choices = tuple(str(c) for c in action.choices) if action.choices is not None else None
    deprecated = "Deprecated" in type(action).__name__ or (action.help or "").startswith("Deprecated")
    return ActionInfo(tuple(action.option_strings), action.dest, action.default, action.const, choices, action.nargs,
                      deprecated)


def sglang_root() -> Path | None:
    """The installed sglang package directory, found without importing it (its import is heavy)."""
    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _prefill_default_on_cuda() -> str | None:
    """sglang's own default prefill backend *on a CUDA machine* (0.5.14+), or None where absent.

    `default_prefill_backend()` asks `sglang.srt.utils.is_cuda()`; on this CPU machine it would
    answer for a CPU, so that one hardware query is answered as a CUDA machine would (simulated).
    """
    from unittest import mock

    try:
        import sglang.srt.utils as sglang_utils
        from sglang.srt.model_executor import cuda_graph_config
    except Exception:  # ImportError, or a CUDA-only module failing at import: the default stays unread
        return None
    if hasattr(cuda_graph_config, "default_prefill_backend"):  # 0.5.15+: decided by the hardware
        with mock.patch.object(sglang_utils, "is_cuda", lambda: True):
            chosen = cuda_graph_config.default_prefill_backend()
    elif hasattr(cuda_graph_config, "CudaGraphConfig"):  # 0.5.14: a constant in the config dataclass
        try:
            chosen = cuda_graph_config.CudaGraphConfig().prefill.backend
        except Exception:  # a constructor that needs more than its defaults: the default stays unread
            return None
    else:
        return None
    return str(getattr(chosen, "value", chosen))


def piecewise_flags() -> PiecewiseFlags:
    """Piecewise CUDA graph flags and default state of the installed sglang (raises if none is installed)."""
    version = installed_version("sglang")
    root = sglang_root()
    if version is None or root is None:
        raise LookupError("sglang is not installed in this environment")
    try:
        from sglang.srt.server_args import ServerArgs

        parser = argparse.ArgumentParser(add_help=False)
        ServerArgs.add_cli_args(parser)
    except Exception as exc:  # any import failure (missing light dep, CUDA-only module): read the source
        _forget_partial_import("sglang")
        config = root / "srt" / "model_executor" / "cuda_graph_config.py"
        prefill_default = prefill_default_from_source(config.read_text()) if config.is_file() else None
        return flags_from_source(_server_args_sources(root), version, prefill_default,
                                 import_error=f"{type(exc).__name__}: {exc}")
    return flags_from_actions(
        (action_info(a) for a in parser._actions), version, _prefill_default_on_cuda(),
        source=ARGPARSE_SOURCE,
    )


def _forget_partial_import(package: str) -> None:
    """Drop `package.*` modules a failed import left behind without their parent.

    When `import sglang...` fails inside sglang/__init__.py, Python removes `sglang` but keeps the
    submodules imported so far; a later `import sglang.srt.x` then dies in importlib with
    KeyError('sglang') instead of the real ImportError. Only orphans are dropped.
    """
    if package in sys.modules:
        return
    for name in [n for n in sys.modules if n.startswith(package + ".")]:
        del sys.modules[name]


# --- source fallback -------------------------------------------------------------------------

def _server_args_sources(root: Path) -> dict[str, str]:
    """server_args.py and, from 0.5.23 on, the arg_groups/ modules its parser is assembled from."""
    paths = [root / "srt" / "server_args.py", *sorted((root / "srt" / "arg_groups").rglob("*.py"))]
    return {str(p.relative_to(root.parent)): p.read_text(errors="replace") for p in paths if p.is_file()}


def prefill_default_from_source(text: str) -> str | None:
    """The default prefill CUDA-graph backend on a CUDA machine, from cuda_graph_config.py. Pure.

    0.5.15+: the CUDA branch of `default_prefill_backend()` (`return Backend.X if is_cuda() else ...`);
    0.5.14: a constant default, `prefill: PhaseConfig = field(default_factory=lambda: PhaseConfig(backend=Backend.X))`.
    """
    match = re.search(r"def default_prefill_backend\(.*?return\s+Backend\.([A-Z_]+)\s+if\s+is_cuda\(\)", text, re.S)
    match = match or re.search(
        r"prefill\s*:\s*PhaseConfig\s*=\s*field\(\s*default_factory\s*=\s*lambda\s*:\s*PhaseConfig\(\s*backend\s*=\s*Backend\.([A-Z_]+)\s*\)",
        text)
    return match.group(1).lower() if match else None


def flags_from_source(
    sources: dict[str, str], sglang: str | None, prefill_default: str | None, import_error: str = "",
    origin: str = "",
) -> PiecewiseFlags:
    """The same facts read from the source text of the parser's modules, when `sglang.srt.server_args` cannot be
    imported here (`import_error` says why) or a release is read from its wheel (`origin` names it). Pure."""
    text = "\n".join(sources.values())
    flags = sorted(set(_PIECEWISE_FLAG.findall(text)))
    actions = []
    for flag in flags:
        field = flag.removeprefix("--").replace("-", "_")
        # `name: bool = False` in the ServerArgs dataclass is the switch's default
        default = re.search(rf"\b{field}\s*:\s*bool\s*=\s*(True|False)", text)
        # the argument's own call: `"--flag", action=DeprecatedAction, help="Deprecated: ..."`, read
        # up to the next add_argument (a closing parenthesis can sit 300+ characters later)
        call = re.search(rf"['\"]{re.escape(flag)}['\"](.*?)(?:add_argument|\Z)", text, re.S)
        deprecated = bool(call and "Deprecated" in call.group(1)[:800])
        actions.append(ActionInfo((flag,), field, default.group(1) == "True" if default else None, nargs=0,
                                  deprecated=deprecated))
    if re.search(rf"""["']{BREAKABLE_SWITCH}["']""", text):  # 0.5.11-0.5.13: `"--enable-breakable-cuda-graph", action="store_true"`
        actions.append(ActionInfo((BREAKABLE_SWITCH,), "enable_breakable_cuda_graph", False, nargs=0))
    # 0.5.16+: `cuda_graph_backend_prefill: A[Optional[Literal["full", ..., "tc_piecewise", ...]], ...]`
    literal = re.search(r"cuda_graph_backend_prefill\s*:\s*\w*\[?\s*Optional\[Literal\[([^\]]*)\]", text)
    if literal:
        choices = tuple(re.findall(r"""["']([a-z_]+)["']""", literal.group(1)))
        actions.append(ActionInfo((PREFILL_BACKEND_FLAG,), "cuda_graph_backend_prefill", choices=choices))
    relevant = [name for name, body in sources.items() if "piecewise" in body or "cuda_graph_backend_prefill" in body]
    files = ", ".join(relevant) or f"{len(sources)} parser files (no piecewise flag in them)"
    why = f"in {origin}" if origin else f"(import of sglang.srt.server_args failed: {import_error})"
    return flags_from_actions(actions, sglang, prefill_default, source=f"source text of {files} {why}")


# --- the per-release switch, as people read it ------------------------------------------------
# One wording for every place that tells a user how to run without piecewise CUDA graphs (the README
# box, compat.md's SGLang section), from each release's own parser facts, never retyped by hand.


def switch_wording(flags: PiecewiseFlags) -> tuple[str, str]:
    """(default, how to turn it off) in the user's words (Markdown), from one release's parser facts. Pure."""
    aliases = f" (or its deprecated alias `{flags.force.split(' ')[0]}`)" if flags.force and "[deprecated]" in flags.force else ""
    if flags.default_state == ON_BY_DEFAULT:
        return "on by default", f"pass `{flags.disable}`"
    if flags.default_state == OPT_IN and flags.enable:
        off = f"do not pass `{flags.enable}`{aliases}"
        if flags.disable:
            off += f"; `{flags.disable}` turns the prefill graphs off entirely"
        return "opt-in", off
    if flags.default_state == NOT_SHIPPED:
        return "not shipped", "nothing to turn off: the release has no torch.compile piecewise backend"
    return "unknown", "not read for this release"


# --- ports SGLang derives from --port --------------------------------------------------------
# Read from each release's server_args.py (0.5.11/0.5.12, 2026-12-01): the gRPC port `self.port + 10000`
# (refused above 65535 at argument parsing), the gRPC sidecar "--port + 1", and with DP attention the ZMQ
# ports from `port + ZMQ_TCP_PORT_DELTA` (233) to `port_base + 4`.
_PORT_PLUS_RE = re.compile(r"(?:\b(?:self|server_args)\.port|--port) \+ (\d+)\b")
_ZMQ_DELTA_RE = re.compile(r"^ZMQ_TCP_PORT_DELTA\s*=\s*(\d+)", re.M)
_PORT_BASE_RE = re.compile(r"\bport_base \+ (\d+)\b")
# What the two releases read above derive; used when no SGLang is installed to read (a CPU machine).
KNOWN_DERIVED_PORT_OFFSETS: tuple[int, ...] = (0, 1, 233, 234, 235, 236, 237, 238, 10000)


def derived_port_offsets_from_source(text: str) -> tuple[int, ...]:
    """Every offset from --port that this server_args.py derives a port at (0 is --port itself). Pure."""
    offsets = {0, *(int(n) for n in _PORT_PLUS_RE.findall(text))}
    delta = _ZMQ_DELTA_RE.search(text)
    if delta:
        dist_init = int(delta.group(1))
        port_base = dist_init + 1  # `port_base = dist_init_port + 1`
        offsets |= {dist_init, port_base, *(port_base + int(n) for n in _PORT_BASE_RE.findall(text))}
    return tuple(sorted(offsets))


def derived_port_offsets() -> tuple[tuple[int, ...], str]:
    """The installed SGLang's derived-port offsets and where they were read (or the known ones, said so)."""
    root = sglang_root()
    sources = _server_args_sources(root) if root is not None else {}
    if not sources:
        return KNOWN_DERIVED_PORT_OFFSETS, "no SGLang installed: the offsets read from 0.5.11/0.5.12's server_args.py"
    offsets = {0}.union(*(derived_port_offsets_from_source(text) for text in sources.values()))
    return tuple(sorted(offsets)), f"read from {', '.join(sorted(sources))} (sglang {installed_version('sglang')})"
