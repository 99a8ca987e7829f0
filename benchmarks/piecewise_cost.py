"""Benchmark: what the workaround (piecewise CUDA graphs off) costs, on a real GPU and a real SGLang server.

The bf16 control's server (pcgkit.e2e: the kit's tiny bf16 Llama, the launch the control case makes,
same flags) is launched twice, piecewise off then on (the release's own switch, from
pcgkit.sglang.facts), with the radix cache off in both so that every request computes its whole
prompt. Against each, the same requests from this process over loopback:
  prefill/extend: prompts of N random token ids, 1 new token, latency per request (warm-up, then repeats);
  decode: the same 16-token prompt with 1 and with 1+S new tokens (ignore_eos), in batches of B
          concurrent requests: (wall(1+S) - wall(1)) / S is the time of one decode step;
  start-up: launch to /health ready, and the capture times SGLang logs.
Ratios (on / off) are printed; the document (pcgkit.e2e.cost.document, schema pcgkit.piecewise-cost/1)
is written for fixtures/measurements/piecewise-cost.json, which the advice model quotes.

Needs SGLang installed (on the lent GPU machine: the payload site, `eval "$(python3 -m lab.e2e.devicerun env --site S)"`):
    python3 benchmarks/piecewise_cost.py --out DIR [--repeats 8] [--layers 2 --hidden 256]
Several runs (other model sizes, repeats) into the one committed file, anywhere:
    python3 benchmarks/piecewise_cost.py combine RUN1.json RUN2.json ... --out fixtures/measurements/piecewise-cost.json
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import random
import sys
import time
import urllib.request
from pathlib import Path

from pcgkit.e2e import cost
from pcgkit.e2e.case import launch_port, plan_for_checkpoint
from pcgkit.e2e.checkpoint import BF16, TinyLlamaShape, write_checkpoint
from pcgkit.e2e.logclass import log_timings
from pcgkit.e2e.server import GENERATE_PATH, Readiness, running_server, wait_group_gone
from pcgkit.harness import hardware
from pcgkit.harness.casekit import cuda_toolkit_root
from pcgkit.harness.versions import collect_versions
from pcgkit.sglang import facts as sglang_facts
from pcgkit.values.signature import read_log

PROMPT_TOKENS = (16, 64, 256, 1024)  # 1024 is past --piecewise-cuda-graph-max-tokens 256: eager either way
DECODE_BATCHES = (1, 4)
DECODE_STEPS = 128
EXTRA_ARGS = ("--disable-radix-cache",)


def _generate(url: str, ids: list[int], new_tokens: int, timeout_s: float = 120.0) -> float:
    body = json.dumps({"input_ids": ids, "sampling_params": {"max_new_tokens": new_tokens, "temperature": 0.0,
                                                              "ignore_eos": True}}).encode()
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        answer = json.loads(response.read())
    elapsed = time.perf_counter() - start
    produced = answer.get("meta_info", {}).get("completion_tokens")
    if produced is not None and produced != new_tokens:
        raise RuntimeError(f"asked for {new_tokens} new tokens, got {produced}")
    return elapsed


def _batch_wall(url: str, prompts: list[list[int]], new_tokens: int) -> float:
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(len(prompts)) as pool:
        list(pool.map(lambda ids: _generate(url, ids, new_tokens), prompts))
    return time.perf_counter() - start


def measure_requests(url: str, vocab: int, repeats: int, rng: random.Random) -> dict:
    def ids(n: int) -> list[int]:
        return [rng.randrange(4, vocab) for _ in range(n)]  # 0-3 are the tokenizer's special tokens

    prefill: dict[str, list[float]] = {}
    for tokens in PROMPT_TOKENS:
        for _ in range(2):  # warm-up: first use of a shape may compile or allocate
            _generate(url, ids(tokens), 1)
        prefill[str(tokens)] = [round(_generate(url, ids(tokens), 1), 6) for _ in range(repeats)]
    decode: dict[str, dict] = {}
    for batch in DECODE_BATCHES:
        _batch_wall(url, [ids(16) for _ in range(batch)], DECODE_STEPS + 1)  # warm-up
        per_step = []
        for _ in range(max(3, repeats // 2)):
            short = _batch_wall(url, [ids(16) for _ in range(batch)], 1)
            long = _batch_wall(url, [ids(16) for _ in range(batch)], DECODE_STEPS + 1)
            per_step.append(round((long - short) / DECODE_STEPS, 6))
        decode[str(batch)] = {"per_token_s": per_step, "steps": DECODE_STEPS}
    return {"prefill": prefill, "decode": decode}


def run_server(piecewise: bool, *, flags, checkpoint: Path, out: Path, vocab: int, repeats: int, seed: int) -> dict:
    state = "on" if piecewise else "off"
    env = dict(os.environ)
    toolkit = cuda_toolkit_root()
    if toolkit and not env.get("CUDA_HOME"):
        env["CUDA_HOME"] = toolkit
    port, port_evidence = launch_port()
    plan = plan_for_checkpoint(flags, python=sys.executable, fmt=BF16, model_path=str(checkpoint), port=port, env=env,
                               target_args=EXTRA_ARGS, piecewise=piecewise)
    log_path = out / f"cost-server-piecewise-{state}.log"
    record: dict = {"argv": list(plan.argv), "piecewise_how": plan.how, **port_evidence}
    started = time.perf_counter()
    with running_server(plan.argv, port=port, log_path=log_path, env=env, ready_timeout_s=480) as live:
        record["readiness"] = live.readiness.value
        if live.readiness is Readiness.READY:
            record.update(measure_requests(live.url + GENERATE_PATH, vocab, repeats, random.Random(seed)))
        live.spawned.stop()
    record["group_left_after_stop"] = list(wait_group_gone(live.spawned.pid))
    record["wall_s"] = round(time.perf_counter() - started, 3)
    log = log_path.read_text(errors="replace")
    reading = read_log(log)
    record["piecewise_captured"] = reading.capture_ended
    record["startup"] = {"ready_s": round(live.waited_s, 3), **log_timings(log)}
    if piecewise != reading.capture_ended:
        record["problem"] = f"piecewise {state} asked, but the log {'shows no' if piecewise else 'shows a'} piecewise capture"
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


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["combine"]:
        return combine_main(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for the document, the server logs and the checkpoint")
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--layers", type=int, default=TinyLlamaShape.layers)
    parser.add_argument("--hidden", type=int, default=TinyLlamaShape.hidden)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-note", default="not stated by the caller",
                        help="the state of the Triton/Inductor/FlashInfer caches when this ran, for the record")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    devices = hardware.detect_cuda_devices()
    if not devices:
        print("piecewise_cost: needs a real CUDA GPU; found none", file=sys.stderr)
        return 2
    device = devices[0]
    flags = sglang_facts.piecewise_flags()
    shape = TinyLlamaShape(layers=args.layers, hidden=args.hidden, intermediate=2 * args.hidden,
                           heads=max(4, args.hidden // 64), kv_heads=max(2, args.hidden // 128))
    checkpoint = write_checkpoint(out / "tiny-bf16", shape=shape, fmt=BF16)
    parameters = _parameters(checkpoint / "model.safetensors")
    runs = {}
    for piecewise in (False, True):
        runs["on" if piecewise else "off"] = run_server(piecewise, flags=flags, checkpoint=checkpoint, out=out,
                                                        vocab=shape.vocab, repeats=args.repeats, seed=args.seed)
    model = (f"the kit's tiny Llama (random bf16 weights): {shape.layers} layers, hidden {shape.hidden}, "
             f"{parameters / 1e6:.2f} M parameters")
    doc = cost.document(
        device=f"{device.name} (CC {device.capability[0]}.{device.capability[1]})",
        device_detail=device.to_dict(),
        model=model,
        model_detail={**{k: getattr(shape, k) for k in ("layers", "hidden", "intermediate", "heads", "kv_heads", "vocab")},
                      "parameters": parameters, "dtype": "bfloat16"},
        date=datetime.date.today().isoformat(),
        versions=collect_versions(),
        runs=runs,
        launch={"common_extra_args": list(EXTRA_ARGS), "server_args_env": os.environ.get("PCGKIT_E2E_SERVER_ARGS", ""),
                "piecewise_off": runs["off"]["piecewise_how"], "piecewise_on": runs["on"]["piecewise_how"]},
        method=(f"same server config and requests, piecewise off then on; prefill: prompts of {list(PROMPT_TOKENS)} random "
                f"token ids, 1 new token, 2 warm-up + {args.repeats} timed each; decode: batches {list(DECODE_BATCHES)} of "
                f"16-token prompts, (wall of {DECODE_STEPS}+1 new tokens - wall of 1) / {DECODE_STEPS}; client over loopback; "
                "medians; benchmarks/piecewise_cost.py"),
        cache_state=args.cache_note,
    )
    (out / "piecewise-cost.json").write_text(json.dumps(doc, indent=2) + "\n")
    print(cost.render(doc))
    return 0 if all(r.get("readiness") == "ready" and "problem" not in r for r in runs.values()) else 1


def _parameters(path: Path) -> int:
    from safetensors import safe_open

    total = 0
    with safe_open(str(path), framework="pt") as handle:
        for name in handle.keys():
            shape = handle.get_slice(name).get_shape()
            count = 1
            for dim in shape:
                count *= dim
            total += count
    return total


if __name__ == "__main__":
    raise SystemExit(main())
