"""Does an interpreter hold what `pcgkit run --python ENV` needs? Run *as a file* by that
interpreter (`ENV preflight.py KIT_ROOT DIST...`), so it needs nothing there but the standard
library; prints one JSON line: {"python": ..., "missing": [...], "kit": bool}. Looks only at
package metadata and import specs: nothing heavy is imported, so it costs milliseconds.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import platform
import sys


def main(argv: list[str]) -> int:
    kit_root, names = argv[0], argv[1:]
    if kit_root:
        sys.path.insert(0, kit_root)  # the run starts pytest from the checkout, which puts it on sys.path too
    kit = importlib.util.find_spec("pcgkit") is not None
    missing = [name for name in names if next(iter(importlib.metadata.distributions(name=name)), None) is None]
    print(json.dumps({"python": platform.python_version(), "missing": missing, "kit": kit}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
