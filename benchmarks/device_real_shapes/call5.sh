#!/usr/bin/env bash
# Device call 5 (issue 40): Llama-3.1-8B's shape, random bf16 weights generated on the GPU (16 GB, kept in /tmp
# for call 6), SGLang 0.5.12 with piecewise OFF (the workaround, the baseline). ~5 min.
source devrun/lib.sh
stamp call5-start
( site_env 0.5.12
  timeout -s INT 560 python3 benchmarks/piecewise_cost.py --out "$R/cost-llama-3.1-8b" --shape llama-3.1-8b --modes off "${COST_ARGS[@]}" \
    --cache-note "cold for this shape: the first 8B launch on this machine (call 5 of issue 40's recipe)" )
echo "rc=$?"
after call5 cost-llama-3.1-8b
