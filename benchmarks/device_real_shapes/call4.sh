#!/usr/bin/env bash
# Device call 4 (issue 40): install SGLang 0.5.12 and 0.5.11 from the joined payload, FlashInfer 0.6.12 beside
# them; the ops' fakes against their kernels; `preflight --arch auto` on both releases. ~4 min.
source devrun/lib.sh
stamp call4-start
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv > "$R/device/nvidia-smi.csv" 2>&1
python3 -c "import sys, torch; print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))" > "$R/device/python-torch.txt" 2>&1
df -h /tmp | tail -1 >> "$R/device/python-torch.txt"
for v in 0.5.12 0.5.11; do
  python3 -m lab.e2e.devicerun install --parts "$P" --site "/tmp/site-$v" --release "$v" 2>&1 | tail -3 | tee -a "$R/device/install.log"
done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site-fi0612 \
  devrun/flashinfer_python-0.6.12-py3-none-any.whl 2>&1 | tail -3 | tee -a "$R/device/install.log"
stamp installed
mkdir -p "$R/ops" "$R/preflight/answers"
# Ops: FlashInfer 0.6.12 (over the 0.5.12 site's dependencies) and 0.5.12's own 0.6.11.post1, with the certificates of 0.6.12.
( site_env 0.5.12; export PYTHONPATH="/tmp/site-fi0612:$PYTHONPATH"
  timeout -s INT 200 python3 benchmarks/fakes_vs_kernels.py --out "$R/ops/fi-0.6.12" \
    $(for c in fixtures/certificates/certificate-0.6.12-*.json; do echo --certificate "$c"; done) ) > "$R/ops/fi-0.6.12.log" 2>&1
( site_env 0.5.12; timeout -s INT 120 python3 benchmarks/fakes_vs_kernels.py --out "$R/ops/fi-0.6.11.post1" ) > "$R/ops/fi-0.6.11.post1.log" 2>&1
tail -12 "$R/ops/fi-0.6.12/fakes-vs-kernels.md" "$R/ops/fi-0.6.11.post1/fakes-vs-kernels.md" 2>&1
stamp ops
# preflight --arch auto, as a user runs it in each release's site: the e2e case's launches on the kit's tiny checkpoints.
for v in 0.5.12 0.5.11; do ( site_env "$v"; python3 devrun/launches.py "$R/ckpt-$v" > "$R/preflight/launches-$v.json" ) 2>&1 | tail -3; done
one() {  # release fmt
  ( site_env "$1"; mapfile -t LAUNCH < "$R/ckpt-$1/launch-$2.txt"; tag="sglang-$1-$2-auto"
    echo "python3 -m pcgkit.cli preflight --json --arch auto -- ${LAUNCH[*]}" > "$R/preflight/answers/$tag.cmd"
    t0=$(date +%s%N)
    timeout -s INT 300 python3 -m pcgkit.cli preflight --json --arch auto -- "${LAUNCH[@]}" > "$R/preflight/answers/$tag.json" 2> "$R/preflight/answers/$tag.stderr"
    echo "$tag exit=$? wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))" >> "$R/preflight/answers/exits.txt" )
}
for v in 0.5.12 0.5.11; do for fmt in nvfp4 bf16; do one "$v" "$fmt" & done; done
wait
sort "$R/preflight/answers/exits.txt"
after call4 ops preflight
