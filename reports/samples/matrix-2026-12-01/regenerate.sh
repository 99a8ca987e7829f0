#!/usr/bin/env bash
# Regenerate this sample: every cell of fixtures/matrix.toml (each SGLang release of the range installed
# as itself for its SGLang-level cases, the newest torch, the nonstrict_trace case), then the report,
# copied here. One command, from anywhere:  reports/samples/matrix-2026-12-01/regenerate.sh [WORK_DIR]
# WORK_DIR (default reports/matrix-sample-work, git-ignored) is relative to the checkout: the report names
# where it read each cell, and a relative path keeps temp paths out of the committed files.
# Heavy: ~45 uv environments (uv cache warm: ~20 s per FlashInfer-only cell, minutes per SGLang cell on
# 2 cores). Cells are resumed from WORK_DIR on a second call; error cells (expected: FlashInfer 0.4.x is
# uninstallable) make `pcgkit matrix` exit 3, which is part of the sample, not a failure of this script.
# `--report-only` runs no cell: it re-renders the report (compat.md, the dashboard, the certificate page)
# from the committed compat.json with this checkout's report code, in seconds; the verdicts stay as measured.
# `--cells ID...` runs only those cells (into WORK, default reports/matrix-sample-cells; cells already there are
# resumed), puts their results in place of the committed cells of the same id (a new id is added), and re-renders
# the report from that: how issue 34 re-measured the FlashInfer-only cells. The merged JUnit is left as it was.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cd "$root" || exit 1
if [ "${1:-}" = --report-only ]; then
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  cp "$here/compat.json" "$work/in.json"
  bin/pcgkit report --compat "$work/in.json" --reports "$work" >/dev/null
  status=$?
elif [ "${1:-}" = --cells ]; then
  shift
  work=${WORK:-reports/matrix-sample-cells}
  cells=(); for c in "$@"; do cells+=(--cell "$c"); done
  nice -n 10 bin/pcgkit matrix --reports "$work" --jobs 1 "${cells[@]}"
  status=$?
  [ "$status" -le 3 ] || exit "$status"
  cellwork=$work; work=$(mktemp -d); trap 'rm -rf "$work"' EXIT   # render apart from the cells' own history
  python3 - "$here/compat.json" "$cellwork/compat.json" "$work/in.json" "$@" <<'MERGE' || exit 1
import json, sys
committed, fresh, out, ids = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
data, new = json.load(open(committed)), {c["id"]: c for c in json.load(open(fresh))["cells"]}
missing = [i for i in ids if i not in new]
if missing:
    sys.exit(f"not in {fresh}: {', '.join(missing)}")
kept = [new[c["id"]] if c["id"] in ids else c for c in data["cells"]]
data["cells"] = kept + [new[i] for i in ids if i not in {c["id"] for c in kept}]
json.dump(data, open(out, "w"))
MERGE
  bin/pcgkit report --compat "$work/in.json" --reports "$work" >/dev/null
  status=$?
else
  work=${1:-reports/matrix-sample-work}
  start=$(date +%s)
  nice -n 10 bin/pcgkit matrix --reports "$work" --jobs "${JOBS:-2}"
  status=$?
  [ "$status" -le 3 ] || exit "$status"   # 0-3: a report exists (3 = error cells); anything else is a failure
  echo "matrix wall time: $(( $(date +%s) - start )) s (exit $status)"
  bin/pcgkit report --reports "$work" >/dev/null
  status=$?
  gzip -9n -c "$work/matrix-junit.xml" > "$here/matrix-junit.xml.gz"
fi
[ "$status" -le 3 ] || exit "$status"
for f in compat.md compat.json index.html certificate.html; do [ -e "$work/$f" ] && cp "$work/$f" "$here/$f"; done
for f in "$work"/compat-*.md; do [ -e "$f" ] && cp "$f" "$here/"; done   # a sidecar, when the report splits
rm -rf "$here/index.files" && cp -r "$work/index.files" "$here/"        # the dashboard's drill-down sidecars
wc -c "$here/compat.md"
