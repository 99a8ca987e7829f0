"""Device call 4 (preflight on the H200): the kit's tiny checkpoints and the e2e case's launches for them.

Writes DIR/tiny-nvfp4 and DIR/tiny-bf16 with the kit's writer (pcgkit.e2e.checkpoint.write_checkpoint, weights
included, as the e2e recipe does), then the launch the e2e NVFP4 case makes on the gpu-as-sm120 target
(pcgkit.e2e.case.plan_for_checkpoint: this release's piecewise-on flags, the payload's server args, the hybrid's
--disable-cuda-graph) and its bf16 twin (the same call with the bf16 checkpoint). Prints them as JSON and writes
each launch's arguments after `-m sglang.launch_server`, one a line, to DIR/launch-<fmt>.txt.
Run in an installed site's environment: python3 launches.py DIR
"""

import json
import os
import sys
from pathlib import Path

from pcgkit.e2e.case import plan_for_checkpoint
from pcgkit.e2e.checkpoint import write_checkpoint
from pcgkit.e2e.hybrid import HYBRID_SM120
from pcgkit.sglang import facts

out = Path(sys.argv[1])
flags = facts.piecewise_flags()
record = {"sglang_flags_from": flags.sglang, "launches": {}}
for fmt in ("nvfp4", "bf16"):
    checkpoint = write_checkpoint(out / f"tiny-{fmt}", fmt=fmt)
    plan = plan_for_checkpoint(flags, python=sys.executable, fmt=fmt, model_path=str(checkpoint), port=30000,
                               env=os.environ, target_args=HYBRID_SM120.server_args)
    argv = list(plan.argv)
    launch = argv[argv.index("sglang.launch_server") + 1:]
    (out / f"launch-{fmt}.txt").write_text("\n".join(launch) + "\n")
    record["launches"][fmt] = {"argv": argv, "files": sorted(p.name for p in checkpoint.iterdir())}
print(json.dumps(record, indent=1))
