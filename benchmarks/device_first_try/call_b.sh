#!/usr/bin/env bash
# Device call B (issue 48): Llama-3.1-8B's shape, random bf16 weights generated on the GPU (16 GB, kept in /tmp for
# call C), SGLang 0.5.11: piecewise off (baseline), breakable (the first try), on. ~7 min.
source devrun/lib.sh
stamp callB-start
( site_env 0.5.11
  timeout -s INT 565 python3 benchmarks/piecewise_cost.py --out "$R/cost-0.5.11" --shape llama-3.1-8b --modes off,breakable,on "${COST_ARGS[@]}" \
    --cache-note "cold for this shape: the first 8B launch on this machine (call B of issue 48's recipe); off, breakable, on" )
echo "rc=$?"
mkdir -p "$R/ckpt" && mv "$R/cost-0.5.11/llama-3.1-8b-bf16" "$R/ckpt/" 2>/dev/null
after callB cost-0.5.11
