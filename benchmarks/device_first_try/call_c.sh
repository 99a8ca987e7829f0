#!/usr/bin/env bash
# Device call C (issue 48): the same checkpoint and server config on SGLang 0.5.12 (the baseline re-run on this
# machine): off, breakable, on. ~6 min.
source devrun/lib.sh
stamp callC-start
mkdir -p "$R/cost-0.5.12" && mv "$R/ckpt/llama-3.1-8b-bf16" "$R/cost-0.5.12/" 2>/dev/null
( site_env 0.5.12
  timeout -s INT 565 python3 benchmarks/piecewise_cost.py --out "$R/cost-0.5.12" --shape llama-3.1-8b --modes off,breakable,on "${COST_ARGS[@]}" \
    --cache-note "warm for this shape after SGLang 0.5.11's three launches (call B); off, breakable, on" )
echo "rc=$?"
after callC cost-0.5.12
