"""The SGLang side of the sweep, a workshop measurement: each quantization method's linear `apply`, compiled the
way the piecewise runner compiles it, per simulated arch (issue 19 item 2; the committed sample
reports/samples/sweep-sglang-0.5.8-simulated). `python -m lab.sweep.sglang_methods --arch X`.

Per method (lab/sweep/sglang_methods.toml, read by load_methods below): the config from its checkpoint dict
(`Config.from_config`), the LinearMethod, `create_weights` on a bare nn.Module with tiny shapes,
`process_weights_after_loading`, then a one-layer module whose forward is `apply(layer, x)`, handed
to SGLang's own `install_torch_compiled` with the `fullgraph` the runner passes in this release
(pcgkit.sglang.case.runner_fullgraph) and a backend that never runs the graph (tracing.observe,
execute=False); the trampoline's `_ensure_compiled` is SGLang's torch.compile call. Classified with
the sweep's classes (pcgkit.sweep.classify) under the no-kernel guard (pcgkit.sweep.guard), each step of the
eager set-up through the one guard (pcgkit.sglang.cudastub.stage, on pcgkit.sweep.engine.eager_setup); the
result is the sweep engine's row shape (pcgkit.sweep.engine.ClassifiedRow).

One arch per process: sglang binds kernels at import time behind `is_sm100_supported()` and the
like, so the modules are imported inside that arch's simulation and are not reused across arches
(`run_all_arches` starts one `python -m lab.sweep.sglang_methods --arch X` per arch). sgl_kernel is
stubbed for import only (pcgkit.sglang.cudastub): a method that *calls* it is `needs-gpu`.
MoE methods are not swept yet: their apply takes a DispatchOutput from the MoE runner.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import tomllib
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from pcgkit.harness.hardware import SIMULATED_ARCHES
from pcgkit.sglang.cudastub import fill_weights, stage, stub_reached
from pcgkit.sweep.classify import Observation, classify, verdict_for
from pcgkit.sweep.engine import ClassifiedRow, SetupFailed
from pcgkit.sweep.guard import no_kernels

TORCH_DTYPES = {"bf16": "bfloat16", "f16": "float16"}


QUANT_PACKAGE = "sglang.srt.layers.quantization"
TRITON_DRIVER_FRAME = "triton/runtime/driver.py"


@dataclasses.dataclass(frozen=True)
class MethodResult(ClassifiedRow):
    method_id: str = ""
    sglang: str = ""
    flashinfer: str | None = None  # the FlashInfer beside it (the FP4 and JIT paths run through it)
    fullgraph: dict = dataclasses.field(default_factory=dict)
    simulated: bool = True
    sgl_kernel: str = ""  # "stubbed (import only)" | "installed"
    tp_group: str = ""  # how the one-rank tensor-parallel group was set up (or why not)


def _resolve(dotted: str) -> Any:
    module, _, attr = dotted.rpartition(".")
    return getattr(importlib.import_module(module), attr, None)


def build_layer(spec: MethodSpec):
    """(layer module, the LinearMethod) after create_weights + process_weights_after_loading."""
    import torch
    from sglang.srt.layers import quantization

    dtype = getattr(torch, TORCH_DTYPES[spec.dtype])
    if spec.method:
        config_cls = quantization.QUANTIZATION_METHODS[spec.method]
        config = stage("from_config", lambda: config_cls.from_config(spec.config_dict()))
        method_cls = _resolve(spec.linear_method)
        method = stage("LinearMethod()", lambda: method_cls(config))
    else:
        method = stage("LinearMethod()", lambda: _resolve(spec.linear_method)())
    layer = torch.nn.Module()
    # keywords, as ColumnParallelLinear passes them (sglang/srt/layers/linear.py)
    stage("create_weights", lambda: method.create_weights(
        layer=layer, input_size_per_partition=spec.in_features, output_partition_sizes=[spec.out_features],
        input_size=spec.in_features, output_size=spec.out_features, params_dtype=dtype,
        weight_loader=lambda *a, **k: None))
    stage("fill weights", lambda: fill_weights(layer))
    stage("process_weights_after_loading", lambda: method.process_weights_after_loading(layer))
    return layer, method


def apply_module(layer, method):
    """A one-layer module whose forward is the method's apply (what a LinearBase.forward calls)."""
    import torch

    class SGLangQuantLinear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = layer

        def forward(self, x: torch.Tensor):  # annotation: SGLang infers the dynamic dim from it
            return method.apply(self.layer, x, None)

    return SGLangQuantLinear()


def observe_method(spec: MethodSpec, fullgraph: bool, capability: tuple[int, int]) -> Observation:
    """Build and trace one method (inside the caller's simulation); never runs the graph.

    sglang's CUDA checks answer "yes" during set-up only: under the trace, torch.cuda.is_available()
    makes dynamo itself save the CUDA RNG state (torch/cuda/random.py), which needs a driver.
    """
    import torch
    from sglang.srt.compilation.compile import install_torch_compiled

    from pcgkit.harness.tracing import observe
    from pcgkit.sglang.case import ensure_compiled_of
    from pcgkit.sglang.cudastub import sglang_sees_cuda
    from pcgkit.sweep.engine import graph_op_names

    with no_kernels() as refusals:
        try:
            with sglang_sees_cuda(capability):
                layer, method = build_layer(spec)
        except SetupFailed as exc:
            return Observation("needs-gpu" if exc.needs_gpu else "build-error", str(exc))
        module = apply_module(layer, method)
        x = torch.zeros(spec.batch, spec.in_features, dtype=getattr(torch, TORCH_DTYPES[spec.dtype]))
        graphs: list = []

        def invoke(backend):
            install_torch_compiled(module, backend_factory=backend, fullgraph=fullgraph)
            return ensure_compiled_of(module)(module, x)

        outcome = observe(invoke, execute=False, graphs=graphs)
    refused = tuple((r.event, r.detail, r.in_fake_dispatch) for r in refusals)
    if outcome.traced:
        return Observation("traced", graph_ops=graph_op_names(graphs), refused=refused)
    sig = outcome.signature
    text = " ".join(filter(None, (sig.message_head, sig.explanation))) if sig else ""
    if called := stub_reached(text):
        return Observation("needs-gpu", f"apply calls {called} (CUDA-only; stubbed for import here)",
                           signature=sig, refused=refused)
    if sig and any(frame.file.startswith(TRITON_DRIVER_FRAME) for frame in sig.frame_chain):
        # dynamo wraps a triton kernel launch as one op only when torch sees a GPU (has_triton());
        # here it inlines JITFunction.run into triton's driver probe: the simulation's gap, not sglang's
        return Observation("build-error", f"simulation gap (triton launch probes its GPU driver) at {_sglang_frame(sig)}",
                           signature=sig, refused=refused)
    return Observation("raised", signature=sig, refused=refused)


def _sglang_frame(sig) -> str:
    return next((f.short for f in reversed(sig.frame_chain) if f.file.startswith("sglang/")), "?")


def sweep_arch(arch: str, specs: Sequence[MethodSpec]) -> list[MethodResult]:
    """Every method on one simulated arch. Imports sglang: call once per process (module docstring)."""
    import torch

    from pcgkit.harness.simulate import simulated_sm120
    from pcgkit.harness.versions import installed_version
    from pcgkit.sglang import facts as sglang_facts
    from pcgkit.sglang.case import runner_fullgraph
    from pcgkit.sglang.cudastub import sgl_kernel_stubbed, sglang_sees_cuda

    version = installed_version("sglang")
    root = sglang_facts.sglang_root()
    if version is None or root is None:
        raise LookupError("sglang is not installed in this environment")
    fullgraph, where = runner_fullgraph(root)
    device = SIMULATED_ARCHES[arch]
    results = []
    with simulated_sm120(capability=device.capability) as simulation, sgl_kernel_stubbed() as stubbed:
        with sglang_sees_cuda(device.capability) as sglang_queries:
            importlib.import_module(QUANT_PACKAGE)  # under this arch: import-time kernel bindings answer as it
        tp_group = single_rank_tp_group()
        for spec in specs:
            start = time.perf_counter()
            if not spec.applies_to(version):
                obs = Observation("missing", f"spec applies to sglang {spec.releases}; installed {version}")
            elif spec.method and spec.method not in importlib.import_module(QUANT_PACKAGE).QUANTIZATION_METHODS:
                obs = Observation("missing", f"QUANTIZATION_METHODS has no {spec.method!r} in sglang {version}")
            elif _resolve_or_none(spec.linear_method) is None:
                obs = Observation("missing", f"{spec.linear_method} does not exist in sglang {version}")
            else:
                obs = observe_method(spec, fullgraph, device.capability)
            cls = classify(obs)
            results.append(MethodResult(
                method_id=spec.id, arch=arch, sglang=version, torch=torch.__version__,
                flashinfer=installed_version("flashinfer-python"), classification=cls,
                verdict=verdict_for(cls, None).value, fullgraph={"value": fullgraph, "read_from": where},
                simulated=True, sgl_kernel="stubbed (import only)" if stubbed else "installed",
                simulation_replaced=tuple(simulation.replaced) + sglang_queries, refused=obs.refused,
                tp_group=tp_group,
                signature=obs.signature.to_dict() if obs.signature else None,
                duration_s=round(time.perf_counter() - start, 3)))
    return results


def single_rank_tp_group() -> str:
    """A one-rank gloo TP group, as a 1-GPU server has (create_weights asks its size); or why not."""
    import socket

    from sglang.srt.distributed import parallel_state as ps

    try:
        with socket.socket() as sock:  # a free local port for the one-rank rendezvous
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        ps.init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                        distributed_init_method=f"tcp://127.0.0.1:{port}")
        ps.initialize_model_parallel(tensor_model_parallel_size=1)
    except Exception as exc:  # noqa: BLE001 - recorded: the methods that need it then say so
        return f"not initialised: {type(exc).__name__}: {str(exc)[:160]}"
    return "gloo, world size 1"


def _resolve_or_none(dotted: str) -> Any:
    try:
        return _resolve(dotted)
    except ImportError:
        return None


def run_all_arches(python: str, arches: Sequence[str], out_dir: Path) -> list[dict]:
    """One fresh process per arch (see the module docstring); the rows of all of them."""
    from pcgkit.util import proc

    rows: list[dict] = []
    for arch in arches:
        out = out_dir / f"sglang-quant-{arch}.json"
        done = proc.run([python, "-m", "lab.sweep.sglang_methods", "--arch", arch, "--json", str(out)])
        if not done.ok:
            raise RuntimeError(f"the {arch} sweep process failed ({done.returncode}): {done.output_tail[-400:]}")
        rows += json.loads(out.read_text())
    return rows


def readiness_rows(rows: Sequence[dict]) -> list[tuple[str, ...]]:
    """(method, class per arch...) rows for the readiness table, arches in SIMULATED_ARCHES order. Pure."""
    arches = [a for a in SIMULATED_ARCHES if any(r["arch"] == a for r in rows)]
    by = {(r["method_id"], r["arch"]): r["classification"]["class"] for r in rows}
    methods = list(dict.fromkeys(r["method_id"] for r in rows))
    return [(m, *(by.get((m, a), "-") for a in arches)) for m in methods]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.sweep.sglang_methods", description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=sorted(SIMULATED_ARCHES), required=True)
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--only", action="append", default=[], help="method id (repeatable)")
    args = parser.parse_args(argv)
    specs = [s for s in load_methods() if not args.only or s.id in args.only]
    results = sweep_arch(args.arch, specs)
    for r in results:
        print(f"{r.arch:6} {r.method_id:16} {r.classification.cls.value:22} {r.classification.where[:110]}")
    if args.json:
        args.json.write_text(json.dumps([r.to_dict() for r in results], indent=1, default=str))
    return 0




SCHEMA = "pcgkit.sglang-quant-methods/1"


SPEC_FILE = "sglang_methods.toml"


DTYPES = ("bf16", "f16")


class MethodSpecError(ValueError):
    """The method table is malformed (a kit defect, reported with the method id)."""


@dataclasses.dataclass(frozen=True)
class MethodSpec:
    id: str
    method: str  # QUANTIZATION_METHODS key; "" = unquantized (no config)
    linear_method: str  # dotted path of the LinearMethod class
    releases: str
    quant_config: tuple[tuple[str, Any], ...] = ()  # sorted items (frozen); see config_dict()
    in_features: int = 128
    out_features: int = 128
    batch: int = 4
    dtype: str = "bf16"

    def config_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.quant_config}

    def applies_to(self, sglang_version: str) -> bool:
        return Version(sglang_version) in SpecifierSet(self.releases)


def _freeze(value: Any) -> Any:
    return tuple(_freeze(v) for v in value) if isinstance(value, list) else value


def parse_method(raw: dict[str, Any]) -> MethodSpec:
    ident = raw.get("id")
    if not isinstance(ident, str) or not ident:
        raise MethodSpecError(f"a [[method]] has no id: {raw!r}")
    unknown = set(raw) - {"id", "method", "linear_method", "releases", "quant_config", "in", "out", "batch", "dtype"}
    if unknown:
        raise MethodSpecError(f"method {ident!r}: unknown keys {sorted(unknown)}")
    for key in ("method", "linear_method", "releases"):
        if not isinstance(raw.get(key), str):
            raise MethodSpecError(f"method {ident!r}: {key!r} must be a string")
    try:
        SpecifierSet(raw["releases"])
    except InvalidSpecifier as exc:
        raise MethodSpecError(f"method {ident!r}: releases {raw['releases']!r} is not a PEP 440 specifier") from exc
    if raw.get("dtype", "bf16") not in DTYPES:
        raise MethodSpecError(f"method {ident!r}: dtype must be one of {DTYPES}")
    config = raw.get("quant_config", {})
    if not isinstance(config, dict) or (raw["method"] == "" and config):
        raise MethodSpecError(f"method {ident!r}: quant_config must be a table (and empty without a method)")
    return MethodSpec(
        id=ident, method=raw["method"], linear_method=raw["linear_method"], releases=raw["releases"],
        quant_config=tuple(sorted((k, _freeze(v)) for k, v in config.items())),
        in_features=int(raw.get("in", 128)), out_features=int(raw.get("out", 128)),
        batch=int(raw.get("batch", 4)), dtype=raw.get("dtype", "bf16"),
    )


def load_methods(path: Path | None = None) -> tuple[MethodSpec, ...]:
    """Every method spec, in table order (MethodSpecError on a malformed table)."""
    path = path or Path(__file__).with_name(SPEC_FILE)
    data = tomllib.loads(path.read_text())
    if data.get("schema") != SCHEMA:
        raise MethodSpecError(f"{path}: schema must be {SCHEMA!r}, got {data.get('schema')!r}")
    specs = tuple(parse_method(raw) for raw in data.get("method", []))
    ids = [s.id for s in specs]
    if dupes := sorted({i for i in ids if ids.count(i) > 1}):
        raise MethodSpecError(f"{path}: duplicate method ids {dupes}")
    return specs


if __name__ == "__main__":
    sys.exit(main())
