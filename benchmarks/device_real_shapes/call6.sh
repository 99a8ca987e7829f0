#!/usr/bin/env bash
# Device call 6 (issue 40): the same 8B checkpoint and server config, piecewise ON (torch.compile) then BREAKABLE
# (0.5.12's --enable-breakable-cuda-graph, read from its parser); the documents are rebuilt over all three. ~7 min.
source devrun/lib.sh
stamp call6-start
( site_env 0.5.12
  timeout -s INT 570 python3 benchmarks/piecewise_cost.py --out "$R/cost-llama-3.1-8b" --shape llama-3.1-8b --modes on,breakable "${COST_ARGS[@]}" \
    --cache-note "warm for this shape after call 5 (off); on then breakable" )
echo "rc=$?"
rm -rf "$R/cost-llama-3.1-8b/llama-3.1-8b-bf16"  # 16 GB: not needed after this call
after call6 cost-llama-3.1-8b
