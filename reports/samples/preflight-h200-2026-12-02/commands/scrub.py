"""Copy what came back from the H200 into this sample with the machine's paths as stable names (committed data
stays diffable, as benchmarks/preflight_releases.py does for the CPU sample). Run here, not on the device:
    python3 commands/scrub.py SRC_FILE DST_FILE
"""

import re
import sys
from pathlib import Path

RULES = (
    (r"/work/main/\.dev-30-kit/fixed", "<kit>"),  # this branch's kit as carried (the device lays the tree at /work/main)
    (r"/work/main/\.dev-30-kit/before", "<kit-before-fix>"),  # main's kit at 73cc39f
    (r"/tmp/pcgkit-preflight-[A-Za-z0-9_]+", "<kit-link>"),  # preflight's one-link folder for the probe's PYTHONPATH
    (r"/tmp/site-(\d[\w.]*)", r"<site-\1>"),  # the installed payload for that SGLang release
    (r"/tmp/r30", "<run>"),
    (r"/tmp/p30", "<parts>"),
    (r"/opt/torch/\.venv/lib/python3\.12/site-packages", "<image-site-packages>"),
    (r"/opt/torch/\.venv/bin/python3", "<device-python3>"),
    (r"/usr/lib/python3\.12", "<stdlib>"),
    (r"/root/", "~/"),
)


WRAPPER = "/farm/"  # the device tool's own wrapper shell in `ps` output: not the project's, its arguments left out


def scrub(text: str) -> str:
    lines = [" ".join(line.split()[:7] + ["<the device tool's wrapper shell: arguments left out>"])
             if WRAPPER in line else line for line in text.splitlines(keepends=True)]
    text = "".join(line if line.endswith("\n") or line is lines[-1] else line + "\n" for line in lines)
    for pattern, name in RULES:
        text = re.sub(pattern, name, text)
    return text


if __name__ == "__main__":
    Path(sys.argv[2]).write_text(scrub(Path(sys.argv[1]).read_text(errors="replace")))
