#!/usr/bin/env bash
# One device call: the H200 parity (simulated SM90 vs real SM90, verdict + gb id + frame + arch path)
# and the sweep on the real GPU. FlashInfer 0.6.1 and the kit's missing light deps come as wheels.
set -o pipefail
export PYTHONUNBUFFERED=1
what="${1:-all}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/wheels/*.whl >/dev/null 2>&1 || { echo "wheel install failed"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
mkdir -p /tmp/res
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv > /tmp/res/gpu.txt 2>&1
python3 -c "import torch, flashinfer; print(torch.__version__, flashinfer.__version__, torch.cuda.get_device_name(0))" >> /tmp/res/gpu.txt 2>&1
cat /tmp/res/gpu.txt
if [ "$what" = all ] || [ "$what" = parity ]; then
  start=$(date +%s)
  python3 -m pcgkit.cli parity --reports /tmp/res/parity > /tmp/res/parity.log 2>&1; echo "parity rc=$? in $(( $(date +%s) - start )) s" | tee -a /tmp/res/parity.log
  tail -40 /tmp/res/parity.log
fi
if [ "$what" = all ] || [ "$what" = sweep ]; then
  start=$(date +%s)
  timeout 420 python3 -m pcgkit.sweep --real --out /tmp/res/sweep "${@:2}" > /tmp/res/sweep.log 2>&1; echo "sweep rc=$? in $(( $(date +%s) - start )) s" | tee -a /tmp/res/sweep.log
  tail -40 /tmp/res/sweep.log
fi
tar czf $OUT/results.tgz -C /tmp/res .
