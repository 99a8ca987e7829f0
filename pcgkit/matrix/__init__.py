"""The version matrix: cells (sglang / flashinfer-python / torch / python) planned as data (plan.py, pure),
run through a backend (runner.py, backends/), stored per cell (outcome.py), locked (locks.py, torchbuild.py)
and bisected along one axis (bisect.py). Rendering lives in pcgkit.report.
"""
