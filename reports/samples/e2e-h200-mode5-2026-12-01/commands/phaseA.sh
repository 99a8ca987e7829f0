#!/usr/bin/env bash
# Device call 4 (issue 26): install SGLang 0.5.11 and 0.5.12 from the joined payload, then the e2e cases.
# Run from the kit's root on the lent H200; writes under $OUT.
set -u
export PYTHONUNBUFFERED=1
P=/tmp/p26; R=/tmp/r26; mkdir -p $R
stamp() { echo "$(date +%s) $*" | tee -a $OUT/timestamps.txt; }
stamp start
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv > $OUT/nvidia-smi.csv 2>&1
for v in 0.5.11 0.5.12; do
  python3 -m pcgkit.e2e.devicerun install --parts $P --site /tmp/site-$v --release $v 2>&1 | tail -3 | tee -a $OUT/install.log
done
stamp installed
( eval "$(python3 -m pcgkit.e2e.devicerun env --site /tmp/site-0.5.11)"; python3 -c "import sglang, sgl_kernel, transformers, flashinfer, torch; print('0.5.11 site:', sglang.__version__, flashinfer.__version__, transformers.__version__, torch.__version__, torch.version.cuda)" 2>&1 | tail -2 ) | tee -a $OUT/install.log
stamp cases-0.5.11
python3 -m pcgkit.e2e.devicerun cases --site /tmp/site-0.5.11 --out $R/sglang-0.5.11 --timeout 330 -- -k e2e --pcgkit-case-timeout=240 2>&1 | tail -25
stamp cases-0.5.12
python3 -m pcgkit.e2e.devicerun cases --site /tmp/site-0.5.12 --out $R/sglang-0.5.12 --timeout 200 -- -k e2e_piecewise_launch --pcgkit-case-timeout=150 2>&1 | tail -25
stamp done
ps -eo pid,ppid,pgid,sid,stat,etime,comm,args > $OUT/ps-after-A.txt
tar -C $R -czf $OUT/resultsA.tgz --exclude='*.safetensors' --exclude='tokenizer.json' . 2>&1 | tail -2
ls -la $OUT
