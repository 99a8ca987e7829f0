# Sourced by every device call of issue 48 (run from .dev-48-kit/kit on the lent GPU; writes under $OUT).
set -u
export PYTHONUNBUFFERED=1
# NVLink multicast stays off (the device README's rule for every kind; harmless on one GPU).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
P=${P48:-/tmp/p48}; R=${R48:-/tmp/r48}; FI=${FI48:-/tmp/fi48}  # payload parts, results, FlashInfer releases
mkdir -p "$P" "$R/device"
stamp() { echo "$(date +%s) $*" | tee -a "$R/device/timestamps.txt"; }
site_env() { eval "$(python3 -m lab.e2e.devicerun env --site "/tmp/site-$1")"; }
# The cost runs' arguments, as the 2026-12-05 H200 run (benchmarks/device_real_shapes/lib.sh), so the figures compare.
COST_ARGS=(--prompt-tokens 128,512,2048,8192 --prefill-batches 1,4 --decode-batches 1,8,32 --decode-steps 64
           --repeats 5 --generations 8 --gen-tokens 32 --gen-device cuda
           --server-args "--piecewise-cuda-graph-max-tokens 8192 --cuda-graph-max-bs 32 --mem-fraction-static 0.6")
after() {  # CALL FOLDER...: what is left on the machine, then one tarball of the call's results in $OUT
  local call=$1; shift
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > "$R/device/gpu-apps-after-$call.csv" 2>&1
  ps -eo pid,ppid,pgid,sid,stat,etime,comm,args > "$R/device/ps-after-$call.txt"
  stamp "$call done"
  tar -C "$R" -czf "$OUT/$call-results.tgz" --exclude='*.safetensors' --exclude='tokenizer.json' device "$@" 2>&1 | tail -2
  ls -la "$OUT"
}
