"""The kit's workshop: tools that rewrite the kit's own data or measure the kit (data refreshers, the GPU
payload, triage evaluation, benchmark helpers). Run from a checkout only (`bin/pcgkit lab CMD`, or
`.venv/bin/python -m lab CMD` from the checkout root); never shipped in the wheel, never imported by pcgkit.
"""
