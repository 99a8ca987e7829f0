"""Benchmark: what the workaround (piecewise CUDA graphs off) costs, on a real GPU and a real SGLang server.

A bf16 checkpoint (the kit's tiny Llama, or with --shape a published architecture with random weights,
pcgkit.e2e.checkpoint.NAMED_SHAPES, generated here on --gen-device) is served once per mode (--modes:
off = the workaround, the baseline; on = torch.compile piecewise graphs; breakable = the release's
breakable CUDA graph, where its parser has it), through the e2e control's launch (the release's own
switches, from pcgkit.sglang.facts), with the radix cache off so that every request computes its whole
prompt. Against each, the same requests from this process over loopback:
  prefill/extend: prompts of N random token ids, 1 new token: latency of one request, and the wall time
          of B such requests at once (--prefill-batches); warm-up, then --repeats timed;
  decode: prompts of 16 tokens with 1 and with 1+S new tokens (ignore_eos), in batches of B concurrent
          requests: (wall(1+S) - wall(1)) / S is the time of one decode step;
  start-up: launch to /health ready, and the capture times SGLang logs;
  outputs (--generations K): K fixed prompts, greedy, --gen-tokens new tokens each, twice (passes A, B),
          with the top-2 log-probabilities (lab.e2e.outputs compares the modes).
Each mode's record is written as DIR/server-<mode>.json as soon as its server is stopped, and the
documents are rebuilt from every record in DIR: DIR/piecewise-cost.json (lab.e2e.cost_file.document,
schema pcgkit.piecewise-cost/1) and DIR/outputs-unchanged.json (lab.e2e.outputs). So the modes of one
model may run in separate invocations (separate device calls) into the same DIR.

Needs SGLang installed (on the lent GPU machine: the payload site, `eval "$(python3 -m lab.e2e.devicerun env --site S)"`):
    python3 benchmarks/piecewise_cost.py --out DIR [--repeats 8] [--layers 2 --hidden 256]
    python3 benchmarks/piecewise_cost.py --out DIR --shape llama-3.1-8b --gen-device cuda --modes off,on,breakable \
        --prompt-tokens 128,512,2048,8192 --prefill-batches 1,4 --decode-batches 1,8,32 --repeats 5 --generations 8
Rebuild the documents from the records in DIR (anywhere, no GPU):
    python3 benchmarks/piecewise_cost.py assemble DIR
Several runs (other model sizes, repeats) into the one committed file, anywhere:
    python3 benchmarks/piecewise_cost.py combine RUN1.json RUN2.json ... --out fixtures/measurements/piecewise-cost.json
One SGLang release's runs into that file's `by_release[<release>]` (each release's cost kept under its own key, so a
figure is never read as another release's; the top level stays as `combine` wrote it), anywhere:
    python3 benchmarks/piecewise_cost.py add-release fixtures/measurements/piecewise-cost.json RUN1.json ...
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import math
import os
import random
import shlex
import sys
import time
import urllib.request
from pathlib import Path

from lab import sglang_facts as lab_facts
from lab.e2e import cost_file as cost
from lab.e2e import outputs
from pcgkit.e2e.case import launch_port, plan_for_checkpoint
from pcgkit.e2e.checkpoint import BF16, NAMED_SHAPES, TINY, TinyLlamaShape, write_checkpoint
from pcgkit.e2e.logclass import log_timings
from pcgkit.e2e.server import GENERATE_PATH, Readiness, running_server, wait_group_gone
from pcgkit.harness import hardware
from pcgkit.harness.casekit import cuda_toolkit_root
from pcgkit.harness.versions import collect_versions
from pcgkit.sglang import facts as sglang_facts
from pcgkit.values.logread import read_log

PROMPT_TOKENS = (16, 64, 256, 1024)  # the tiny defaults; 1024 is past --piecewise-cuda-graph-max-tokens 256: eager either way
DECODE_BATCHES = (1, 4)
DECODE_STEPS = 128
EXTRA_ARGS = ("--disable-radix-cache",)
RECORD_PREFIX = "server-"
GEN_PROMPT_LENGTHS = (8, 32, 128, 512)  # the outputs-unchanged prompts, cycled; all within the piecewise range


def _post(url: str, body: dict, timeout_s: float = 300.0) -> tuple[float, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"},
                                     method="POST")
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        answer = json.loads(response.read())
    return time.perf_counter() - start, answer


def _generate(url: str, ids: list[int], new_tokens: int, timeout_s: float = 300.0) -> float:
    elapsed, answer = _post(url, {"input_ids": ids, "sampling_params": {"max_new_tokens": new_tokens, "temperature": 0.0,
                                                                       "ignore_eos": True}}, timeout_s)
    produced = answer.get("meta_info", {}).get("completion_tokens")
    if produced is not None and produced != new_tokens:
        raise RuntimeError(f"asked for {new_tokens} new tokens, got {produced}")
    return elapsed


def _batch_wall(url: str, prompts: list[list[int]], new_tokens: int) -> float:
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(len(prompts)) as pool:
        list(pool.map(lambda ids: _generate(url, ids, new_tokens), prompts))
    return time.perf_counter() - start


def measure_requests(url: str, vocab: int, repeats: int, rng: random.Random, *, prompt_tokens=PROMPT_TOKENS,
                     prefill_batches=(1,), decode_batches=DECODE_BATCHES, decode_steps=DECODE_STEPS) -> dict:
    def ids(n: int) -> list[int]:
        return [rng.randrange(4, vocab) for _ in range(n)]  # 0-3 are the tokenizer's special tokens

    prefill: dict[str, list[float]] = {}
    for tokens in prompt_tokens:
        for _ in range(2):  # warm-up: first use of a shape may compile or allocate
            _generate(url, ids(tokens), 1)
        prefill[str(tokens)] = [round(_generate(url, ids(tokens), 1), 6) for _ in range(repeats)]
    batched: dict[str, dict[str, list[float]]] = {}
    for batch in (b for b in prefill_batches if b > 1):
        batched[str(batch)] = {}
        for tokens in prompt_tokens:
            _batch_wall(url, [ids(tokens) for _ in range(batch)], 1)  # warm-up
            batched[str(batch)][str(tokens)] = [round(_batch_wall(url, [ids(tokens) for _ in range(batch)], 1), 6)
                                                for _ in range(repeats)]
    decode: dict[str, dict] = {}
    for batch in decode_batches:
        _batch_wall(url, [ids(16) for _ in range(batch)], decode_steps + 1)  # warm-up
        per_step = []
        for _ in range(repeats):
            short = _batch_wall(url, [ids(16) for _ in range(batch)], 1)
            long = _batch_wall(url, [ids(16) for _ in range(batch)], decode_steps + 1)
            per_step.append(round((long - short) / decode_steps, 6))
        decode[str(batch)] = {"per_token_s": per_step, "steps": decode_steps}
    record = {"prefill": prefill, "decode": decode}
    if batched:
        record["prefill_batched"] = batched
    return record


def generation_passes(url: str, prompts: list[list[int]], new_tokens: int) -> dict:
    """Each prompt alone (batch 1, greedy), twice: passes A and B, as lab.e2e.outputs.generation reads them."""
    body = lambda ids: {"input_ids": ids, "return_logprob": True, "top_logprobs_num": 2,  # noqa: E731
                        "sampling_params": {"max_new_tokens": new_tokens, "temperature": 0.0, "ignore_eos": True}}
    return {name: [outputs.generation(_post(url, body(ids))[1]) for ids in prompts] for name in ("A", "B")}


def mode_args(mode: str) -> tuple[tuple[str, ...], str]:
    """The flags a mode adds to the control's launch (beyond the release's piecewise on/off switch), and why."""
    if mode != cost.BREAKABLE:
        return (), ""
    argv = lab_facts.breakable_argv()
    if argv is None:
        raise SystemExit(f"piecewise_cost: sglang {sglang_facts.installed_version('sglang')} has no breakable CUDA graph "
                         "in its parser: leave `breakable` out of --modes")
    return argv, f"breakable: {' '.join(argv)} (read from the release's parser)"


def run_server(mode: str, *, flags, checkpoint: Path, out: Path, vocab: int, repeats: int, seed: int,
               measure: dict | None = None, server_args: tuple[str, ...] = (), prompts: list[list[int]] | None = None,
               gen_tokens: int = 32) -> dict:
    piecewise = mode != cost.OFF
    extra, extra_how = mode_args(mode)
    env = dict(os.environ)
    toolkit = cuda_toolkit_root()
    if toolkit and not env.get("CUDA_HOME"):
        env["CUDA_HOME"] = toolkit
    port, port_evidence = launch_port()
    plan = plan_for_checkpoint(flags, python=sys.executable, fmt=BF16, model_path=str(checkpoint), port=port, env=env,
                               target_args=(*EXTRA_ARGS, *server_args, *extra), piecewise=piecewise)
    log_path = out / f"cost-server-piecewise-{mode}.log"
    record: dict = {"mode": mode, "argv": list(plan.argv), "piecewise_how": plan.how + (f"; {extra_how}" if extra_how else ""),
                    **port_evidence}
    started = time.perf_counter()
    with running_server(plan.argv, port=port, log_path=log_path, env=env, ready_timeout_s=480) as live:
        record["readiness"] = live.readiness.value
        if live.readiness is Readiness.READY:
            record.update(measure_requests(live.url + GENERATE_PATH, vocab, repeats, random.Random(seed), **(measure or {})))
            if prompts:
                record["generations"] = generation_passes(live.url + GENERATE_PATH, prompts, gen_tokens)
        live.spawned.stop()
    record["group_left_after_stop"] = list(wait_group_gone(live.spawned.pid))
    record["wall_s"] = round(time.perf_counter() - started, 3)
    log = log_path.read_text(errors="replace")
    reading = read_log(log)
    record["piecewise_captured"] = reading.capture_ended
    record["startup"] = {"ready_s": round(live.waited_s, 3), **log_timings(log)}
    if piecewise != reading.capture_ended:
        record["problem"] = f"piecewise {mode} asked, but the log {'shows no' if piecewise else 'shows a'} piecewise capture"
    return record


def combine_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="piecewise_cost.py combine")
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    doc = cost.combine([json.loads(Path(p).read_text()) for p in args.runs])
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    for phase, body in doc["phases"].items():
        print(f"{phase}: {body['summary']}")
    return 0


BY_RELEASE = "by_release"  # the committed file's key: SGLang release -> `combine` of that release's runs


def with_release(committed: dict, runs: list[dict]) -> dict:
    """The committed cost file with `runs` (one SGLang release, one device) combined under by_release[release]. Pure."""
    releases = {r["versions"].get("sglang") for r in runs}
    if len(releases) != 1 or None in releases:
        raise ValueError(f"add-release takes the runs of one SGLang release; these are of {sorted(map(str, releases))}")
    release = releases.pop()
    return {**committed, BY_RELEASE: {**committed.get(BY_RELEASE, {}), release: cost.combine(runs)}}


def add_release_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="piecewise_cost.py add-release")
    parser.add_argument("file")
    parser.add_argument("runs", nargs="+")
    args = parser.parse_args(argv)
    try:
        doc = with_release(json.loads(Path(args.file).read_text()), [json.loads(Path(p).read_text()) for p in args.runs])
    except ValueError as exc:
        print(f"piecewise_cost: {exc}", file=sys.stderr)
        return 2
    Path(args.file).write_text(json.dumps(doc, indent=1) + "\n")
    for release, body in doc[BY_RELEASE].items():
        print(f"{release} ({body['device']}): {body['phases'][cost.PREFILL]['summary']}")
    return 0


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def _modes(text: str) -> tuple[str, ...]:
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    unknown = [m for m in modes if m not in cost.MODES]
    if unknown or not modes:
        raise argparse.ArgumentTypeError(f"modes are {', '.join(cost.MODES)}; not {unknown or text!r}")
    return modes


def model_label(shape: TinyLlamaShape, parameters: int) -> str:
    if shape.name == TINY:
        return (f"the kit's tiny Llama (random bf16 weights): {shape.layers} layers, hidden {shape.hidden}, "
                f"{parameters / 1e6:.2f} M parameters")
    return (f"{shape.name} shape with random bf16 weights: {shape.layers} layers, hidden {shape.hidden}, "
            f"{parameters / 1e9:.2f} B parameters")


def assemble(context: dict, records: dict[str, dict]) -> tuple[dict, dict | None]:
    """The cost document and the outputs-unchanged document from the run's context and each mode's record. Pure."""
    if cost.OFF not in records or len(records) < 2:
        raise ValueError(f"need the baseline (off) and another mode; have {sorted(records)}")
    records = {m: records[m] for m in cost.MODES if m in records}  # off first, whatever order they were read in
    runs = {m: {k: v for k, v in r.items() if k != "generations"} for m, r in records.items()}
    launch = {**context["launch"], **{f"piecewise_{m}": r["piecewise_how"] for m, r in records.items()}}
    doc = cost.document(device=context["device"], device_detail=context["device_detail"], model=context["model"],
                        model_detail=context["model_detail"], date=context["date"], versions=context["versions"],
                        runs=runs, launch=launch, method=context["method"], cache_state=context["cache_state"])
    passes = {m: r["generations"] for m, r in records.items() if r.get("generations")}
    if cost.OFF not in passes or len(passes) < 2:
        return doc, None
    outs = outputs.document(passes, prompts=context["generation_prompts"], new_tokens=context["generation_tokens"],
                            context={k: context[k] for k in ("device", "model", "date", "versions")})
    return doc, outs


def assemble_dir(out: Path) -> tuple[dict, dict | None]:
    """Rebuild DIR/piecewise-cost.json (and DIR/outputs-unchanged.json) from DIR's context and records."""
    context = json.loads((out / "context.json").read_text())
    records = {p.stem.removeprefix(RECORD_PREFIX): json.loads(p.read_text()) for p in sorted(out.glob(f"{RECORD_PREFIX}*.json"))}
    doc, outs = assemble(context, records)
    (out / "piecewise-cost.json").write_text(json.dumps(doc, indent=2) + "\n")
    if outs is not None:
        (out / "outputs-unchanged.json").write_text(json.dumps(outs, indent=2) + "\n")
    return doc, outs


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["combine"]:
        return combine_main(argv[1:])
    if argv[:1] == ["add-release"]:
        return add_release_main(argv[1:])
    if argv[:1] == ["assemble"]:
        doc, outs = assemble_dir(Path(argv[1]))
        print(cost.render(doc))
        print("\n".join(outs["summary"]) if outs else "outputs: not compared (no generations in off and another mode)")
        return 0
    args = build_parser().parse_args(argv)
    return run_main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for the documents, the records, the server logs and the checkpoint")
    parser.add_argument("--repeats", type=int, default=8, help="timed repeats of every quantity (the issue asks >= 5)")
    parser.add_argument("--shape", default=TINY, choices=(TINY, *NAMED_SHAPES))
    parser.add_argument("--layers", type=int, default=TinyLlamaShape.layers, help="tiny shape only")
    parser.add_argument("--hidden", type=int, default=TinyLlamaShape.hidden, help="tiny shape only")
    parser.add_argument("--gen-device", default="cpu", help="where the checkpoint's weights are generated (cuda for the named shapes)")
    parser.add_argument("--modes", type=_modes, default=(cost.OFF, cost.ON), help="comma list of off,on,breakable (default off,on)")
    parser.add_argument("--prompt-tokens", type=_ints, default=PROMPT_TOKENS)
    parser.add_argument("--prefill-batches", type=_ints, default=(1,), help="prompts sent at once for prefill (1 = alone)")
    parser.add_argument("--decode-batches", type=_ints, default=DECODE_BATCHES)
    parser.add_argument("--decode-steps", type=int, default=DECODE_STEPS)
    parser.add_argument("--generations", type=int, default=0, help="prompts for the outputs-unchanged comparison (0: none)")
    parser.add_argument("--gen-tokens", type=int, default=32)
    parser.add_argument("--server-args", default="", help="more server flags, after the payload's (argparse keeps the last)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-note", default="not stated by the caller",
                        help="the state of the Triton/Inductor/FlashInfer caches when this ran, for the record")
    return parser


def run_main(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    devices = hardware.detect_cuda_devices()
    if not devices:
        print("piecewise_cost: needs a real CUDA GPU; found none", file=sys.stderr)
        return 2
    device = devices[0]
    flags = sglang_facts.piecewise_flags()
    for mode in args.modes:  # a mode the release lacks stops here, before minutes of checkpoint and launches
        mode_args(mode)
    if args.shape == TINY:
        shape = TinyLlamaShape(layers=args.layers, hidden=args.hidden, intermediate=2 * args.hidden,
                               heads=max(4, args.hidden // 64), kv_heads=max(2, args.hidden // 128))
    else:
        shape = NAMED_SHAPES[args.shape]
    checkpoint = out / f"{shape.name}-bf16"
    started = time.perf_counter()
    if not (checkpoint / "config.json").exists():  # a later mode's call reuses the checkpoint an earlier one wrote
        write_checkpoint(checkpoint, shape=shape, fmt=BF16, device=args.gen_device)
    written_s = round(time.perf_counter() - started, 3)
    parameters = _parameters(checkpoint)
    prompts = outputs.prompt_set(args.generations, GEN_PROMPT_LENGTHS, shape.vocab, seed=args.seed) if args.generations else []
    server_args = tuple(shlex.split(args.server_args))
    measure = {"prompt_tokens": args.prompt_tokens, "prefill_batches": args.prefill_batches,
               "decode_batches": args.decode_batches, "decode_steps": args.decode_steps}
    context_path = out / "context.json"
    context = json.loads(context_path.read_text()) if context_path.exists() else {
        "device": f"{device.name} ({cost.arch_label(device.capability)}, CC {device.capability[0]}.{device.capability[1]})",
        "device_detail": device.to_dict(),
        "model": model_label(shape, parameters),
        "model_detail": {**{k: getattr(shape, k) for k in ("name", "layers", "hidden", "intermediate", "heads", "kv_heads", "vocab")},
                         "parameters": parameters, "dtype": "bfloat16", "source": shape.source or "pcgkit.e2e.checkpoint (the kit's tiny shape)",
                         "checkpoint_written_s": written_s, "generated_on": args.gen_device},
        "date": datetime.date.today().isoformat(),
        "versions": collect_versions(),
        "launch": {"common_extra_args": [*EXTRA_ARGS, *server_args], "server_args_env": os.environ.get("PCGKIT_E2E_SERVER_ARGS", "")},
        "method": (f"same server config and requests per mode ({', '.join(args.modes)}; off is the baseline); prefill: prompts of "
                   f"{list(args.prompt_tokens)} random token ids, 1 new token, alone and {list(args.prefill_batches)} at once, "
                   f"2 warm-up + {args.repeats} timed each; decode: batches {list(args.decode_batches)} of 16-token prompts, "
                   f"(wall of {args.decode_steps}+1 new tokens - wall of 1) / {args.decode_steps}, {args.repeats} repeats; client over "
                   "loopback; medians, spread = (max - min) / median; one server launch per mode; benchmarks/piecewise_cost.py"),
        "cache_state": args.cache_note,
        "generation_prompts": prompts,
        "generation_tokens": args.gen_tokens,
    }
    context_path.write_text(json.dumps(context, indent=1) + "\n")
    ok = True
    for mode in args.modes:
        record = run_server(mode, flags=flags, checkpoint=checkpoint, out=out, vocab=shape.vocab, repeats=args.repeats,
                            seed=args.seed, measure=measure, server_args=server_args,
                            prompts=context["generation_prompts"], gen_tokens=context["generation_tokens"])
        (out / f"{RECORD_PREFIX}{mode}.json").write_text(json.dumps(record, indent=1) + "\n")
        ok = ok and record.get("readiness") == "ready" and "problem" not in record
        print(f"piecewise_cost: {mode}: {record.get('readiness')}, ready in {record['startup']['ready_s']} s, "
              f"wall {record['wall_s']} s{', PROBLEM: ' + record['problem'] if 'problem' in record else ''}", flush=True)
    if len(list(out.glob(f"{RECORD_PREFIX}*.json"))) >= 2 and (out / f"{RECORD_PREFIX}{cost.OFF}.json").exists():
        doc, outs = assemble_dir(out)
        print(cost.render(doc))
        if outs:
            print("\n".join(outs["summary"]))
    return 0 if ok else 1


def _parameters(checkpoint: Path) -> int:
    """Parameters stored in the checkpoint's safetensors files (read from their headers, nothing loaded)."""
    from safetensors import safe_open

    total = 0
    for path in sorted(checkpoint.glob("*.safetensors")):
        with safe_open(str(path), framework="pt") as handle:
            for name in handle.keys():
                total += math.prod(handle.get_slice(name).get_shape())
    return total


if __name__ == "__main__":
    from pcgkit.util import signals

    with signals.stop_policy():  # a `timeout` or Ctrl-C stops the server's process group too (no GPU left held)
        raise SystemExit(main())
