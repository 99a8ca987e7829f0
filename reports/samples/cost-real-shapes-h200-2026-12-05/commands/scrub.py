"""Scrub what came back from the H200 (issue 40, 2026-12-05) in place: the machine's paths become stable names, as
reports/samples/preflight-h200-2026-12-02/commands/scrub.py does, and the device tool's own processes (its init and
wrapper shell: not the project's) keep their first columns only. Run here, once, on the copied outputs:
    python3 commands/scrub.py FILE...
"""

import re
import sys
from pathlib import Path

RULES = (
    (r"/tmp/pcgkit-preflight-[A-Za-z0-9_]+", "<kit-link>"),  # preflight's one-link folder for the probe's PYTHONPATH
    (r"/tmp/site-(\d[\w.]*)", r"<site-\1>"),  # the installed payload for that SGLang release
    (r"/tmp/r40", "<run>"),  # the recipe's work folder (checkpoints, server logs)
    (r"/tmp/p40", "<parts>"),  # the payload parts copied in calls 1-3
    (r"/tmp/(call\d\.log)", r"<device-tmp>/\1"),
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
