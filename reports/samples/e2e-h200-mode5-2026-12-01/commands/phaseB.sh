#!/usr/bin/env bash
# Device call 5 (issue 26): the workaround's cost on the bf16 control server (SGLang 0.5.11 site from call 4).
set -u
export PYTHONUNBUFFERED=1
R=/tmp/r26; mkdir -p $R
echo "$(date +%s) B start" >> $OUT/timestamps.txt
eval "$(python3 -m pcgkit.e2e.devicerun env --site /tmp/site-0.5.11)"
timeout 520 python3 benchmarks/piecewise_cost.py --out $R/cost --repeats 8 \
  --cache-note "warm: the bf16 control of the same config (radix cache on) and the hybrid launches ran on this machine minutes before (call 4)" 2>&1 | tail -30
echo "rc=$?"
echo "$(date +%s) B done" >> $OUT/timestamps.txt
ps -eo pid,ppid,pgid,sid,stat,etime,comm,args > $OUT/ps-after-B.txt
tar -C $R -czf $OUT/resultsB.tgz --exclude='*.safetensors' --exclude='tokenizer.json' cost 2>&1 | tail -2
ls -la $OUT
