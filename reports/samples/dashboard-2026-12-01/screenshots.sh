#!/usr/bin/env bash
# Regenerates this folder's screenshots: the dashboard rendered by this checkout from the committed matrix
# sample (its compat.json, and its history.jsonl when it has one; nothing re-run), at 1366x900, grid and an opened drill-down.
# Usage: reports/samples/dashboard-2026-12-01/screenshots.sh [SAMPLE_DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; root="$(cd "$here/../../.." && pwd)"
sample="${1:-$root/reports/samples/matrix-2026-12-01}"
site="$(mktemp -d)"; trap 'rm -rf "$site"' EXIT
cp "$sample/compat.json" "$site/in.json"; [ ! -e "$sample/history.jsonl" ] || cp "$sample/history.jsonl" "$site/"
"$root/.venv/bin/pcgkit" report --compat "$site/in.json" --reports "$site" >/dev/null || true  # exit 3: reproduced cells
sed 's#</body>#<script>window.pcgkitOpen(0)</script></body>#' "$site/index.html" > "$site/drill.html"
for page in index drill; do
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1366,900 --virtual-time-budget=3000 \
    --screenshot="$here/dashboard-1366-$page.png" "file://$site/$page.html" 2>/dev/null
done
wc -c "$site/compat.md" "$site"/compat-cells.md 2>/dev/null | sed 's#/tmp/[^ ]*/##' > "$here/sizes.txt"
