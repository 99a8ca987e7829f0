#!/usr/bin/env bash
# Device call A (issue 48): install SGLang 0.5.11 + 0.5.12 from the joined payload; unpack the FlashInfer releases;
# the argument audit against real kernels (4 releases, in the background: CPU-bound JIT builds) while the hybrid
# NVFP4 server of 0.5.11 is launched three times: default (the crash, control), breakable, piecewise off. ~6 min.
source devrun/lib.sh
DEADLINE=$(( $(date +%s) + 530 ))  # the run call stops at 600 s: leave time for the results tarball
stamp callA-start
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv > "$R/device/nvidia-smi.csv" 2>&1
python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))" > "$R/device/python-torch.txt" 2>&1
(nvcc --version | tail -2; nproc; df -h /tmp | tail -1) >> "$R/device/python-torch.txt" 2>&1
cat "$R/device/nvidia-smi.csv" "$R/device/python-torch.txt"
for v in 0.5.11 0.5.12; do
  python3 -m lab.e2e.devicerun install --parts "$P" --site "/tmp/site-$v" --release "$v" 2>&1 | tail -3 | tee -a "$R/device/install.log"
done
mkdir -p "$FI" && tar -C "$FI" -xJf "$P/fi-bundle.tar.xz" && ls "$FI" | tee -a "$R/device/install.log"
stamp installed
# The audit: each release over the 0.5.12 site's packages (tvm-ffi 0.1.15.post2 first: 0.7.x need >= 0.1.11).
( site_env 0.5.12
  timeout -s INT 420 python3 -m lab argaudit-gpu --site 0.6.12="$FI/fi-0.6.12" --site 0.7.0="$FI/fi-0.7.0" \
    --site 0.7.1="$FI/fi-0.7.1" --site 0.7.4="$FI/fi-0.7.4" --also "$FI/tvm" --out "$R/argaudit" --jobs 4 --timeout 400
) > "$R/argaudit.log" 2>&1 &
audit=$!
for t in default breakable off; do
  left=$((DEADLINE - $(date +%s))); [ "$left" -gt 60 ] || { echo "first try $t: not run (call's time spent)"; continue; }
  timeout -s INT $((left < 250 ? left : 250)) python3 -m lab.e2e.firsttry run --site /tmp/site-0.5.11 --try "$t" --out "$R/firsttry-0.5.11" --ready-timeout 200 2>&1 | tail -4
  stamp "firsttry $t"
done
python3 -m lab.e2e.firsttry table "$R/firsttry-0.5.11"
wait $audit; echo "argaudit rc=$?"; tail -12 "$R/argaudit.log"
stamp argaudit
after callA firsttry-0.5.11 argaudit argaudit.log
