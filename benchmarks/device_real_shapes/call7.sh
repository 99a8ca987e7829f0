#!/usr/bin/env bash
# Device call 7 (issue 40): Llama-3.2-1B's shape (2.5 GB, generated on the GPU), off, on, breakable in one call. ~6 min.
source devrun/lib.sh
stamp call7-start
( site_env 0.5.12
  timeout -s INT 570 python3 benchmarks/piecewise_cost.py --out "$R/cost-llama-3.2-1b" --shape llama-3.2-1b --modes off,on,breakable "${COST_ARGS[@]}" \
    --cache-note "Triton/Inductor caches warm from the 8B calls (other shapes); first 1B launch" )
echo "rc=$?"
after call7 cost-llama-3.2-1b
