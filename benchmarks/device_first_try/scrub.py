"""Scrub what comes back from the device (issue 48) in place before committing: the machine's paths become stable
names (as reports/samples/cost-real-shapes-h200-2026-12-05/commands/scrub.py does), and the device tool's own
processes keep their first columns only. Run here, on the copied outputs:
    python3 benchmarks/device_first_try/scrub.py FILE...
"""

import re
import sys
from pathlib import Path

RULES = (
    (r"/tmp/pcgkit-preflight-[A-Za-z0-9_]+", "<kit-link>"),
    (r"/tmp/site-(\d[\w.]*)", r"<site-\1>"),  # the installed payload for that SGLang release
    (r"/tmp/fi48/(fi-[\w.]+|tvm)", r"<flashinfer-\1>"),  # the unpacked FlashInfer releases and tvm-ffi
    (r"/tmp/r48", "<run>"),  # the recipe's work folder (checkpoints, server logs, records)
    (r"/tmp/p48", "<parts>"),  # the payload parts
    (r"/tmp/(call[A-D]\.log)", r"<device-tmp>/\1"),
    (r"/opt/torch/\.venv/lib/python3\.12/site-packages", "<image-site-packages>"),
    (r"/opt/torch/\.venv/bin/python3", "<device-python3>"),
    (r"/usr/lib/python3\.12", "<stdlib>"),
    (r"/root/", "~/"),
)
TOOL = ("/farm/", "/process_api", "export OUT=")  # the device tool's processes in `ps` output: arguments left out


def scrub(text: str) -> str:
    lines = [" ".join(line.split()[:7] + ["<the device tool's process: arguments left out>"]) + "\n"
             if any(mark in line for mark in TOOL) else line for line in text.splitlines(keepends=True)]
    text = "".join(lines)
    for pattern, name in RULES:
        text = re.sub(pattern, name, text)
    return text


if __name__ == "__main__":
    for name in sys.argv[1:]:
        path = Path(name)
        path.write_text(scrub(path.read_text(errors="replace")))
