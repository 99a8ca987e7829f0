#!/usr/bin/env bash
# Third lease, device call 4 (preflight on the H200, 2026-12-02): SGLang 0.5.12 only, as lease2-call4.sh, with the
# one wheel its FlashInfer 0.6.11.post1 requires and the payload leaves out (cuda-tile 1.7.0: `import flashinfer.comm`
# imports cuda.tile, which lease 2's 0.5.12 NVFP4 sm120 answer stopped at), carried in devrun/ and installed --no-deps.
# Run from .dev-30-kit/fixed on the lent H200; writes under $OUT.
set -u
export PYTHONUNBUFFERED=1
P=/tmp/p30; R=/tmp/r30; mkdir -p $R/answers
FIXED=$PWD
stamp() { echo "$(date +%s) $*" | tee -a $OUT/timestamps.txt; }
stamp start
nvidia-smi > $OUT/nvidia-smi.txt 2>&1
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv > $OUT/nvidia-smi.csv 2>&1
python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))" > $OUT/python-torch.txt 2>&1
python3 -m pcgkit.e2e.devicerun install --parts $P --site /tmp/site-0.5.12 --release 0.5.12 2>&1 | tail -3 | tee -a $OUT/install.log
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-0.5.12 devrun/cuda_tile-1.7.0-cp312-cp312-manylinux2014_x86_64.whl 2>&1 | tail -3 | tee -a $OUT/install.log
( eval "$(python3 -m pcgkit.e2e.devicerun env --site /tmp/site-0.5.12)"; python3 -c "import cuda.tile, flashinfer.comm; print('cuda.tile', cuda.tile.__file__)" ) 2>&1 | tail -3 | tee -a $OUT/install.log
stamp installed
for v in 0.5.12; do  # each release's own piecewise flags (read from its parser) make its launch
  ( eval "$(python3 -m pcgkit.e2e.devicerun env --site /tmp/site-$v)"; python3 devrun/launches.py $R/ckpt-$v > $OUT/launches-$v.json ) 2>&1 | tail -5
done
stamp checkpoints
one() {  # kit release arch fmt tag: one preflight as a user runs it, in that release's installed site
  local kit=$1 v=$2 arch=$3 fmt=$4 tag=$5
  ( eval "$(python3 -m pcgkit.e2e.devicerun env --site /tmp/site-$v)"
    export PYTHONPATH=/tmp/site-$v:$kit
    cd $kit
    mapfile -t LAUNCH < $R/ckpt-$v/launch-$fmt.txt
    echo "cd $kit && PYTHONPATH=$PYTHONPATH python3 -m pcgkit.cli preflight --json --arch $arch -- ${LAUNCH[*]}" > $R/answers/$tag.cmd
    t0=$(date +%s%N)
    timeout 360 python3 -m pcgkit.cli preflight --json --arch $arch -- "${LAUNCH[@]}" > $R/answers/$tag.json 2> $R/answers/$tag.stderr
    rc=$?
    echo "$tag exit=$rc wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))" >> $R/answers/exits.txt )
}
for v in 0.5.12; do for arch in auto sm120; do for fmt in nvfp4 bf16; do
  one $FIXED $v $arch $fmt sglang-$v-$fmt-$arch &
done; done; done
one $FIXED 0.5.12 sm90 nvfp4 sglang-0.5.12-nvfp4-sm90 &
wait
stamp answered
sort $R/answers/exits.txt
mkdir -p $R/device && mv $OUT/*.txt $OUT/*.csv $OUT/*.json $OUT/*.log $R/device/ 2>/dev/null
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > $R/device/gpu-apps-after.csv 2>&1
ps -eo pid,ppid,pgid,sid,stat,etime,comm,args > $R/device/ps-after.txt
tar -C $R -czf $OUT/lease3.tgz answers device ckpt-0.5.12/launch-nvfp4.txt ckpt-0.5.12/launch-bf16.txt
ls -la $OUT
