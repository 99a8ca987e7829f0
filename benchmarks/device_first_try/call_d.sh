#!/usr/bin/env bash
# Device call D (issue 48, only with >= 5 min of device time left): the hybrid pair's newest side, SGLang 0.5.12,
# default and breakable. ~4 min.
source devrun/lib.sh
DEADLINE=$(( $(date +%s) + 530 ))  # the run call stops at 600 s: leave time for the results tarball
stamp callD-start
for t in default breakable; do
  left=$((DEADLINE - $(date +%s))); [ "$left" -gt 60 ] || { echo "first try $t: not run (call's time spent)"; continue; }
  timeout -s INT $((left < 250 ? left : 250)) python3 -m lab.e2e.firsttry run --site /tmp/site-0.5.12 --try "$t" --out "$R/firsttry-0.5.12" --ready-timeout 200 2>&1 | tail -4
done
python3 -m lab.e2e.firsttry table "$R/firsttry-0.5.12"
after callD firsttry-0.5.12
