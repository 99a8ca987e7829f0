"""Chokepoints and small helpers every stage uses: subprocesses, redaction, templating, patching."""
