#!/usr/bin/env bash
# Issue 48, run HERE (the CPU machine) before the device session: build the SGLang payload once (0.5.11 + 0.5.12 for
# torch 2.11.0+cu130, ~5 min, 162 MiB in 4 parts) and the FlashInfer bundle (0.6.12, 0.7.0, 0.7.1, 0.7.4 unpacked,
# csrc cut to what the fp4 module compiles, identical files hard-linked, + apache-tvm-ffi 0.1.15.post2; one tar.xz,
# ~33 MiB), then lay out what each device call carries as ignored folders in the checkout the device tool sends
# (ROOT), and check each call's size against the 64 MiB limit.
#   benchmarks/device_first_try/stage.sh [ROOT]       ROOT: the checkout the device tool sends (default: this one)
# Env: PB (payload cache, default /work/pcg48-cache/payload), FB (FlashInfer cache, default /work/pcg48-cache/fi).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KIT="$(cd "$HERE/../.." && pwd)"
ROOT="${1:-$KIT}"
PB="${PB:-/work/pcg48-cache/payload}"
FB="${FB:-/work/pcg48-cache/fi}"
LIMIT=$((64 * 1024 * 1024))
cd "$KIT"
if [ ! -f "$PB/out/MANIFEST.json" ]; then
  mkdir -p "$PB"
  bin/pcgkit lab payload build --out "$PB/out" --work "$PB" \
    --spec fixtures/e2e_payload_sglang-0.5.11.toml --spec fixtures/e2e_payload.toml
fi
if [ ! -f "$FB/fi-bundle.tar.xz" ]; then
  mkdir -p "$FB/tree"
  pipdl() { python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform any -d "$FB" "$@"; }
  pipdl flashinfer-python==0.6.12 flashinfer-python==0.7.0 flashinfer-python==0.7.1 flashinfer-python==0.7.4 2>/dev/null || \
    for v in 0.6.12 0.7.0 0.7.1 0.7.4; do pipdl flashinfer-python==$v; done
  pipdl "apache-tvm-ffi==0.1.15.post2"
  for v in 0.6.12 0.7.0 0.7.1 0.7.4; do
    mkdir -p "$FB/tree/fi-$v"
    (cd "$FB/tree/fi-$v" && python3 -m zipfile -e "$FB/flashinfer_python-$v-py3-none-any.whl" . \
      && cd flashinfer/data/csrc \
      && find . -mindepth 1 -maxdepth 1 -type d ! -name nv_internal -exec rm -rf {} + \
      && find . -maxdepth 1 -type f ! -name '*.h' ! -name '*.cuh' ! -name '*.hpp' -delete)
  done
  mkdir -p "$FB/tree/tvm" && (cd "$FB/tree/tvm" && python3 -m zipfile -e "$FB"/apache_tvm_ffi-0.1.15.post2-*.whl .)
  python3 "$HERE/hardlink_same.py" "$FB/tree"
  tar -C "$FB/tree" -cf - . | xz -T2 -6 > "$FB/fi-bundle.tar.xz"
fi
grep -qx '/.dev-48-\*/' "$ROOT/.git/info/exclude" 2>/dev/null || { mkdir -p "$ROOT/.git/info"; echo '/.dev-48-*/' >> "$ROOT/.git/info/exclude"; }
rm -rf "$ROOT"/.dev-48-*
parts=$(python3 -c "import json,sys; print(' '.join(p['name'] for p in json.load(open(sys.argv[1]))['parts']))" "$PB/out/MANIFEST.json")
i=0
for part in $parts; do mkdir -p "$ROOT/.dev-48-p$i"; cp "$PB/out/$part" "$ROOT/.dev-48-p$i/"; i=$((i + 1)); done
last=$((i - 1))
cp "$PB/out/MANIFEST.json" "$ROOT/.dev-48-p$last/"
mkdir -p "$ROOT/.dev-48-fi" && cp "$FB/fi-bundle.tar.xz" "$ROOT/.dev-48-fi/"
# The kit as this branch has it (the device tool sends ROOT's tree, which may be another branch), plus devrun/.
mkdir -p "$ROOT/.dev-48-kit/kit/devrun"
tar -C "$KIT" -c --exclude='fixtures/locks' --exclude='fixtures/sweep_samples' --exclude='__pycache__' \
  pcgkit lab cases fixtures benchmarks pyproject.toml conftest.py tox.ini | tar -C "$ROOT/.dev-48-kit/kit" -x
cp "$HERE"/call_*.sh "$HERE"/lib.sh "$ROOT/.dev-48-kit/kit/devrun/"
tree=$(cd "$ROOT" && git ls-files -co --exclude-standard -z | du --files0-from=- -cb 2>/dev/null | tail -1 | cut -f1)
size() { du -sb "$@" | awk '{s += $1} END {print s}'; }
echo "working tree sent with every call: $((tree / 1048576)) MiB"
status=0
check() {  # NAME PATH...
  local name=$1; shift
  local total=$((tree + $(size "$@")))
  local verdict=ok; [ "$total" -le "$LIMIT" ] || { verdict="OVER 64 MiB"; status=1; }
  echo "$name: carry [$*]: $((total / 1048576)) MiB with the tree ($verdict)"
}
for j in $(seq 0 $last); do
  if [ "$j" = "$last" ]; then check "call $((j + 1)) (parts)" "$ROOT/.dev-48-p$j" "$ROOT/.dev-48-kit"; else check "call $((j + 1)) (parts)" "$ROOT/.dev-48-p$j"; fi
done
check "call A" "$ROOT/.dev-48-fi" "$ROOT/.dev-48-kit"
check "calls B-D" "$ROOT/.dev-48-kit"
exit $status
