#!/usr/bin/env bash
# Device call 8 (issue 40, only with >= 5 min of device time left): the hybrid e2e pair with the kit's own command:
# SGLang 0.5.11 (crashes in piecewise capture: mode 5) and 0.5.12 (the newest release this device's torch 2.11.0
# has a payload for) on the gpu-as-sm120 target. ~4 min.
source devrun/lib.sh
stamp call8-start
for v in 0.5.11 0.5.12; do
  timeout -s INT 260 python3 -m lab.e2e.devicerun cases --site "/tmp/site-$v" --out "$R/hybrid-$v" --timeout 240 \
    -- -k e2e_piecewise_launch --pcgkit-case-timeout=200 2>&1 | tail -15
done
after call8 hybrid-0.5.11 hybrid-0.5.12
