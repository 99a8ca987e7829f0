"""The preflight probe: runs INSIDE the environment that would serve (`python -m pcgkit.preflight.probe`), where
the SGLang release, its FlashInfer and torch are installed, and writes what it found as one JSON document.

Everything it decides is decided by that release's own code: its parser (`ServerArgs.add_cli_args`), its start-up
auto-disable checks (`ServerArgs._handle_piecewise_cuda_graph`; from 0.5.14 `_handle_cuda_graph_config`, which
resolves the prefill backend), the runner its capture code builds (pcgkit.sglang.runners: the breakable runner
uses no torch.compile, so nothing is traced for it), its quantization resolution (`ModelConfig._verify_quantization`,
`get_quant_config`), the linear method on a real `ReplicatedLinear`, and `install_torch_compiled` with the runner's
`fullgraph`. Only the checkpoint's JSON files are read: never a weight, never the hub (HF_HUB_OFFLINE=1). The trace
runs under the simulated architecture and the no-kernel guard, as the SGLang-level case does, and never runs the
graph; shapes are tiny (pcgkit.preflight.resolve).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any, Sequence

SCHEMA = "pcgkit.preflight-probe/1"
PREFIX = "model.layers.0.mlp.down_proj"  # a dense projection every decoder layer has (exclusion lists name these)


# Whose fault a probe that stops is, named first in the answer (exit 11, never exit 4 "check the pins"):
LAUNCH, CHECKPOINT, RELEASE, ENVIRONMENT = "the launch arguments", "the checkpoint", "the release", "the environment"
MAX_CONFIG_BYTES = 16 << 20  # a config.json is kilobytes; /dev/zero or a weight file named config.json is not one


class Unresolved(Exception):
    """The launch cannot be resolved far enough to trace: the answer is `unknown` with this reason."""

    def __init__(self, message: str, fault: str | None = None):
        super().__init__(message)
        self.fault = fault


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print usage and exit: the kit reports it instead
        raise Unresolved(f"the release's own parser refuses them: {message}", LAUNCH)


def parse_launch(argv: Sequence[str]) -> argparse.Namespace:
    from sglang.srt.server_args import ServerArgs

    parser = _Parser(prog="python -m sglang.launch_server", add_help=False)
    ServerArgs.add_cli_args(parser)
    return parser.parse_args(list(argv))


def known_architectures(sglang_root: Path) -> set[str]:
    """Every class named by an `EntryClass = ...` in the release's sglang/srt/models/ (read with ast, not imported)."""
    names: set[str] = set()
    for path in (sglang_root / "srt" / "models").rglob("*.py"):
        try:
            tree = ast.parse(path.read_text(errors="replace"))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets):
                values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
                names |= {v.id for v in values if isinstance(v, ast.Name)}
    return names


def read_checkpoint_config(model_path: str) -> dict:
    folder = Path(model_path)
    if not folder.is_dir():
        raise Unresolved(f"--model-path {model_path!r} is not a local folder here: preflight reads a checkpoint's "
                         "config.json (and hf_quant_config.json) from a folder and never downloads")
    from pcgkit.errors import UsageError
    from pcgkit.util.atomic import parse_json, read_user_bytes

    config_file = folder / "config.json"
    try:  # bounded and a regular file only: a FIFO or /dev/zero named config.json is refused, never read
        config = parse_json(read_user_bytes(config_file, "config.json", limit=MAX_CONFIG_BYTES), str(config_file))
    except (UsageError, ValueError) as exc:
        raise Unresolved(str(exc), CHECKPOINT) from None
    if not isinstance(config, dict):
        raise Unresolved(f"{config_file}: not a JSON object", CHECKPOINT)
    text_config = config.get("text_config")
    for table in (config, text_config if isinstance(text_config, dict) else {}):
        for key in SIZE_FIELDS:  # NaN, 0, "4096" or 1.5 would reach SGLang's shape arithmetic as a crash
            value = table.get(key)
            if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
                raise Unresolved(f"{config_file}: {key} is {value!r}, expected a whole number > 0", CHECKPOINT)
    return config


# The sizes of a checkpoint's config.json that shape the traced layer: each, where present, a positive whole number.
SIZE_FIELDS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
               "vocab_size")


def bare_model_config(config: dict, args: argparse.Namespace):
    """SGLang's ModelConfig without its constructor (which loads transformers' AutoConfig): only the fields its
    quantization resolution reads. The resolution itself is SGLang's method."""
    from sglang.srt.configs.model_config import ModelConfig

    model_config = ModelConfig.__new__(ModelConfig)
    model_config.model_path = args.model_path
    model_config.revision = getattr(args, "revision", None)
    model_config.quantization = getattr(args, "quantization", None)
    # config.json as the attribute objects SGLang's quantization code reads (getattr(hf_config, ...))
    model_config.hf_config = types.SimpleNamespace(**config)
    model_config.hf_text_config = types.SimpleNamespace(**(config.get("text_config") or config))
    model_config.is_draft_model = False
    # What the auto-disable check reads (ServerArgs._handle_piecewise_cuda_graph), computed by the same
    # module-level functions ModelConfig.__init__ calls, where this release has them.
    from sglang.srt.configs import model_config as model_config_module

    architectures = list(config.get("architectures") or [])
    disabled = getattr(model_config_module, "is_piecewise_cuda_graph_disabled_model", None)
    nsa = getattr(model_config_module, "is_deepseek_nsa", None)
    if disabled is not None:
        model_config.is_piecewise_cuda_graph_disabled_model = bool(
            disabled(architectures) or (nsa(model_config.hf_text_config) if nsa else False))
    multimodal = getattr(model_config_module, "is_multimodal_model", None)
    if multimodal is not None:
        model_config.is_multimodal = bool(multimodal(architectures))
    model_config._verify_quantization()
    return model_config


def _server_args_values(args: argparse.Namespace) -> dict[str, Any]:
    """Every ServerArgs field at its dataclass default, then what the parser produced (the parser does not carry
    every field the checks read, e.g. pp_size): what ServerArgs(**parsed) holds before __post_init__."""
    import dataclasses

    from sglang.srt.server_args import ServerArgs

    values = {f.name: f.default for f in dataclasses.fields(ServerArgs) if f.default is not dataclasses.MISSING}
    values.update({f.name: f.default_factory() for f in dataclasses.fields(ServerArgs)
                   if f.default_factory is not dataclasses.MISSING})
    return {**values, **vars(args)}


def auto_disable(args: argparse.Namespace, model_config) -> tuple[str | None, str]:
    """(why SGLang turns piecewise off at start-up or None, how that was found): SGLang's own check, run on the
    parsed arguments with its hardware questions answered as a CUDA machine."""
    from sglang.srt.server_args import ServerArgs

    check = getattr(ServerArgs, "_handle_piecewise_cuda_graph", None)
    if check is None:
        return None, ("this release has no ServerArgs._handle_piecewise_cuda_graph (from 0.5.14 its checks are in "
                      "_handle_cuda_graph_config: see prefill_backend_resolution)")
    holder = types.SimpleNamespace(**_server_args_values(args))
    holder.get_model_config = lambda: model_config
    field = "disable_piecewise_cuda_graph"
    before = getattr(holder, field, None)
    try:
        check(holder)
    except Exception as exc:  # noqa: BLE001 - recorded: the answer says the check could not run
        return None, f"ServerArgs._handle_piecewise_cuda_graph could not run here: {type(exc).__name__}: {str(exc)[:200]}"
    if before is not True and getattr(holder, field, None) is True:
        return "ServerArgs._handle_piecewise_cuda_graph sets disable_piecewise_cuda_graph for this launch", "ran SGLang's check"
    return None, "ran ServerArgs._handle_piecewise_cuda_graph: it keeps piecewise graphs as the flags say"


def resolved_prefill_backend(args: argparse.Namespace, model_config) -> tuple[str | None, str]:
    """(the prefill backend or None, how found): 0.5.14+'s `ServerArgs._handle_cuda_graph_config` (flags, aliases,
    defaults, auto-disable rules), run on the parsed values with hardware questions answered as a CUDA machine."""
    from sglang.srt.server_args import ServerArgs

    if not hasattr(ServerArgs, "_handle_cuda_graph_config"):
        return None, "this release has no per-phase CUDA graph config"
    server_args = ServerArgs.__new__(ServerArgs)  # no __post_init__: it would load the model config from the hub
    server_args.__dict__.update(_server_args_values(args))
    server_args.model_config = model_config
    server_args.get_model_config = lambda: model_config
    try:
        server_args._handle_cuda_graph_config()
        backend = server_args.cuda_graph_config.prefill.backend
    except Exception as exc:  # noqa: BLE001 - recorded: the state then comes from the flags and the runner facts
        return None, f"ServerArgs._handle_cuda_graph_config could not run here: {type(exc).__name__}: {str(exc)[:200]}"
    name = str(getattr(backend, "value", backend))
    return name, f"ran ServerArgs._handle_cuda_graph_config: prefill.backend={name}"


def installed_runner_facts(root: Path, version: str | None) -> tuple[dict | None, str]:
    """(which runner capture builds, where read): the installed release's own model_executor code, read by the same
    reader as its wheel (pcgkit.sglang.runners); the kit's table of the wheels where the files cannot be read."""
    from pcgkit.sglang.runners import runner_facts_from_texts

    folder = root / "srt" / "model_executor"
    try:
        if not folder.is_dir():
            raise OSError(f"no {folder}")
        texts = {f"sglang/{path.relative_to(root).as_posix()}": path.read_text(errors="replace")
                 for path in folder.rglob("*.py")}
        facts = runner_facts_from_texts(texts)
    except (OSError, ValueError) as exc:
        from pcgkit import resources
        from pcgkit.sglang.releases import TABLE_FILE, parse_table, runner_facts

        table = parse_table(json.loads(resources.fixture(TABLE_FILE).read_text()))
        table_facts, source = runner_facts(table, version or "")
        where = f"{table_facts.selected_at}, " if table_facts and table_facts.selected_at else ""
        return (table_facts.to_dict() if table_facts else None), (
            f"the kit's table of release wheels ({where}{source}; the installed files could not be read: {exc})")
    return facts.to_dict(), (f"the installed sglang {version}'s own code "
                             f"({facts.selected_at or 'no breakable runner in sglang/srt/model_executor'})")


LOADER = "srt/model_loader/loader.py"  # under the sglang package: where the model-load capability check lives


def load_capability_check(model_config, sglang_root: Path) -> dict:
    """The release's model-load check that the GPU is new enough for the quantization (`capability_refusal`), where
    its loader has one, with its own operands: `get_device_capability` and the quant config's `get_min_capability()`."""
    from pcgkit.preflight.resolve import capability_refusal

    if not model_config.quantization:
        return {"ran": False, "why": "no quantization: the loader checks nothing"}
    loader = sglang_root / LOADER
    if "get_min_capability()" not in (loader.read_text(errors="replace") if loader.is_file() else ""):
        return {"ran": False, "why": f"sglang/{LOADER} has no minimum-capability check in this release"}
    try:
        from sglang.srt.configs.load_config import LoadConfig
        from sglang.srt.model_loader.weight_utils import get_quant_config
        from sglang.srt.utils import get_device_capability

        quant_config = get_quant_config(model_config, LoadConfig(), {})
        current = tuple(get_device_capability())
    except Exception as exc:  # noqa: BLE001 - recorded; the trace's own get_quant_config stage reports it again
        return {"ran": False, "why": f"could not run here: {type(exc).__name__}: {str(exc)[:200]}"}
    if quant_config is None:
        return {"ran": False, "why": "get_quant_config returned no config: the loader checks nothing"}
    minimum = quant_config.get_min_capability()
    return {"ran": True, "read_from": f"sglang/{LOADER} (_get_quantization_config)", "min_capability": minimum,
            "device_capability": list(current),
            "refusal": capability_refusal(model_config.quantization, minimum, current)}


def _dtype(args: argparse.Namespace, config: dict):
    import torch

    chosen = getattr(args, "dtype", "auto")
    if chosen in ("float16", "half"):
        return torch.float16
    if chosen == "auto" and config.get("torch_dtype") == "float16":
        return torch.float16
    return torch.bfloat16


# Weight post-processing moves tensors with `.cuda()` (e.g. 0.5.8's NVFP4 scale interleave); with no GPU here
# the move is answered as "stays where it is": shapes and dtypes are unchanged, values never matter (the graph
# never runs). Recorded in the probe's `simulation_replaced`, like every other answered query.
WEIGHT_MOVE_STAND_IN = "torch.Tensor.cuda (identity, weight post-processing only)"


@contextlib.contextmanager
def weights_stay_on_cpu():
    from unittest import mock

    import torch

    with mock.patch.object(torch.Tensor, "cuda", lambda self, *args, **kwargs: self):
        yield


def _dense_layer(model_config, features: int, dtype, found: dict):
    """SGLang's ReplicatedLinear with the checkpoint's quantization config (its class and linear method in `found`)."""
    from sglang.srt.layers.linear import ReplicatedLinear

    from pcgkit.sglang.cudastub import stage

    quant_config = None
    if model_config.quantization:
        from sglang.srt.configs.load_config import LoadConfig
        from sglang.srt.model_loader.weight_utils import get_quant_config

        quant_config = stage("get_quant_config", lambda: get_quant_config(model_config, LoadConfig(), {}))
    found["quant_config"] = type(quant_config).__name__ if quant_config is not None else None
    layer = stage("ReplicatedLinear", lambda: ReplicatedLinear(
        features, features, bias=False, params_dtype=dtype, quant_config=quant_config, prefix=PREFIX))
    found["linear_method"] = f"{type(layer.quant_method).__module__}.{type(layer.quant_method).__qualname__}"
    return layer


def _observation(outcome, graphs: list, found: dict):
    """What the trace saw, for the sweep's classifier: traced (with its graph's ops), a CUDA-only call the stand-in
    stopped (needs a GPU), or a raise (its signature also in `found`)."""
    from pcgkit.sglang.cudastub import stub_reached
    from pcgkit.sweep.classify import Observation
    from pcgkit.sweep.engine import graph_op_names

    if outcome.traced:
        return Observation("traced", graph_ops=graph_op_names(graphs))
    sig = outcome.signature
    text = " ".join(filter(None, (sig.message_head, sig.explanation))) if sig else ""
    called = stub_reached(text)
    found["signature"] = sig.to_dict() if sig else None
    return (Observation("needs-gpu", f"apply calls {called} (CUDA-only; stubbed for import here)", signature=sig)
            if called else Observation("raised", signature=sig))


def trace_dense_layer(args, config: dict, model_config, capability: tuple[int, int], fullgraph: bool,
                      simulated: bool = True) -> dict:
    """A real ReplicatedLinear with the checkpoint's quantization config, its apply compiled by install_torch_compiled.
    Simulated: on the CPU, hardware queries answered as `capability`; real: on the GPU, nothing answered."""
    import torch
    from sglang.srt.compilation.compile import install_torch_compiled

    from pcgkit.harness.tracing import observe
    from pcgkit.preflight.resolve import model_shape, tiny_features
    from pcgkit.sglang.case import ensure_compiled_of
    from pcgkit.sglang.cudastub import fill_weights, sglang_sees_cuda, stage
    from pcgkit.sweep.classify import Observation, classify
    from pcgkit.sweep.engine import SetupFailed
    from pcgkit.sweep.guard import no_kernels
    from pcgkit.values.signature import package_relative

    features = tiny_features(model_shape(config).hidden_size)
    dtype = _dtype(args, config)
    found: dict[str, Any] = {"in_features": features, "out_features": features, "dtype": str(dtype).removeprefix("torch."),
                             "prefix": PREFIX}
    where: contextlib.AbstractContextManager = contextlib.nullcontext() if simulated else torch.device("cuda")
    sees_cuda = (lambda: sglang_sees_cuda(capability)) if simulated else contextlib.nullcontext

    def failed(exc: SetupFailed) -> dict:
        cause = exc.__cause__ or exc
        found["stage_frames"] = [f"{package_relative(f.filename)}:{f.lineno}:{f.name}"
                                 for f in traceback.extract_tb(cause.__traceback__)][-8:]
        found["observation"] = classify(Observation("needs-gpu" if exc.needs_gpu else "build-error", str(exc))).to_dict()
        return found

    # Building the layer is set-up a model load does at import/constructor time (SGLang imports its MoE and
    # communication modules lazily here; FlashInfer's comm module opens libcudart at import): outside the
    # no-kernel guard. Weight post-processing and the trace run inside it.
    with where:
        try:
            with sees_cuda():
                layer = _dense_layer(model_config, features, dtype, found)
        except SetupFailed as exc:
            return failed(exc)
    guard: contextlib.AbstractContextManager = no_kernels() if simulated else contextlib.nullcontext([])
    with guard as refusals, where:
        try:
            with sees_cuda():
                stage("fill weights", lambda: fill_weights(layer))
                with (weights_stay_on_cpu() if simulated else contextlib.nullcontext()):
                    stage("process_weights_after_loading", lambda: layer.quant_method.process_weights_after_loading(layer))
        except SetupFailed as exc:
            return failed(exc)

        class DenseLayer(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.layer = layer

            def forward(self, x: torch.Tensor):  # annotation: SGLang infers the dynamic dim from it
                return self.layer(x)[0]

        module = DenseLayer()
        x = torch.zeros(4, features, dtype=dtype)
        graphs: list = []

        def invoke(backend):
            install_torch_compiled(module, backend_factory=backend, fullgraph=fullgraph)
            return ensure_compiled_of(module)(module, x)

        outcome = observe(invoke, execute=False, graphs=graphs)
    found["refused_kernel_loads"] = [[r.event, r.detail] for r in refusals]
    found["observation"] = classify(_observation(outcome, graphs, found)).to_dict()
    found["lru_cache_warnings"] = list(outcome.lru_cache_warnings)
    return found


def _parsed_flags(args) -> dict:
    """The parsed launch arguments the answer depends on (the model, quantization, graphs and compile switches)."""
    return {k: v for k, v in sorted(vars(args).items())
            if k in ("model_path", "quantization", "dtype", "disable_cuda_graph", "enable_torch_compile")
            or "piecewise" in k or "breakable" in k or k == "cuda_graph_backend_prefill"}


def _checked_model_config(config: dict, args):
    """SGLang's own ModelConfig of the checkpoint; Unresolved (the checkpoint's fault) where its quantization check
    refuses the pair, or its quantization code cannot read the checkpoint's quantization config."""
    try:
        return bare_model_config(config, args)
    except ValueError as exc:  # SGLang's own refusal of the checkpoint/quantization pair
        raise Unresolved(f"SGLang's quantization check refuses this checkpoint: {exc}", CHECKPOINT) from exc
    except (KeyError, TypeError, AttributeError) as exc:  # a quant config without a field SGLang reads
        raise Unresolved(f"SGLang's quantization code cannot read this checkpoint's quantization config "
                         f"(hf_quant_config.json / quantization_config): {type(exc).__name__}: {exc}",
                         CHECKPOINT) from exc


def _raise_if_refused_at_load(doc: dict) -> None:
    """Unresolved where the release's own load check refuses the launch on the answered GPU (before any capture)."""
    if refusal := doc["load_check"].get("refusal"):
        raise Unresolved(f"sglang {doc['versions']['sglang']} refuses this launch at model load, before any "
                         f"piecewise capture, on a GPU of compute capability "
                         f"{'.'.join(map(str, doc['load_check']['device_capability']))}: {refusal} "
                         f"(its own check, {doc['load_check']['read_from']})")


def _checkpoint_model(doc: dict, model_path: str, root) -> dict:
    """The checkpoint's config.json, its shape in `doc["model"]`; Unresolved where the release registers none of its
    model classes."""
    from pcgkit.preflight.resolve import model_shape

    config = read_checkpoint_config(model_path)
    shape = model_shape(config)
    doc["model"] = {"architectures": list(shape.architectures), "hidden_size": shape.hidden_size,
                    "moe": list(shape.moe_keys)}
    known = known_architectures(root)
    if not shape.architectures or not set(shape.architectures) & known:
        raise Unresolved(f"config.json's architectures {list(shape.architectures)} are not among the "
                         f"{len(known)} model classes sglang {doc['versions']['sglang']} registers")
    return config


def _runner_compile(doc: dict, args, root) -> bool:
    """Whether the release's piecewise runner compiles with fullgraph=True (read from its source), in
    `doc["compile"]`; Unresolved for a release older than piecewise graphs (nothing to capture, nothing to judge)."""
    from pcgkit.harness.casekit import NotApplicable
    from pcgkit.sglang.case import runner_fullgraph

    try:
        fullgraph, read_from = runner_fullgraph(root)
    except NotApplicable as exc:
        raise Unresolved(f"sglang {doc['versions']['sglang']} has no piecewise CUDA graph runner to judge "
                         f"({exc})", RELEASE) from exc
    doc["compile"] = {"wrapper": "sglang.srt.compilation.compile.install_torch_compiled",
                      "fullgraph": fullgraph, "fullgraph_read_from": read_from,
                      "compiler": getattr(args, "piecewise_cuda_graph_compiler", None)}
    return fullgraph


def probe(arch: str, launch_argv: Sequence[str]) -> dict:
    """Resolve and trace one launch (see the module docstring); every step's finding in the returned document."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # never the hub: a path that is not a local folder is `unknown`
    from pcgkit.harness.simulate import simulated_sm120
    from pcgkit.harness.versions import installed_version
    from pcgkit.preflight.resolve import piecewise_state
    from pcgkit.sglang import facts as sglang_facts
    from pcgkit.sglang.cudastub import sgl_kernel_stubbed, sglang_sees_cuda
    from pcgkit.sglang.dispatch import installed_dispatch

    device, simulated = target_device(arch)
    doc: dict[str, Any] = {
        "schema": SCHEMA, "arch": arch, "device": device.to_dict() if device else None, "simulated": simulated,
        "launch": list(launch_argv),
        "versions": {name: installed_version(name) for name in ("sglang", "flashinfer-python", "torch")},
    }
    start = time.perf_counter()
    stage = ENVIRONMENT  # whose fault an unexpected exception is, by the step that raised it
    try:
        root = sglang_facts.sglang_root()
        if doc["versions"]["sglang"] is None or root is None:
            raise Unresolved("sglang is not installed in this environment")
        if device is None:
            raise Unresolved("--arch auto: no CUDA GPU is visible here; name sm120, sm100 or sm90 to answer for a "
                             "simulated one")
        sees_cuda = (lambda: sglang_sees_cuda(device.capability)) if simulated else (lambda: contextlib.nullcontext(()))
        simulation_context = simulated_sm120(capability=device.capability) if simulated else contextlib.nullcontext(None)
        # Under a simulation the stand-in, even on a GPU host (where the real package would load the build for
        # the answered architecture, not this GPU's): the same simulation as on a CPU machine.
        with simulation_context as simulation, sgl_kernel_stubbed(always=simulated) as stubbed:
            doc["sgl_kernel"] = "stubbed (import only)" if stubbed else "installed"
            stage = RELEASE
            with sees_cuda() as sglang_queries:
                args = parse_launch(launch_argv)
                flags = sglang_facts.piecewise_flags().to_dict()
            doc["piecewise_flags"] = flags
            doc["parsed"] = _parsed_flags(args)
            stage = CHECKPOINT
            config = _checkpoint_model(doc, args.model_path, root)
            with sees_cuda():
                model_config = _checked_model_config(config, args)
                stage = RELEASE
                doc["load_check"] = load_capability_check(model_config, root)
                auto, how = auto_disable(args, model_config)
                resolved, resolved_how = resolved_prefill_backend(args, model_config)
            runners, runners_source = installed_runner_facts(root, doc["versions"]["sglang"])
            doc["quantization"] = model_config.quantization
            doc["runners"] = runners
            state = piecewise_state(flags, vars(args), auto, runners, runners_source, resolved)
            doc["piecewise"] = {**state.to_dict(), "auto_disable_check": how,
                                "prefill_backend_resolution": resolved_how}
            _raise_if_refused_at_load(doc)
            fullgraph = _runner_compile(doc, args, root)
            stage = ENVIRONMENT
            try:
                doc["fp4_dispatch"] = {fam: b.to_dict() for fam, b in installed_dispatch().items()}
            except Exception as exc:  # noqa: BLE001 - evidence only
                doc["fp4_dispatch"] = {"error": f"{type(exc).__name__}: {exc}"}
            if state.on:
                doc["dense"] = trace_dense_layer(args, config, model_config, device.capability, fullgraph, simulated)
            if simulation is not None:
                replaced = set(simulation.replaced) | set(sglang_queries)
                if "dense" in doc:
                    replaced.add(WEIGHT_MOVE_STAND_IN)
                doc["simulation_replaced"] = sorted(replaced)
    except Unresolved as exc:
        doc["fault"] = exc.fault or stage
        doc["unresolved"] = f"{doc['fault']}: {exc}"
    except Exception as exc:  # noqa: BLE001 - the probe must always answer, naming whose step broke
        doc["fault"] = stage
        doc["unresolved"] = f"{stage}: {type(exc).__name__} while resolving the launch: {str(exc)[:300]}"
    if simulated:  # asked after the simulation, so the real GPU is never initialised under it
        from pcgkit.harness.hardware import detect_cuda_devices, simulated_beside

        doc["device"] = simulated_beside(device, detect_cuda_devices()).to_dict()
    doc["duration_s"] = round(time.perf_counter() - start, 3)
    return doc


def target_device(arch: str):
    """(Device, simulated): a simulated family, or with `auto` this machine's first real GPU (None when there is none)."""
    from pcgkit.harness.hardware import SIMULATED_ARCHES, detect_cuda_devices

    if arch != "auto":
        return SIMULATED_ARCHES[arch], True
    devices = detect_cuda_devices()
    return (devices[0] if devices else None), False


# The answer's parts the kit reads back (commands/preflight, preflight/answer): each a table, or absent or null.
ANSWER_TABLES = ("versions", "device", "piecewise", "piecewise_flags", "dense", "model", "load_check")


def answer_problem(doc: object) -> str | None:
    """What makes a probe's answer unreadable to this kit (another kit's probe, a damaged file); None: readable. Pure."""
    if not isinstance(doc, dict):
        return f"the answer is a JSON {type(doc).__name__}, not an object"
    parts = [(key, doc.get(key)) for key in ANSWER_TABLES]
    dense = doc.get("dense")
    if isinstance(dense, dict):
        parts += [(f"dense.{key}", dense.get(key)) for key in ("observation", "signature")]
    bad = next(((key, value) for key, value in parts if value is not None and not isinstance(value, dict)), None)
    if bad is not None:
        return f"{bad[0]} is {type(bad[1]).__name__} {str(bad[1])[:40]!r}, not a table"
    if doc.get("unresolved") is not None and not isinstance(doc["unresolved"], str):
        return f"unresolved is {type(doc['unresolved']).__name__}, not text"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    launch = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(prog="python -m pcgkit.preflight.probe")
    parser.add_argument("--arch", default="sm120")
    parser.add_argument("--json", type=Path, required=True)
    args = parser.parse_args(own)
    doc = probe(args.arch, launch)
    args.json.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
