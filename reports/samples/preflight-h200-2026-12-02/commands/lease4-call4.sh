#!/usr/bin/env bash
# Fourth lease, device call 4 (2026-12-02): the real SGLang 0.5.11 server on the plain H200 (SM90, nothing
# answered) with the kit's NVFP4 checkpoint, through the kit's own launcher (`devicerun observe`), to set beside
# preflight's --arch auto answer for the same release (0.5.12's plain-SM90 refusal is in e2e-h200-2026-12-01).
# Run from .dev-30-kit/fixed on the lent H200; writes under $OUT.
set -u
export PYTHONUNBUFFERED=1
P=/tmp/p30; R=/tmp/r30; mkdir -p $R/device
stamp() { echo "$(date +%s) $*" | tee -a $R/device/timestamps.txt; }
stamp start
python3 -m pcgkit.e2e.devicerun install --parts $P --site /tmp/site-0.5.11 --release 0.5.11 2>&1 | tail -1 | tee -a $R/device/install.log
stamp installed
python3 -m pcgkit.e2e.devicerun observe --site /tmp/site-0.5.11 --format nvfp4 --out $R/observe-0.5.11 --ready-timeout 240 2>&1 | tail -5
stamp observed
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > $R/device/gpu-apps-after.csv 2>&1
ps -eo pid,ppid,pgid,sid,stat,etime,comm,args > $R/device/ps-after.txt
tar -C $R -czf $OUT/lease4.tgz device observe-0.5.11/observe-nvfp4.json observe-0.5.11/observe-nvfp4.log
ls -la $OUT
