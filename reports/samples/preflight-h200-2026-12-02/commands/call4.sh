#!/usr/bin/env bash
# Device call 4 (preflight on the H200, 2026-12-02): install SGLang 0.5.11 and 0.5.12 from the joined payload,
# write the kit's tiny checkpoints, then `pcgkit preflight --json` for each release x {auto, sm120} x {nvfp4, bf16}
# with this branch's kit (fixed/), and three of the same with main's kit before the fix (before/), all at once.
# Run from .dev-30-kit/fixed on the lent H200; writes under $OUT.
set -u
export PYTHONUNBUFFERED=1
P=/tmp/p30; R=/tmp/r30; mkdir -p $R/answers
FIXED=$PWD; BEFORE=$(cd ../before && pwd)
stamp() { echo "$(date +%s) $*" | tee -a $OUT/timestamps.txt; }
stamp start
nvidia-smi > $OUT/nvidia-smi.txt 2>&1
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv > $OUT/nvidia-smi.csv 2>&1
python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))" > $OUT/python-torch.txt 2>&1
for v in 0.5.11 0.5.12; do
  python3 -m pcgkit.e2e.devicerun install --parts $P --site /tmp/site-$v --release $v 2>&1 | tail -3 | tee -a $OUT/install.log
done
stamp installed
for v in 0.5.11 0.5.12; do  # each release's own piecewise flags (read from its parser) make its launch
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
for v in 0.5.11 0.5.12; do for arch in auto sm120; do for fmt in nvfp4 bf16; do
  one $FIXED $v $arch $fmt sglang-$v-$fmt-$arch &
done; done; done
one $BEFORE 0.5.11 auto nvfp4 before-fix-sglang-0.5.11-nvfp4-auto &
one $BEFORE 0.5.12 auto nvfp4 before-fix-sglang-0.5.12-nvfp4-auto &
one $BEFORE 0.5.11 sm120 nvfp4 before-fix-sglang-0.5.11-nvfp4-sm120 &
wait
stamp answered
sort $R/answers/exits.txt
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > $OUT/gpu-apps-after.csv 2>&1
ps -eo pid,ppid,pgid,sid,stat,etime,comm,args > $OUT/ps-after.txt
tar -C $R -czf $OUT/answers.tgz answers ckpt-*/launch-*.txt
ls -la $OUT
