#!/usr/bin/env bash
# Issue 40, run HERE (the CPU machine) before the device session: build the payload once into a cache outside
# the repo, then lay out what each device call carries as ignored folders in the checkout the device tool sends
# (ROOT), and check each call's size against the 64 MiB limit.
#   benchmarks/device_real_shapes/stage.sh [ROOT]       ROOT: default this checkout's root
# Env: PB (payload cache, default /work/pcg40-cache/payload). Downloads (pip, apt-get) only when the cache lacks them.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
KIT="$(cd "$HERE/../.." && pwd)"                 # the checkout whose kit the device runs
ROOT="${1:-$KIT}"
PB="${PB:-/work/pcg40-cache/payload}"
LIMIT=$((62 * 1024 * 1024))                        # 64 MiB per call, 2 MiB kept in hand
cd "$KIT"
if [ ! -f "$PB/out/MANIFEST.json" ]; then           # SGLang 0.5.11 + 0.5.12 for torch 2.11.0+cu130, ~5 min, 162 MiB
  mkdir -p "$PB"
  bin/pcgkit lab payload build --out "$PB/out" --work "$PB" \
    --spec fixtures/e2e_payload_sglang-0.5.11.toml --spec fixtures/e2e_payload.toml
fi
mkdir -p "$PB/extra"
if ! ls "$PB"/extra/flashinfer_python-0.6.12-*.whl >/dev/null 2>&1; then  # the ops check's FlashInfer (first with torch.ops.flashinfer.fp4_quantize)
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_34_x86_64 --platform any -d "$PB/extra" flashinfer-python==0.6.12
fi
grep -qx '/.dev-40-\*/' "$ROOT/.git/info/exclude" 2>/dev/null || { mkdir -p "$ROOT/.git/info"; echo '/.dev-40-*/' >> "$ROOT/.git/info/exclude"; }
rm -rf "$ROOT"/.dev-40-*
parts=$(python3 -c "import json,sys; print(' '.join(p['name'] for p in json.load(open(sys.argv[1]))['parts']))" "$PB/out/MANIFEST.json")
i=0
for part in $parts; do mkdir -p "$ROOT/.dev-40-p$i"; cp "$PB/out/$part" "$ROOT/.dev-40-p$i/"; i=$((i + 1)); done
last=$((i - 1))
cp "$PB/out/MANIFEST.json" "$ROOT/.dev-40-p$last/"
# The kit as this branch has it (the device tool sends ROOT's tree, which may be another branch), plus devrun/.
mkdir -p "$ROOT/.dev-40-kit/kit/devrun"
tar -C "$KIT" -c --exclude='fixtures/locks' --exclude='fixtures/sweep_samples' --exclude='__pycache__' \
  pcgkit lab cases fixtures benchmarks pyproject.toml conftest.py tox.ini | tar -C "$ROOT/.dev-40-kit/kit" -x
cp "$HERE"/call*.sh "$HERE"/lib.sh "$ROOT/.dev-40-kit/kit/devrun/"
cp "$KIT/reports/samples/preflight-h200-2026-12-02/commands/launches.py" "$ROOT/.dev-40-kit/kit/devrun/"
cp "$PB"/extra/flashinfer_python-0.6.12-*.whl "$ROOT/.dev-40-kit/kit/devrun/"
# Sizes: the tree the tool sends (tracked + untracked-not-ignored) + what each call carries.
tree=$(cd "$ROOT" && git ls-files -co --exclude-standard -z | du --files0-from=- -cb 2>/dev/null | tail -1 | cut -f1)
kit=$(du -sb "$ROOT/.dev-40-kit" | cut -f1)
echo "working tree sent with every call: $((tree / 1048576)) MiB; kit carry (.dev-40-kit): $((kit / 1048576)) MiB"
status=0
for j in $(seq 0 $last); do
  size=$(du -sb "$ROOT/.dev-40-p$j" | cut -f1)
  total=$((tree + size))
  what=".dev-40-p$j"
  if [ "$j" = "$last" ]; then total=$((total + kit)); what="$what + .dev-40-kit"; fi
  verdict=ok; [ "$total" -le "$LIMIT" ] || { verdict="OVER 62 MiB"; status=1; }
  echo "call $((j + 1)): carry [$what]: $((total / 1048576)) MiB with the tree ($verdict)"
done
echo "later calls: carry [.dev-40-kit]: $(((tree + kit) / 1048576)) MiB"
exit $status
