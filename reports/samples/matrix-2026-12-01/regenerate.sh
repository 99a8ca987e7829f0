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
# `--cells ID... [-- WORK_DIR]` re-runs only those cells (cannot-run ones included: --retry-cannot-run) and
# puts them in place of the same cells of the committed compat.json and JUnit (`pcgkit report --over`); the
# other cells stay as measured, with their own dates. Cannot-run cells (fixtures/expectations.toml) are
# not errors: `pcgkit matrix` and `pcgkit report` exit 0 on them.
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
  shift; cells=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do cells+=(--cell "$1"); shift; done
  [ "${1:-}" = -- ] && shift
  work=${1:-reports/matrix-sample-work}
  start=$(date +%s)
  nice -n 10 bin/pcgkit matrix --reports "$work" --jobs "${JOBS:-2}" --retry-cannot-run "${cells[@]}"
  status=$?
  [ "$status" -le 3 ] || exit "$status"
  echo "matrix wall time: $(( $(date +%s) - start )) s (exit $status)"
  rm -f "$work/history.jsonl"   # the partial run is not a run of the sample: one run in its timelines
  bin/pcgkit report --reports "$work" --over "$here/compat.json" >/dev/null
  status=$?
  gzip -9n -c "$work/matrix-junit.xml" > "$here/matrix-junit.xml.gz"
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
